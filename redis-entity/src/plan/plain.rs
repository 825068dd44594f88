//! Plain writes' straight-line calls, built from the update's operations or
//! the entity's row without a [`WritePlan`](super::write::WritePlan).
//!
//! Most writes save an entity or set or increment a few columns of a
//! `hash`-layout entity and need nothing else: no TTL, condition, expected
//! version, claim, request token or `#[hash]` map. Their call is the type's
//! straight-line function (script/fast.rs) with one operation code and
//! value per column. Building a whole plan first (the keys with the index
//! shadow, a value per index, the data commands) and then reading the call
//! out of it cost the client 8-15% of its own instructions per write
//! (benches/NOTES.md, *Plain writes without a plan*).
//! [`update_command`] and [`save_command`] build the same call straight
//! from what the caller gave; the tests check, write by write, that it is
//! the command the plan sends, so the two cannot drift apart.

use crate::keyspace::{self, EntityKeys};
use crate::plan::write::{column_index_value, pk_index_value, IndexValue};
use crate::schema::entity::{EntityDesc, IndexSource, Row};
use crate::schema::escape::Namespace;
use crate::schema::update_op::UpdateOp;
use crate::script::args::FastWrite;
use crate::script::{self, fast, write::WriteOp};
use smallvec::{smallvec, SmallVec};

/// The straight-line call of the update `ops` of the entity with `keys`
/// (built by [`EntityKeys::for_record`]: the call sends no index shadow)
/// in namespace `ns`, and the function it calls; `None` when the type has
/// no straight-line update or the update is more than its call carries (a
/// `#[hash]` map's operation, a column named twice): the plan's call then.
///
/// A `#[version]` field is incremented by 1 unless the update sets it, as
/// [`crate::plan::write::update`] does.
pub(crate) fn update_command(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    ops: &[UpdateOp],
) -> Option<(&'static script::Script, redis::Cmd)> {
    let space = keyspace::entity_space(desc, ns, &keys.member);
    let function = script::write::fast_script(desc, space.layout(), WriteOp::Update, false)?;
    let n = desc.columns.len();
    // The sent indexes' values: declared before the values they are read
    // from, which the call borrows alongside them (a SmallVec is invariant).
    let sent;
    let mut codes = smallvec![fast::OP_KEEP; n];
    let mut values: SmallVec<[Option<&[u8]>; 16]> = smallvec![None; n];
    for op in ops {
        let (col, code, value) = match op {
            UpdateOp::Set {
                col,
                value: Some(v),
            } => (*col, fast::OP_SET, Some(&v[..])),
            UpdateOp::Set { col, value: None } => (*col, fast::OP_DEL, None),
            UpdateOp::Incr { col, delta, float } => {
                let code = if *float {
                    fast::OP_INCR_FLOAT
                } else {
                    fast::OP_INCR
                };
                (*col, code, Some(&delta[..]))
            }
            UpdateOp::MapReplace { .. } | UpdateOp::MapSet { .. } | UpdateOp::MapDel { .. } => {
                return None
            }
        };
        if *codes.get(col)? != fast::OP_KEEP {
            return None;
        }
        codes[col] = code;
        values[col] = value;
    }
    if let Some(v) = desc.version.filter(|&v| codes[v] == fast::OP_KEEP) {
        codes[v] = fast::OP_INCR;
        values[v] = Some(b"1");
    }
    sent = sent_values(desc, keys, &codes, &values);
    Some((function, call(&space, function, keys, &sent, codes, values)))
}

/// Whether a save of `desc` can be plain: it has no `#[version]` (a save
/// checks the stored one) and no `#[hash]` map (its entries are replaced).
pub(crate) fn saves(desc: &EntityDesc) -> bool {
    desc.version.is_none() && desc.maps.is_empty()
}

/// The straight-line call of the save (`insert`: the insert) of `row`, the
/// entity with `keys` (as for [`update_command`]), in namespace `ns`;
/// `None` when the type has no straight-line save, or has a `#[version]`
/// (a save checks the stored one) or a `#[hash]` map: the plan's call then.
pub(crate) fn save_command(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    row: &Row,
    insert: bool,
) -> Option<(&'static script::Script, redis::Cmd)> {
    if !saves(desc) {
        return None;
    }
    let op = if insert {
        WriteOp::Insert
    } else {
        WriteOp::Save
    };
    let space = keyspace::entity_space(desc, ns, &keys.member);
    let function = script::write::fast_script(desc, space.layout(), op, false)?;
    // (Declared first, as in `update_command`.)
    let sent;
    let codes: SmallVec<[u8; 16]> = row
        .columns
        .iter()
        .map(|v| match v {
            Some(_) => fast::OP_SET,
            None => fast::OP_DEL,
        })
        .collect();
    let values: SmallVec<[Option<&[u8]>; 16]> = row.columns.iter().map(Option::as_deref).collect();
    sent = sent_values(desc, keys, &codes, &values);
    Some((function, call(&space, function, keys, &sent, codes, values)))
}

/// The values of the indexes a straight-line call sends (an indexed pk
/// field's, a sorted index's score), from the member and each column's code
/// and value.
fn sent_values(
    desc: &EntityDesc,
    keys: &EntityKeys,
    codes: &[u8],
    values: &[Option<&[u8]>],
) -> SmallVec<[IndexValue; 4]> {
    desc.indexes
        .iter()
        .filter(|idx| fast::sends_value(idx))
        .map(|idx| match idx.source {
            IndexSource::Pk => pk_index_value(desc, idx, &keys.member),
            IndexSource::Column(c) => match codes[c] {
                fast::OP_KEEP => IndexValue::Unchanged,
                fast::OP_INCR | fast::OP_INCR_FLOAT => IndexValue::Unknown,
                _ => column_index_value(idx, values[c]),
            },
        })
        .collect()
}

/// The call of `function` in `space`: the sent indexes' values, then one
/// code and value per column.
fn call<'a>(
    space: &'a Namespace,
    function: &'static script::Script,
    keys: &'a EntityKeys,
    sent: &'a [IndexValue],
    codes: SmallVec<[u8; 16]>,
    values: SmallVec<[Option<&'a [u8]>; 16]>,
) -> redis::Cmd {
    FastWrite {
        keys,
        namespace: space.as_str(),
        member: &keys.member,
        sent: sent.iter().map(|v| v.arg(false)).collect(),
        ops: codes,
        values,
        tail: Vec::new(),
    }
    .command(function)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::write;
    use crate::schema::escape::KeyLayout;
    use crate::schema::fixtures::*;

    fn set(col: usize, value: Option<&str>) -> UpdateOp {
        UpdateOp::Set {
            col,
            value: value.map(b),
        }
    }

    fn incr(col: usize, delta: &str, float: bool) -> UpdateOp {
        UpdateOp::Incr {
            col,
            delta: b(delta),
            float,
        }
    }

    /// The plain command of `ops`, and the command of the plan of the same
    /// update, packed as they are sent.
    fn both(
        desc: &'static EntityDesc,
        ns: &Namespace,
        member: &str,
        ops: Vec<UpdateOp>,
    ) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let keys = EntityKeys::for_record(desc, ns, member.to_owned());
        let plain = update_command(desc, ns, &keys, &ops).map(|(_, c)| c.get_packed_command());
        let full_keys = EntityKeys::new(desc, ns, member.to_owned());
        let plan = write::update(desc, ns, full_keys, ops, None, None);
        let planned = plan.fast_command().map(|(_, c)| c.get_packed_command());
        (plain, planned)
    }

    /// A plain call was built, and it is byte for byte the plan's (compared
    /// as text, so that a failure shows both commands).
    fn assert_same_call(plain: Option<Vec<u8>>, planned: Option<Vec<u8>>, what: &str) {
        assert!(plain.is_some(), "{what}: a plain call");
        let text = |c: Option<Vec<u8>>| c.map(|c| String::from_utf8_lossy(&c).into_owned());
        assert_eq!(text(plain), text(planned), "{what}");
    }

    #[test]
    fn the_plain_update_is_the_plans_update_for_every_kind_of_column_operation() {
        let cases: Vec<(&'static EntityDesc, &str, Vec<UpdateOp>)> = vec![
            // An equality index's column set; the version goes up by one.
            (&USER, "7", vec![set(COUNTRY, Some("fr"))]),
            // A sorted column set (its score sent), one removed, a unique set.
            (
                &USER,
                "7",
                vec![
                    set(RATING, Some("4.5")),
                    set(EMAIL, None),
                    set(USERNAME, Some("ann")),
                ],
            ),
            // A sorted column whose text is no number: no entry.
            (&USER, "7", vec![set(RATING, Some("high"))]),
            // Increments: of a sorted column (its score read after), of
            // the version itself (not bumped again), a float one.
            (&USER, "7", vec![incr(RATING, "2", false)]),
            (&USER, "7", vec![incr(VERSION, "5", false)]),
            (&USER, "7", vec![incr(RATING, "0.5", true)]),
            (
                &USER,
                "7",
                vec![set(VERSION, Some("9")), set(TAGS, Some("a,b"))],
            ),
            // An indexed pk field: its value sent, parsed from the member.
            (&ORDER, "acme_12", vec![set(0, Some("paid"))]),
            (&ACCOUNT, "3", vec![set(0, Some("a@x")), set(1, Some("de"))]),
            // No operation at all: the version alone.
            (&USER, "7", vec![]),
        ];
        for ns in [Namespace::none(), Namespace::tenant(1)] {
            for (desc, member, ops) in &cases {
                let (plain, planned) = both(desc, &ns, member, ops.clone());
                let what = format!("{} {ops:?} in {:?}", desc.type_name, ns.as_str());
                assert_same_call(plain, planned, &what);
            }
        }
    }

    #[test]
    fn a_sharded_type_s_plain_call_names_its_entity_s_shard() {
        let ns = Namespace::none().in_layout(KeyLayout::Cluster);
        for member in ["1", "2", "3", "40"] {
            let (plain, planned) = both(&USER, &ns, member, vec![set(COUNTRY, Some("fr"))]);
            assert!(plain.is_some());
            assert_eq!(plain, planned, "member {member}");
        }
    }

    /// The plain save (or insert) of `columns`, and the plan's command.
    fn both_saves(
        desc: &'static EntityDesc,
        ns: &Namespace,
        member: &str,
        columns: &[Option<&str>],
        insert: bool,
    ) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let row = row(columns, &[]);
        let keys = EntityKeys::for_record(desc, ns, member.to_owned());
        let plain =
            save_command(desc, ns, &keys, &row, insert).map(|(_, c)| c.get_packed_command());
        let full_keys = EntityKeys::new(desc, ns, member.to_owned());
        let plan = write::save(desc, ns, full_keys, row, insert, None);
        let planned = plan.fast_command().map(|(_, c)| c.get_packed_command());
        (plain, planned)
    }

    #[test]
    fn the_plain_save_is_the_plans_save() {
        let cases: [(&'static EntityDesc, &str, &[Option<&str>]); 6] = [
            // A sorted column (its score sent), an optional one absent.
            (&PLAYER, "5", &[Some("ann"), Some("12.5")]),
            (&PLAYER, "5", &[None, Some("3")]),
            // A score that is no number: no entry.
            (&PLAYER, "5", &[Some("bo"), Some("lots")]),
            // An indexed pk field, parsed back from the member.
            (&ORDER, "acme_12", &[Some("paid")]),
            (&ACCOUNT, "3", &[Some("a@x"), Some("de")]),
            (&ACCOUNT, "4", &[Some("b@x"), Some("fr")]),
        ];
        let spaces = [
            Namespace::none(),
            Namespace::tenant(1),
            Namespace::none().in_layout(KeyLayout::Cluster),
        ];
        for ns in &spaces {
            for (desc, member, columns) in cases {
                for insert in [false, true] {
                    let (plain, planned) = both_saves(desc, ns, member, columns, insert);
                    let what = format!("{} {columns:?} in {ns:?}", desc.type_name);
                    assert_same_call(plain, planned, &what);
                }
            }
        }
    }

    #[test]
    fn a_save_that_checks_a_version_or_writes_a_map_has_no_plain_call() {
        let ns = Namespace::none();
        let keys = EntityKeys::for_record(&USER, &ns, "7".to_owned());
        let user = row(
            &[Some("ann"), Some("fr"), Some("1"), None, Some("1"), None],
            &[&[]],
        );
        assert!(save_command(&USER, &ns, &keys, &user, false).is_none());
        let keys = EntityKeys::for_record(&SESSION, &ns, "s".to_owned());
        let session = row(&[Some("u"), None, Some("0"), Some("0")], &[]);
        assert!(save_command(&SESSION, &ns, &keys, &session, false).is_none());
    }

    #[test]
    fn an_update_the_straight_line_call_cannot_carry_has_no_plain_call() {
        let ns = Namespace::none();
        let keys = EntityKeys::for_record(&USER, &ns, "7".to_owned());
        // A map's operation, a column named twice.
        let map = UpdateOp::MapDel {
            map: 0,
            key: b("k"),
        };
        assert!(update_command(&USER, &ns, &keys, &[map]).is_none());
        let twice = [set(COUNTRY, Some("fr")), incr(COUNTRY, "1", false)];
        assert!(update_command(&USER, &ns, &keys, &twice).is_none());
        // A layout without a straight-line write.
        let keys = EntityKeys::for_record(&SESSION, &ns, "s".to_owned());
        assert!(update_command(&SESSION, &ns, &keys, &[set(0, Some("u"))]).is_none());
    }
}
