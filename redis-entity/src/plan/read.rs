//! Reading entities: the commands that read one entity and the decoding of
//! their replies into a [`Row`]. Pure: no I/O.

use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::schema::entity::{EntityDesc, Layout, Row};
use redis::Value;

/// The commands that read one entity; their replies go to [`decode_read`].
pub(crate) fn read(desc: &EntityDesc, keys: &EntityKeys, pipe: &mut redis::Pipeline) {
    read_as(desc, keys, pipe, Hash::Fields);
}

/// The commands that read one entity whole, for `verify`: as [`read`], but
/// a hash-layout entity's hash with `HGETALL`, every field of it, so that a
/// hash that holds no field its type reads is seen as stored (and its
/// entity as undecodable), not as gone. Their replies go to
/// [`decode_whole`].
pub(crate) fn read_whole(desc: &EntityDesc, keys: &EntityKeys, pipe: &mut redis::Pipeline) {
    read_as(desc, keys, pipe, Hash::Whole);
}

/// How a hash-layout entity's hash is read.
#[derive(Clone, Copy)]
enum Hash {
    /// The type's fields, by position (`HMGET`, [`read_hash`]).
    Fields,
    /// Every field, by name (`HGETALL`).
    Whole,
}

impl Hash {
    /// How `desc`'s hash is read when `self` is asked for: by its fields
    /// only where they alone say whether the entity exists
    /// (`keyspace::reads_by_fields`); the one place both the read and its
    /// decoding ask.
    fn of(self, desc: &EntityDesc) -> Hash {
        match self {
            Hash::Fields if crate::keyspace::reads_by_fields(desc) => Hash::Fields,
            _ => Hash::Whole,
        }
    }
}

fn read_as(desc: &EntityDesc, keys: &EntityKeys, pipe: &mut redis::Pipeline, hash: Hash) {
    match desc.layout {
        Layout::Hash => read_hash_as(desc, &keys.base, pipe, hash),
        Layout::Strings => {
            pipe.cmd("MGET").arg(&keys.base).arg(&keys.columns);
        }
        Layout::Json => {
            pipe.cmd("GET").arg(&keys.base);
        }
    }
    for m in &keys.maps {
        pipe.cmd("HGETALL").arg(m);
    }
}

/// The read of a hash-layout entity's hash at `key`, as [`read`] sends it
/// (its reply goes to [`decode_read`]): `HMGET` of the fields
/// `keyspace::hash_fields` names, taken back by position, where the type's
/// fields say whether the entity exists; else `HGETALL`. `HMGET`'s reply
/// holds the values without the names (half the strings for the client to
/// parse and for a script to convert), and no field the type does not read
/// (benches/NOTES.md, *Records read by their fields*).
pub(crate) fn read_hash(desc: &EntityDesc, key: &str, pipe: &mut redis::Pipeline) {
    read_hash_as(desc, key, pipe, Hash::Fields);
}

fn read_hash_as(desc: &EntityDesc, key: &str, pipe: &mut redis::Pipeline, hash: Hash) {
    match hash.of(desc) {
        Hash::Fields => {
            let cmd = pipe.cmd("HMGET").arg(key);
            for f in crate::keyspace::hash_fields(desc) {
                cmd.arg(f);
            }
        }
        Hash::Whole => {
            pipe.cmd("HGETALL").arg(key);
        }
    }
}

pub(crate) fn bytes(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::VerbatimString { text, .. } => Some(text.into_bytes()),
        _ => None,
    }
}

fn pairs(key: &str, v: Value) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let fields = field_pairs(key, v)?;
    // Reserved for every item being a string, as they are.
    let mut out = Vec::with_capacity(fields.size_hint().1.unwrap_or(0));
    out.extend(fields);
    Ok(out)
}

/// The fields of a hash reply (`HGETALL`: a flat array in RESP2, a map in
/// RESP3), taken one by one out of the reply; non-string items are skipped.
fn field_pairs(key: &str, v: Value) -> Result<FieldPairs> {
    match v {
        Value::Array(items) => Ok(FieldPairs::Flat(items.into_iter())),
        Value::Map(items) => Ok(FieldPairs::Map(items.into_iter())),
        Value::Nil => Ok(FieldPairs::Flat(Vec::new().into_iter())),
        Value::ServerError(e) => Err(Error::redis(key, e.into())),
        other => Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: format!("{other:?}"),
        }),
    }
}

/// See [`field_pairs`].
enum FieldPairs {
    Flat(std::vec::IntoIter<Value>),
    Map(std::vec::IntoIter<(Value, Value)>),
}

impl Iterator for FieldPairs {
    type Item = (Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (k, v) = match self {
                FieldPairs::Flat(it) => (it.next()?, it.next()?),
                FieldPairs::Map(it) => it.next()?,
            };
            if let (Some(k), Some(v)) = (bytes(k), bytes(v)) {
                return Some((k, v));
            }
        }
    }

    /// At most one field per pair of items (what `pairs` reserves).
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            FieldPairs::Flat(it) => (0, Some(it.len() / 2)),
            FieldPairs::Map(it) => (0, Some(it.len())),
        }
    }
}

/// A hash's fields as `HGETALL` answers them ([`read_whole`]), as the
/// columns of `desc`, in column order; `None` when the hash has no field
/// (it does not exist). Fields are usually in column
/// order, so the guess `i` is checked first; a field under a column's old
/// name (`alias`) is read when the current one is absent.
fn named_hash_columns(
    desc: &EntityDesc,
    fields: impl Iterator<Item = (Vec<u8>, Vec<u8>)>,
) -> Option<Vec<Option<Vec<u8>>>> {
    let mut columns = vec![None; desc.columns.len()];
    let mut seen = false;
    // Fields stored under a column's old name (`alias`): read when
    // the current name is absent.
    let mut aliased: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, (k, v)) in fields.enumerate() {
        seen = true;
        let hit = match desc.columns.get(i) {
            Some(c) if c.name.as_bytes() == k.as_slice() => Some(i),
            _ => desc
                .columns
                .iter()
                .position(|c| c.name.as_bytes() == k.as_slice()),
        };
        match hit {
            Some(c) => columns[c] = Some(v),
            None => aliased.extend(
                desc.columns
                    .iter()
                    .position(|c| c.alias.is_some_and(|a| a.as_bytes() == k.as_slice()))
                    .map(|c| (c, v)),
            ),
        }
    }
    for (c, v) in aliased {
        columns[c].get_or_insert(v);
    }
    seen.then_some(columns)
}

/// The columns of `desc` from the reply of [`read_hash`] (the values of
/// `keyspace::hash_fields`, by position); `None` when none of them is stored (the
/// hash does not exist, or holds no field the type reads). A column's old
/// name (`alias`) is read when the current one is absent, for the first
/// column that names it.
fn hash_columns(
    desc: &EntityDesc,
    key: &str,
    reply: Value,
) -> Result<Option<Vec<Option<Vec<u8>>>>> {
    let values = match reply {
        Value::Array(items) => items,
        Value::Nil => return Ok(None),
        Value::ServerError(e) => return Err(Error::redis(key, e.into())),
        other => {
            return Err(Error::UnexpectedReply {
                key: key.to_owned(),
                detail: format!("{other:?}"),
            })
        }
    };
    let n = desc.columns.len();
    let mut values = values.into_iter().map(bytes);
    let mut columns: Vec<Option<Vec<u8>>> = values.by_ref().take(n).collect();
    columns.resize(n, None);
    let mut seen = columns.iter().any(Option::is_some);
    for (c, column) in desc.columns.iter().enumerate() {
        let Some(alias) = column.alias else {
            continue;
        };
        let v = values.next().flatten();
        let first = !desc.columns[..c].iter().any(|o| o.alias == Some(alias));
        if let (Some(v), true) = (v, first) {
            seen = true;
            columns[c].get_or_insert(v);
        }
    }
    Ok(seen.then_some(columns))
}

/// Decodes the replies of [`read`] into a row; `None` when the entity does
/// not exist (for a hash-layout entity: its hash holds none of the fields
/// its type reads).
pub(crate) fn decode_read(
    desc: &EntityDesc,
    keys: &EntityKeys,
    replies: &mut impl Iterator<Item = Value>,
) -> Result<Option<Row>> {
    decode_as(desc, keys, replies, Hash::Fields)
}

/// Decodes the replies of [`read_whole`] into a row; `None` when the
/// entity does not exist.
pub(crate) fn decode_whole(
    desc: &EntityDesc,
    keys: &EntityKeys,
    replies: &mut impl Iterator<Item = Value>,
) -> Result<Option<Row>> {
    decode_as(desc, keys, replies, Hash::Whole)
}

fn decode_as(
    desc: &EntityDesc,
    keys: &EntityKeys,
    replies: &mut impl Iterator<Item = Value>,
    hash: Hash,
) -> Result<Option<Row>> {
    // Every reply of this entity is taken before any is decoded, so that an
    // error leaves the iterator at the next entity's replies.
    let first = replies.next().unwrap_or(Value::Nil);
    let maps: Vec<Value> = (0..desc.maps.len())
        .map(|_| replies.next().unwrap_or(Value::Nil))
        .collect();
    let mut map_replies = Vec::with_capacity(desc.maps.len());
    for (i, v) in maps.into_iter().enumerate() {
        map_replies.push(pairs(&keys.maps[i], v)?);
    }
    let columns = match desc.layout {
        Layout::Hash => {
            let columns = match hash.of(desc) {
                Hash::Fields => hash_columns(desc, &keys.base, first)?,
                Hash::Whole => named_hash_columns(desc, field_pairs(&keys.base, first)?),
            };
            match columns {
                Some(columns) => columns,
                None => return Ok(None),
            }
        }
        Layout::Strings => {
            let values = match first {
                Value::Array(items) => items,
                Value::ServerError(e) => return Err(Error::redis(&keys.base, e.into())),
                other => {
                    return Err(Error::UnexpectedReply {
                        key: keys.base.clone(),
                        detail: format!("{other:?}"),
                    })
                }
            };
            let mut values: Vec<Option<Vec<u8>>> = values.into_iter().map(bytes).collect();
            if values.iter().all(Option::is_none) {
                return Ok(None);
            }
            values.remove(0); // the presence marker
            values.resize(desc.columns.len(), None);
            values
        }
        Layout::Json => {
            let doc = match first {
                Value::Nil => return Ok(None),
                Value::ServerError(e) => return Err(Error::redis(&keys.base, e.into())),
                other => bytes(other).ok_or_else(|| Error::UnexpectedReply {
                    key: keys.base.clone(),
                    detail: "not a string".into(),
                })?,
            };
            crate::plan::json::json_columns(desc, &keys.base, &doc)?
        }
    };
    Ok(Some(Row {
        columns,
        maps: map_replies,
    }))
}

/// The entity of a stored row; an error names the field and the key that
/// holds it.
pub(crate) fn entity_from_row<E: crate::schema::entity::Entity>(
    pk: &E::Pk,
    keys: &EntityKeys,
    row: Row,
) -> Result<E> {
    E::from_row(pk, row).map_err(|e| Error::from_field(field_key(E::DESC, keys, e.field), e))
}

/// The key that holds `field`: its own key in the `strings` layout or for a
/// `#[hash]` field, the entity key otherwise.
fn field_key<'k>(desc: &EntityDesc, keys: &'k EntityKeys, field: &str) -> &'k str {
    if let Some(i) = desc.maps.iter().position(|m| m.name == field) {
        return &keys.maps[i];
    }
    if let Some(i) = desc.columns.iter().position(|c| c.name == field) {
        if let Some(k) = keys.columns.get(i) {
            return k;
        }
    }
    &keys.base
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::keys_of_member as keys;
    use crate::schema::fixtures::*;

    fn read_commands(desc: &EntityDesc, member: &str) -> Vec<Vec<String>> {
        let mut pipe = redis::pipe();
        read(desc, &keys(desc, member), &mut pipe);
        commands(&pipe)
    }

    fn decode(desc: &EntityDesc, member: &str, replies: Vec<Value>) -> Result<Option<Row>> {
        decode_read(desc, &keys(desc, member), &mut replies.into_iter())
    }

    fn flat(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| bulk(s)).collect())
    }

    #[test]
    fn read_commands_per_layout() {
        assert_eq!(
            read_commands(&USER, "9"),
            [
                vec![
                    "HMGET", "user:9", "username", "country", "rating", "email", "version", "tags"
                ],
                vec!["HGETALL", "user:9:prefs"]
            ]
        );
        assert_eq!(
            read_commands(&SESSION, "s1"),
            [vec![
                "MGET",
                "session:s1",
                "session:s1:user",
                "session:s1:code",
                "session:s1:hits",
                "session:s1:rev"
            ]]
        );
        assert_eq!(
            read_commands(&DOC, "d1"),
            [["GET", "doc:d1"], ["HGETALL", "doc:d1:notes"]]
        );
    }

    /// `verify` reads the hash whole, by name: a hash that holds only
    /// fields the type does not read is stored (its entity undecodable,
    /// which verify reports), not gone.
    #[test]
    fn a_whole_read_decodes_fields_by_name_in_any_order() {
        let mut pipe = redis::pipe();
        read_whole(&USER, &keys(&USER, "9"), &mut pipe);
        assert_eq!(
            commands(&pipe),
            [["HGETALL", "user:9"], ["HGETALL", "user:9:prefs"]]
        );
        let whole =
            |replies: Vec<Value>| decode_whole(&USER, &keys(&USER, "9"), &mut replies.into_iter());
        let row = whole(vec![
            flat(&[
                "country", "DE", "legacy", "x", "username", "ann", "tags", "a:b",
            ]),
            Value::Map(vec![(bulk("theme"), bulk("dark"))]),
        ]);
        assert_eq!(row.unwrap().expect("stored"), ann_in_de());
        let foreign = whole(vec![flat(&["legacy", "x"]), Value::Nil]).unwrap();
        assert_eq!(foreign.expect("stored").columns, vec![None; 6]);
        assert_eq!(whole(vec![Value::Map(vec![]), Value::Nil]).unwrap(), None);
    }

    /// User ann in DE with tags a and b and a dark theme, as the two
    /// decodings of a hash below read her.
    fn ann_in_de() -> Row {
        crate::schema::fixtures::row(
            &[Some("ann"), Some("DE"), None, None, None, Some("a:b")],
            &[&[("theme", "dark")]],
        )
    }

    /// An `HMGET` reply: the values in order, `None` for an absent field.
    fn values(items: &[Option<&str>]) -> Value {
        Value::Array(items.iter().map(|v| v.map_or(Value::Nil, bulk)).collect())
    }

    #[test]
    fn a_hash_decodes_its_fields_by_position() {
        let row = decode(
            &USER,
            "9",
            vec![
                values(&[Some("ann"), Some("DE"), None, None, None, Some("a:b")]),
                Value::Map(vec![(bulk("theme"), bulk("dark"))]),
            ],
        );
        assert_eq!(row.unwrap().expect("stored"), ann_in_de());
        // A short reply: the columns it lacks are absent.
        let row = decode(&USER, "9", vec![values(&[Some("ann")]), Value::Nil])
            .unwrap()
            .expect("stored");
        assert_eq!(row.columns[USERNAME], Some(b("ann")));
        assert!(row.columns[1..].iter().all(Option::is_none));
    }

    /// A type with a required column asks for its columns, then for the
    /// old names of its renamed columns: an old name is read where the
    /// current one is absent, for the first column that names it; a hash
    /// with none of those fields is no entity.
    #[test]
    fn a_hash_asks_for_the_old_names_of_renamed_columns() {
        assert_eq!(
            read_commands(&MEMO, "1"),
            [["HMGET", "memo:1", "text", "title", "subject", "name", "name"]]
        );
        let memo = |v: &[Option<&str>]| decode(&MEMO, "1", vec![values(v)]).unwrap();
        let renamed = memo(&[Some("t"), None, None, Some("old"), Some("old")]);
        assert_eq!(
            renamed.expect("stored").columns,
            [Some(b("t")), Some(b("old")), None]
        );
        let current = memo(&[Some("t"), Some("new"), None, Some("old"), Some("old")]);
        assert_eq!(current.expect("stored").columns[1], Some(b("new")));
        let only_old = memo(&[None, None, None, Some("old"), Some("old")]);
        assert_eq!(only_old.expect("stored").columns[1], Some(b("old")));
        assert_eq!(memo(&[None; 5]), None);
    }

    /// A type whose columns may all be absent is read whole: its hash may
    /// hold only the presence marker, or only a field a later definition
    /// dropped, and the entity exists either way (by name, as `HGETALL`
    /// answers; an old name read where the current one is absent).
    #[test]
    fn a_hash_whose_columns_may_all_be_absent_is_read_whole() {
        assert_eq!(read_commands(&NOTE, "1"), [["HGETALL", "note:1"]]);
        let note = |fields: &[&str]| decode(&NOTE, "1", vec![flat(fields)]).unwrap();
        assert_eq!(note(&["", ""]).expect("stored").columns, [None, None]);
        assert_eq!(
            note(&["dropped", "x"]).expect("stored").columns,
            [None, None]
        );
        assert_eq!(
            note(&["name", "old", "body", "b"]).expect("stored").columns,
            [Some(b("old")), Some(b("b"))]
        );
        assert_eq!(note(&[]), None);
    }

    #[test]
    fn strings_skip_the_marker_and_keep_column_order() {
        let row = decode(
            &SESSION,
            "s1",
            vec![Value::Array(vec![
                Value::Nil,
                bulk("ann"),
                Value::Nil,
                bulk("3"),
                bulk("1"),
            ])],
        )
        .unwrap()
        .expect("stored");
        assert_eq!(
            row.columns,
            [Some(b("ann")), None, Some(b("3")), Some(b("1"))]
        );
        assert!(row.maps.is_empty());

        // Only the marker: the entity exists with every column absent.
        let row = decode(
            &SESSION,
            "s1",
            vec![Value::Array(vec![
                bulk(""),
                Value::Nil,
                Value::Nil,
                Value::Nil,
                Value::Nil,
            ])],
        )
        .unwrap()
        .expect("the marker says it exists");
        assert_eq!(row.columns, [None, None, None, None]);
    }

    #[test]
    fn json_splits_the_document_into_columns() {
        let row = decode(
            &DOC,
            "d1",
            vec![bulk(r#"{"rank":2.5,"title":"Hi","extra":[1]}"#), Value::Nil],
        )
        .unwrap()
        .expect("stored");
        assert_eq!(row.columns, [Some(b("\"Hi\"")), Some(b("2.5"))]);
        assert_eq!(row.maps, [Vec::<(Vec<u8>, Vec<u8>)>::new()]);

        match decode(&DOC, "d1", vec![bulk("{not json"), Value::Nil]) {
            Err(Error::Decode { key, field, .. }) => {
                assert_eq!((&*key, field), ("doc:d1", "(document)"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_entity_is_none() {
        assert_eq!(
            decode(
                &USER,
                "9",
                vec![Value::Array(vec![Value::Nil; 6]), Value::Nil]
            )
            .unwrap(),
            None
        );
        assert_eq!(
            decode(&USER, "9", vec![Value::Array(vec![]), Value::Nil]).unwrap(),
            None
        );
        assert_eq!(
            decode(&SESSION, "s1", vec![Value::Array(vec![Value::Nil; 5])]).unwrap(),
            None
        );
        assert_eq!(
            decode(&DOC, "d1", vec![Value::Nil, Value::Nil]).unwrap(),
            None
        );
    }

    #[test]
    fn a_wrong_reply_is_a_typed_error_naming_the_key() {
        let wrongtype = || server_error("WRONGTYPE Operation against a key");
        match decode(&USER, "9", vec![wrongtype(), Value::Nil]) {
            Err(Error::WrongType { key, .. }) => assert_eq!(key, "user:9"),
            other => panic!("{other:?}"),
        }
        match decode(&USER, "9", vec![flat(&["ann"]), wrongtype()]) {
            Err(Error::WrongType { key, .. }) => assert_eq!(key, "user:9:prefs"),
            other => panic!("{other:?}"),
        }
        for reply in [Value::Int(1), Value::Map(vec![])] {
            match decode(&USER, "9", vec![reply, Value::Nil]) {
                Err(Error::UnexpectedReply { key, .. }) => assert_eq!(key, "user:9"),
                other => panic!("{other:?}"),
            }
        }
        match decode(&SESSION, "s1", vec![wrongtype()]) {
            Err(Error::WrongType { key, .. }) => assert_eq!(key, "session:s1"),
            other => panic!("{other:?}"),
        }
        match decode(&SESSION, "s1", vec![Value::Int(3)]) {
            Err(Error::UnexpectedReply { key, .. }) => assert_eq!(key, "session:s1"),
            other => panic!("{other:?}"),
        }
        match decode(&DOC, "d1", vec![wrongtype(), Value::Nil]) {
            Err(Error::WrongType { key, .. }) => assert_eq!(key, "doc:d1"),
            other => panic!("{other:?}"),
        }
        match decode(&DOC, "d1", vec![Value::Array(vec![]), Value::Nil]) {
            Err(Error::UnexpectedReply { key, .. }) => assert_eq!(key, "doc:d1"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decoding_consumes_exactly_one_entity_s_replies() {
        let mut replies = vec![flat(&["ann"]), Value::Nil, flat(&["bob"]), Value::Nil].into_iter();
        let k = keys(&USER, "1");
        let first = decode_read(&USER, &k, &mut replies).unwrap().unwrap();
        let second = decode_read(&USER, &k, &mut replies).unwrap().unwrap();
        assert_eq!(first.columns[USERNAME], Some(b("ann")));
        assert_eq!(second.columns[USERNAME], Some(b("bob")));
        assert!(replies.next().is_none());
    }
}

#[cfg(test)]
mod decoding_never_panics {
    use super::*;
    use crate::schema::fixtures::{ACCOUNT, DOC, MEMO, NOTE, SESSION, USER};
    use proptest::prelude::*;

    /// Replies of any shape a server (or a corrupt keyspace) could give.
    fn reply() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Nil),
            any::<i64>().prop_map(Value::Int),
            prop::collection::vec(any::<u8>(), 0..24).prop_map(Value::BulkString),
            "[a-z{}\":,0-9]{0,24}".prop_map(Value::SimpleString),
        ];
        leaf.prop_recursive(2, 16, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((inner.clone(), inner), 0..4).prop_map(Value::Map),
            ]
        })
    }

    proptest! {
        #[test]
        fn on_arbitrary_replies(replies in prop::collection::vec(reply(), 0..4)) {
            for desc in [&USER, &SESSION, &DOC, &ACCOUNT, &NOTE, &MEMO] {
                let keys = EntityKeys::new(desc, &crate::schema::escape::Namespace::none(), "1".into());
                let _ = decode_read(desc, &keys, &mut replies.clone().into_iter());
            }
        }

        #[test]
        fn on_arbitrary_json_documents(doc in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = crate::plan::json::json_columns(&DOC, "k", &doc);
        }
    }
}
