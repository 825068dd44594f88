//! Write plans: what one write of one entity sends, built without a server.
//!
//! A [`WritePlan`] names the operation, the entity's keys, the values the
//! write gives its indexed fields and the data commands, as typed fields.
//! [`WritePlan::call`] turns it into a call of the entity type's write script
//! for that operation (see [`crate::script::write`]); [`batch_call`] puts
//! many plans of one type and operation into one call. Sending is the
//! store's job.

use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::plan::json::json_document;
use crate::schema::condition::{self, Spec, Test};
use crate::schema::entity::{EntityDesc, IndexDesc, IndexKind, IndexSource, Layout, Row};
use crate::schema::escape::escape_bytes_into;
use crate::schema::escape::Namespace;
pub(crate) use crate::schema::update_op::UpdateOp;
use crate::script::args::{
    CommandArg, ConditionArg, EntityPart, FastWrite, IndexArg, Write, WriteCommand, WriteTtl,
};
use crate::script::{self, fast, write::WriteOp, Call, Words};
use redis::Value;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::time::Duration;

/// The value a write gives one indexed field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexValue {
    /// The script reads the stored value after the write (an increment).
    Unknown,
    /// The write does not touch the field: its entries stay as they are.
    Unchanged,
    /// Set to `None`: no index entry.
    Absent,
    /// The stored form (a sorted index: the score; an indexed pk field: its
    /// escaped value).
    Value(Vec<u8>),
}

/// One data command the script runs on one of the entity's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataCommand {
    /// `HSET`, `HDEL`, `SET` (value, own TTL ms or 0), `DEL`, `HREPLACE`
    /// (a whole map), `HINCRBY`, `HINCRBYFLOAT`, `INCRBY`, `INCRBYFLOAT`.
    pub name: &'static str,
    /// The key's position in [`EntityKeys::all`].
    pub key: usize,
    /// The command's arguments after the key.
    pub args: Vec<CommandArg>,
}

/// One operation of a straight-line write on a column of the entity hash:
/// its field, its `fast::OP_*` code, its value or delta.
type ColumnOp<'a> = (&'a [u8], u8, Option<&'a [u8]>);

/// A straight-line call's data: the `fast::OP_*` code and the value of each
/// column, and the maps' commands.
type ColumnCalls<'a> = (
    SmallVec<[u8; 16]>,
    SmallVec<[Option<&'a [u8]>; 16]>,
    Vec<WriteCommand<'a>>,
);

/// A call's keys and arguments, encoded.
type KeysAndArgs = (Words, Words);

/// One write of one entity.
#[derive(Debug, Clone)]
pub(crate) struct WritePlan {
    /// What the write does.
    pub op: WriteOp,
    /// The entity type.
    pub desc: &'static EntityDesc,
    /// The namespace prefix of every key.
    pub ns: Namespace,
    /// The entity's keys.
    pub keys: EntityKeys,
    /// A TTL to give every key (`None`: keep the remaining one).
    pub ttl: Option<Duration>,
    /// Remove the entity's TTL instead (`ttl` is then `None`).
    pub remove_ttl: bool,
    /// Compare-and-set: the document the caller read.
    pub cas: Option<Vec<u8>>,
    /// The `#[version]` the write expects to find stored.
    pub version_expected: Option<String>,
    /// What the write requires of the stored values (`hash` and `strings`
    /// layouts; the `json` layout's are checked on the document read for
    /// the compare-and-set).
    pub conditions: Vec<Spec>,
    /// Per index of the type: the value this write gives the field.
    pub index_values: Vec<IndexValue>,
    /// The data commands, in order.
    pub commands: Vec<DataCommand>,
    /// Clean: the (index, escaped value) entries a reader found stale.
    pub stale: Vec<(usize, Vec<u8>)>,
    /// The request token that makes a retry of this write return the first
    /// attempt's outcome instead of applying it again.
    pub token: Option<String>,
    /// Refuse the write, with nothing written, if it would change a unique
    /// value (the client has not claimed the new one: `store::unique`).
    pub keep_unique: bool,
}

fn ms(d: Duration) -> u64 {
    // At least 1 (0 would mean none); at most 10^15 ms (31,000 years), which
    // a Lua number carries exactly and Redis takes; never wrapped around.
    const LONGEST_MS: u64 = 1_000_000_000_000_000;
    u64::try_from(d.as_millis())
        .unwrap_or(u64::MAX)
        .clamp(1, LONGEST_MS)
}

impl WritePlan {
    /// A plan that changes nothing yet: indexed pk fields carry their fixed
    /// value, every other indexed field is unknown.
    fn new(op: WriteOp, desc: &'static EntityDesc, ns: &Namespace, keys: EntityKeys) -> Self {
        let index_values = desc
            .indexes
            .iter()
            .map(|i| match i.source {
                IndexSource::Pk => pk_index_value(desc, i, &keys.member),
                IndexSource::Column(_) => IndexValue::Unknown,
            })
            .collect();
        WritePlan {
            op,
            desc,
            // A sharded type writes within its entity's shard.
            ns: crate::keyspace::entity_space(desc, ns, &keys.member),
            keys,
            ttl: None,
            remove_ttl: false,
            cas: None,
            version_expected: None,
            conditions: Vec::new(),
            index_values,
            commands: Vec::new(),
            stale: Vec::new(),
            token: None,
            keep_unique: false,
        }
    }

    fn command(&mut self, name: &'static str, key: usize, args: Vec<CommandArg>) {
        self.commands.push(DataCommand { name, key, args });
    }

    fn column_key(&self, col: usize) -> usize {
        1 + col
    }

    fn map_key(&self, map: usize) -> usize {
        1 + self.keys.columns.len() + map
    }

    /// Records the value a write gives column `col` for its indexes.
    fn index_column(&mut self, col: usize, value: &Option<Vec<u8>>) {
        for (i, idx) in self.desc.indexes.iter().enumerate() {
            if idx.column() != Some(col) {
                continue;
            }
            self.index_values[i] = column_index_value(idx, value.as_deref());
        }
    }

    fn set_column(&mut self, col: usize, value: Option<Vec<u8>>) {
        self.index_column(col, &value);
        let c = &self.desc.columns[col];
        let name = Cow::Borrowed(c.name.as_bytes());
        match (self.desc.layout, value) {
            (Layout::Strings, Some(v)) => {
                let own_ttl_ms = (c.ttl.unwrap_or(0) * 1000).to_string().into_bytes();
                let args = vec![v.into(), own_ttl_ms.into()];
                self.command("SET", self.column_key(col), args)
            }
            (Layout::Strings, None) => self.command("DEL", self.column_key(col), vec![]),
            (_, Some(v)) => self.command("HSET", 0, vec![name, v.into()]),
            (_, None) => self.command("HDEL", 0, vec![name]),
        }
    }

    fn replace_map(&mut self, map: usize, entries: &[(Vec<u8>, Vec<u8>)]) {
        let args = entries
            .iter()
            .flat_map(|(k, v)| [k.clone().into(), v.clone().into()])
            .collect();
        self.command("HREPLACE", self.map_key(map), args);
    }

    fn map_op(&mut self, op: &UpdateOp) {
        match op {
            UpdateOp::MapReplace { map, entries } => self.replace_map(*map, entries),
            UpdateOp::MapSet { map, key, value } => {
                let args = vec![key.clone().into(), value.clone().into()];
                self.command("HSET", self.map_key(*map), args)
            }
            UpdateOp::MapDel { map, key } => {
                self.command("HDEL", self.map_key(*map), vec![key.clone().into()])
            }
            UpdateOp::Set { .. } | UpdateOp::Incr { .. } => {}
        }
    }

    /// The write function's arguments for this plan.
    fn write_args(&self) -> Write<'_> {
        Write {
            keys: &self.keys,
            token: self.token.as_deref().unwrap_or_default(),
            namespace: self.ns.as_str(),
            member: &self.keys.member,
            ttl: match self.ttl {
                Some(t) => WriteTtl::Set(ms(t)),
                None if self.remove_ttl => WriteTtl::Remove,
                None => WriteTtl::Keep,
            },
            cas: self.cas.as_deref().unwrap_or_default(),
            version_expected: self.version_expected.as_deref().unwrap_or_default(),
            conditions: self.condition_args(),
            index_values: self.index_args(),
            commands: self
                .commands
                .iter()
                .map(|c| WriteCommand {
                    name: c.name,
                    key: c.key,
                    args: &c.args,
                })
                .collect(),
            stale: &self.stale,
        }
    }

    /// Where each condition's value is stored: the entity hash's field, or
    /// the column's own key.
    fn condition_args(&self) -> Vec<ConditionArg<'_>> {
        let strings = self.desc.layout == Layout::Strings;
        self.conditions
            .iter()
            .map(|c| {
                let (key, field) = if strings {
                    (self.column_key(c.col), "")
                } else {
                    (0, self.desc.columns[c.col].name)
                };
                let (test, operand, delta) = match &c.test {
                    Test::Is(v) => ("eq", v.as_deref(), None),
                    Test::IsNot(v) => ("ne", v.as_deref(), None),
                    Test::Compare { cmp, bound, delta } => {
                        (cmp.code(), Some(&bound[..]), delta.as_deref())
                    }
                };
                ConditionArg {
                    key,
                    field,
                    test,
                    operand,
                    delta,
                }
            })
            .collect()
    }

    /// Per index, the value this write gives it; a unique value the client
    /// holds no claim on yet is marked to be kept (`keep_unique`).
    fn index_args(&self) -> Vec<IndexArg<'_>> {
        (0..self.index_values.len())
            .map(|i| self.index_arg(i))
            .collect()
    }

    /// What the call says of index `i`'s value.
    fn index_arg(&self, i: usize) -> IndexArg<'_> {
        let idx = &self.desc.indexes[i];
        let keep_unique =
            self.keep_unique && idx.kind == IndexKind::Unique && idx.source != IndexSource::Pk;
        self.index_values[i].arg(keep_unique)
    }

    /// The script's arguments (see `script/lua/write_prelude.lua`).
    #[cfg(test)]
    pub(crate) fn args(&self) -> Words {
        self.write_args().args()
    }

    /// The plan's keys and arguments as one operation of a unit of work
    /// takes them (those of the type's write function for one entity).
    pub(crate) fn unit_parts(&self) -> KeysAndArgs {
        let w = self.write_args();
        let mut args = Words::new();
        w.push_args(&mut args);
        (w.key_args(), args)
    }

    /// The plan's keys and arguments as a unit of work's straight-line
    /// operation takes them (script/fast.rs `fast_unit`), if the type and
    /// the plan have one (as for [`Self::call`]).
    pub(crate) fn unit_fast_parts(&self) -> Option<KeysAndArgs> {
        let (_, w) = self.fast_write(false)?;
        Some(w.parts())
    }

    /// The call of the type's write script for this plan: its straight-line
    /// function when the plan needs nothing else (script/fast.rs).
    pub(crate) fn call(&self) -> Call<'static> {
        if let Some((f, w)) = self.fast_write(false) {
            return w.call(f);
        }
        self.general_call()
    }

    /// The call of the type's general write function for this plan.
    pub(crate) fn general_call(&self) -> Call<'static> {
        let function = script::write::script(self.desc, self.ns.layout(), self.op, false);
        self.write_args().call(function)
    }

    /// The type's straight-line function and its call for this plan as the
    /// command it sends, built in one pass ([`FastWrite::command`]), if the
    /// plan has one (as for [`Self::call`]; else [`Self::general_call`]).
    pub(crate) fn fast_command(&self) -> Option<(&'static script::Script, redis::Cmd)> {
        let (f, w) = self.fast_write(false)?;
        Some((f, w.command(f)))
    }

    /// The type's straight-line function and its call for this plan, if
    /// the plan needs no request token, TTL, compare-and-set, expected
    /// version, condition, claim or stale entry, and sets, removes or
    /// increments each column of the entity hash at most once.
    fn fast_write(&self, batch: bool) -> Option<(&'static script::Script, FastWrite<'_>)> {
        let function = script::write::fast_script(self.desc, self.ns.layout(), self.op, batch)?;
        Some((function, self.fast_args()?))
    }

    /// The straight-line call's arguments for this plan (see
    /// [`Self::fast_write`]), for a type and operation that have the
    /// function.
    fn fast_args(&self) -> Option<FastWrite<'_>> {
        let plain = self.token.is_none()
            && self.ttl.is_none()
            && !self.remove_ttl
            && self.cas.is_none()
            && self.version_expected.is_none()
            && self.conditions.is_empty()
            && self.stale.is_empty()
            && !self.keep_unique;
        if !plain {
            return None;
        }
        let (ops, values, tail) = self.column_ops()?;
        // The function takes an unsent index's value from its column's
        // operation: it must be the value the plan gives it.
        let mut sent = SmallVec::new();
        for (i, (idx, value)) in self.desc.indexes.iter().zip(&self.index_values).enumerate() {
            if fast::sends_value(idx) {
                sent.push(self.index_arg(i));
                continue;
            }
            let j = idx.column()?;
            let agrees = match (value, ops[j]) {
                (IndexValue::Unchanged, fast::OP_KEEP) | (IndexValue::Absent, fast::OP_DEL) => true,
                (IndexValue::Value(v), fast::OP_SET) => values[j] == Some(&v[..]),
                (IndexValue::Unknown, fast::OP_INCR | fast::OP_INCR_FLOAT) => true,
                _ => false,
            };
            if !agrees {
                return None;
            }
        }
        Some(FastWrite {
            keys: &self.keys,
            namespace: self.ns.as_str(),
            member: &self.keys.member,
            sent,
            ops,
            values,
            tail,
        })
    }

    /// The plan's data commands as the straight-line call takes them: one
    /// `fast::OP_*` code and value per column of the entity hash, and the
    /// maps' commands; `None` if a command is of another kind or a column
    /// is named twice.
    fn column_ops(&self) -> Option<ColumnCalls<'_>> {
        let columns = self.desc.columns;
        let mut ops = smallvec::smallvec![fast::OP_KEEP; columns.len()];
        let mut values: SmallVec<[Option<&[u8]>; 16]> = smallvec::smallvec![None; columns.len()];
        let mut tail = Vec::new();
        // A save names the columns in their order: each search starts
        // where the last one matched.
        let mut from = 0;
        let mut place = |op| place_column(columns, &mut ops, &mut values, &mut from, op);
        for c in &self.commands {
            if c.key != 0 {
                tail.push(WriteCommand {
                    name: c.name,
                    key: c.key,
                    args: &c.args,
                });
                continue;
            }
            let placed = match (c.name, &c.args[..]) {
                ("HSET", pairs) if pairs.len() % 2 == 0 => pairs
                    .chunks(2)
                    .all(|p| place((&p[0][..], fast::OP_SET, Some(&p[1][..])))),
                ("HDEL", names) => names.iter().all(|n| place((&n[..], fast::OP_DEL, None))),
                ("HINCRBY", [name, delta]) => place((name, fast::OP_INCR, Some(delta))),
                ("HINCRBYFLOAT", [name, delta]) => place((name, fast::OP_INCR_FLOAT, Some(delta))),
                _ => false,
            };
            if !placed {
                return None;
            }
        }
        Some((ops, values, tail))
    }

    /// The entity key, for error messages.
    pub(crate) fn key(&self) -> &str {
        &self.keys.base
    }

    /// Turns the script's reply into the call's outcome: `Ok(true)` when the
    /// entity was created (save / insert) or existed (delete).
    pub(crate) fn outcome(&self, reply: Value) -> Result<bool> {
        outcome(reply, self.key(), |e| self.server_error(e))
    }

    /// Maps an error reply of the script to the typed error.
    pub(crate) fn server_error(&self, e: redis::RedisError) -> Error {
        let key = self.key().to_owned();
        match e.code() {
            Some("ENTITY_EXISTS") => Error::AlreadyExists { key },
            Some("ENTITY_NOT_FOUND") => Error::NotFound { key },
            Some("VERSION_CONFLICT") => Error::VersionConflict {
                key,
                expected: self.version_expected.clone().unwrap_or_default(),
                found: e.detail().unwrap_or_default().trim().to_owned(),
            },
            // (A key the write would touch holds another type: nothing was
            // written, and `Error::redis` names that key.)
            // A field to increment holds something else than a number:
            // nothing was written. Detail: `<key position> <field> <value>`.
            // A condition did not hold: nothing was written. Detail: the
            // condition's number, then `=` and the stored value, or `-`.
            Some("CONDITION_FAILED") => {
                let detail = e.detail().unwrap_or_default();
                let (which, found) = detail.split_once(' ').unwrap_or((detail, "-"));
                let found = found.strip_prefix('=').map(str::as_bytes);
                match which
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| self.conditions.get(i))
                {
                    Some(spec) => condition::failed(&key, spec, found),
                    None => Error::redis(&key, e),
                }
            }
            Some("NOT_A_NUMBER") => self
                .not_a_number(e.detail().unwrap_or_default())
                .unwrap_or_else(|| Error::redis(&key, e)),
            Some("UNIQUE_VIOLATION") => {
                let which = e.detail().and_then(|d| d.trim().parse::<usize>().ok());
                match which.and_then(|i| Some((self.desc.indexes.get(i)?, &self.index_values[i]))) {
                    Some((idx, value)) => Error::UniqueViolation {
                        field: idx.field,
                        value: match value {
                            IndexValue::Value(v) => crate::error::shown(v),
                            _ => String::new(),
                        },
                    },
                    None => Error::redis(&key, e),
                }
            }
            _ => Error::redis(&key, e),
        }
    }

    /// The typed error of an increment refused because the stored value is
    /// not a number: the real key, the field, the value.
    fn not_a_number(&self, detail: &str) -> Option<Error> {
        let mut parts = detail.splitn(3, ' ');
        let position: usize = parts.next()?.parse().ok()?;
        let (field, value) = (parts.next()?, parts.next().unwrap_or_default());
        let key = self.keys.all().nth(position.checked_sub(1)?)?.clone();
        // A hash field names its column; a strings-layout column key is the
        // column (positions 2.. after the entity key).
        let column = match field {
            "" => self.desc.columns.get(position.checked_sub(2)?)?,
            name => self.desc.columns.iter().find(|c| c.name == name)?,
        };
        Some(Error::Decode {
            key,
            field: column.name,
            value: crate::error::shown(value.as_bytes()),
            reason: "not a number, so it cannot be incremented (nothing was written)".into(),
        })
    }

    /// True for the compare-and-set reply that asks the caller to read again.
    pub(crate) fn is_cas_retry(e: &redis::RedisError) -> bool {
        e.code() == Some("ENTITY_CHANGED")
    }
}

impl IndexValue {
    /// What a call says of this value; `keep_unique`: a unique value the
    /// client holds no claim on (refused if the stored one would change).
    pub(crate) fn arg(&self, keep_unique: bool) -> IndexArg<'_> {
        match self {
            IndexValue::Unknown => IndexArg::Unknown,
            IndexValue::Unchanged => IndexArg::Unchanged,
            IndexValue::Absent => IndexArg::Absent { keep_unique },
            IndexValue::Value(stored) => IndexArg::Value {
                stored,
                keep_unique,
            },
        }
    }
}

/// The value of index `idx` (of an indexed pk field) for the entity with
/// `member`: the field's escaped value, parsed back from the member.
pub(crate) fn pk_index_value(desc: &EntityDesc, idx: &IndexDesc, member: &str) -> IndexValue {
    match (desc.pk_index_value)(member, idx.field) {
        Some(raw) => {
            let mut v = Vec::new();
            escape_bytes_into(&mut v, &raw);
            IndexValue::Value(v)
        }
        None => IndexValue::Absent,
    }
}

/// The value a write that sets its column to `value` (encoded; `None`
/// removes it) gives index `idx`.
pub(crate) fn column_index_value(idx: &IndexDesc, value: Option<&[u8]>) -> IndexValue {
    match (value, idx.score) {
        (None, _) => IndexValue::Absent,
        // A sorted index is given the score, not the stored text (a
        // timestamp is stored as text and scored in milliseconds).
        (Some(v), Some(score)) => match score(v) {
            Some(s) => IndexValue::Value(crate::schema::codec::score_text(s).into_bytes()),
            None => IndexValue::Absent,
        },
        (Some(v), None) => IndexValue::Value(v.to_vec()),
    }
}

/// A single write's reply as its outcome: `Ok(true)` when the entity was
/// created (save / insert) or existed (delete); an error reply mapped by
/// `refused` (the write's typed errors), anything else unexpected at `key`.
pub(crate) fn outcome(
    reply: Value,
    key: &str,
    refused: impl FnOnce(redis::RedisError) -> Error,
) -> Result<bool> {
    match reply {
        Value::Int(n) => Ok(n == 1),
        // A delete or sweep that left other sides to the client
        // (`store::across`): its number first.
        Value::Array(items) if matches!(items.first(), Some(Value::Int(_))) => {
            Ok(matches!(items.first(), Some(Value::Int(1))))
        }
        Value::ServerError(e) => Err(refused(e.into())),
        other => Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: format!("{other:?}"),
        }),
    }
}

/// One call writing every plan (all of one entity type and operation) with
/// a result per plan, in order.
pub(crate) fn batch_call(plans: &[WritePlan]) -> Call<'static> {
    let first = &plans[0];
    for p in plans {
        debug_assert!(std::ptr::eq(p.desc, first.desc) && p.op == first.op);
    }
    // The straight-line function when every plan can take it (looked up
    // once: the plans share their type and operation).
    let fast =
        script::write::fast_script(first.desc, first.ns.layout(), first.op, true).and_then(|f| {
            Some((
                f,
                plans
                    .iter()
                    .map(WritePlan::fast_args)
                    .collect::<Option<Vec<_>>>()?,
            ))
        });
    if let Some((function, fast)) = fast {
        return script::args::write_batch(function, fast.iter());
    }
    let function = script::write::script(first.desc, first.ns.layout(), first.op, true);
    script::args::write_batch(function, plans.iter().map(|p| p.write_args()))
}

/// Refuses a row whose sorted index value has no score (NaN), before anything
/// is sent: Redis would reject it half-way through the write.
pub(crate) fn check_scores(desc: &EntityDesc, row: &Row) -> Result<()> {
    for idx in desc.indexes {
        if let (Some(score), Some(c)) = (idx.score, idx.column()) {
            if let Some(raw) = &row.columns[c] {
                if score(raw).is_none_or(f64::is_nan) {
                    return Err(Error::Encode {
                        field: idx.field,
                        reason: "a sorted index needs a number, and NaN is none".into(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Refuses `set` of a NaN on a sorted field (see [`check_scores`]).
pub(crate) fn check_update_scores(desc: &EntityDesc, ops: &[UpdateOp]) -> Result<()> {
    for op in ops {
        if let UpdateOp::Set {
            col,
            value: Some(raw),
        } = op
        {
            for idx in desc.indexes.iter().filter(|i| i.column() == Some(*col)) {
                if let Some(score) = idx.score {
                    if score(raw).is_none_or(f64::is_nan) {
                        return Err(Error::Encode {
                            field: idx.field,
                            reason: "a sorted index needs a number, and NaN is none".into(),
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// Plans a save (`insert`: create only) of one entity. With a `#[version]`
/// field, the write expects the stored version to be the entity's and
/// stores the next.
pub(crate) fn save(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: EntityKeys,
    mut row: Row,
    insert: bool,
    ttl: Option<Duration>,
) -> WritePlan {
    let op = if insert {
        WriteOp::Insert
    } else {
        WriteOp::Save
    };
    let mut p = WritePlan::new(op, desc, ns, keys);
    p.ttl = ttl;
    if let Some((c, raw)) = desc
        .version
        .and_then(|c| Some((c, row.columns[c].as_deref()?)))
    {
        let current: i128 = std::str::from_utf8(raw)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        p.version_expected = Some(current.to_string());
        row.columns[c] = Some(current.saturating_add(1).to_string().into_bytes());
    }
    write_row(p, desc, row)
}

/// Plans the copy of one entity's stored form into another keyspace (a
/// relayout): a save of `row` as it is, its `#[version]` included and
/// unchecked, since the source's version is the truth being copied.
pub(crate) fn copy(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: EntityKeys,
    row: Row,
    ttl: Option<Duration>,
) -> WritePlan {
    let mut p = WritePlan::new(WriteOp::Save, desc, ns, keys);
    p.ttl = ttl;
    write_row(p, desc, row)
}

/// The data commands of a save of `row` (columns set or removed, maps
/// replaced), with the index moves they imply.
/// (The row is taken: its values move into the commands.)
fn write_row(mut p: WritePlan, desc: &'static EntityDesc, row: Row) -> WritePlan {
    match desc.layout {
        Layout::Hash => {
            let mut set = Vec::with_capacity(2 * desc.columns.len());
            let mut del = Vec::new();
            for (i, (c, v)) in desc.columns.iter().zip(row.columns).enumerate() {
                p.index_column(i, &v);
                match v {
                    Some(v) => {
                        set.push(Cow::Borrowed(c.name.as_bytes()));
                        set.push(Cow::Owned(v));
                    }
                    None => del.push(Cow::Borrowed(c.name.as_bytes())),
                }
            }
            if !set.is_empty() {
                p.command("HSET", 0, set);
            }
            if !del.is_empty() {
                p.command("HDEL", 0, del);
            }
        }
        Layout::Strings => {
            for (i, v) in row.columns.into_iter().enumerate() {
                p.set_column(i, v);
            }
        }
        Layout::Json => {
            for (i, v) in row.columns.iter().enumerate() {
                p.index_column(i, v);
            }
            let doc = json_document(desc, &row);
            p.command("SET", 0, vec![doc.into(), Cow::Borrowed(b"0")]);
        }
    }
    for (i, entries) in row.maps.iter().enumerate() {
        p.replace_map(i, entries);
    }
    p
}

/// Plans the removal of index entries a reader found stale: each
/// (index, escaped value) entry is removed only if the stored entity does
/// not need it, in the same atomic step that reads the stored value.
pub(crate) fn clean(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: EntityKeys,
    entries: &[(usize, Vec<u8>)],
) -> WritePlan {
    let mut p = WritePlan::new(WriteOp::Clean, desc, ns, keys);
    p.stale = entries.to_vec();
    p
}

/// Plans an operation on the entity as a whole: delete, reindex (every
/// entry the stored entity needs is added again), sweep, expire (with
/// `ttl`) or persist.
pub(crate) fn lifecycle(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: EntityKeys,
    op: WriteOp,
    ttl: Option<Duration>,
) -> WritePlan {
    let mut p = WritePlan::new(op, desc, ns, keys);
    p.ttl = ttl;
    p
}

/// Plans an in-place update of the `hash` or `strings` layout. With a
/// `#[version]` field, the update adds 1 to it (unless it sets it) and, given
/// `expected_version`, first checks that the stored version is that one.
pub(crate) fn update(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: EntityKeys,
    mut ops: Vec<UpdateOp>,
    ttl: Option<Duration>,
    expected_version: Option<String>,
) -> WritePlan {
    let mut p = WritePlan::new(WriteOp::Update, desc, ns, keys);
    p.ttl = ttl;
    p.version_expected = expected_version;
    let touches = |ops: &[UpdateOp], col: usize| {
        ops.iter().any(
            |op| matches!(op, UpdateOp::Set { col: c, .. } | UpdateOp::Incr { col: c, .. } if *c == col),
        )
    };
    if let Some(col) = desc.version.filter(|&c| !touches(&ops, c)) {
        ops.push(UpdateOp::Incr {
            col,
            delta: b"1".to_vec(),
            float: false,
        });
    }
    // Indexed columns no operation touches keep their entries: the script
    // neither reads them again nor moves anything.
    for (i, idx) in desc.indexes.iter().enumerate() {
        if idx.column().is_some_and(|c| !touches(&ops, c)) {
            p.index_values[i] = IndexValue::Unchanged;
        }
    }
    // Increments go first: they are the only operations that can fail on the
    // stored data (a value that is not a number), and a script that fails
    // before its first write changes nothing. (A stable sort: the others
    // keep their order.)
    ops.sort_by_key(|op| !matches!(op, UpdateOp::Incr { .. }));
    for op in ops {
        match op {
            UpdateOp::Set { col, value } => p.set_column(col, value),
            UpdateOp::Incr { col, delta, float } => {
                let name = Cow::Borrowed(desc.columns[col].name.as_bytes());
                let delta = Cow::Owned(delta);
                let (cmd, key, args) = match (desc.layout, float) {
                    (Layout::Strings, false) => ("INCRBY", p.column_key(col), vec![delta]),
                    (Layout::Strings, true) => ("INCRBYFLOAT", p.column_key(col), vec![delta]),
                    (_, false) => ("HINCRBY", 0, vec![name, delta]),
                    (_, true) => ("HINCRBYFLOAT", 0, vec![name, delta]),
                };
                p.command(cmd, key, args);
            }
            other => p.map_op(&other),
        }
    }
    p
}

/// Plans the compare-and-set that finishes an update of the `json` layout:
/// `read` is the document the caller read, `doc` the new one.
pub(crate) fn json_cas(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: EntityKeys,
    read: Vec<u8>,
    doc: Vec<u8>,
    ops: &[UpdateOp],
    ttl: Option<Duration>,
) -> WritePlan {
    let mut p = WritePlan::new(WriteOp::Cas, desc, ns, keys);
    p.ttl = ttl;
    p.cas = Some(read);
    p.command("SET", 0, vec![doc.into(), Cow::Borrowed(b"0")]);
    for op in ops {
        p.map_op(op);
    }
    p
}

/// How long to wait before compare-and-set attempt `attempt` (0-based) after
/// losing a race: random, growing, capped at 20 ms, so that contending writers
/// stop retrying in lockstep.
pub(crate) fn cas_backoff(attempt: usize) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    if attempt == 0 {
        return Duration::ZERO;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(attempt);
    let cap = (attempt as u64 * 500).min(20_000);
    Duration::from_micros(h.finish() % cap)
}

/// Puts one column operation of the entity hash (field, code, value) in
/// its column's place in `ops` and `values`, searching from `from` first;
/// false if the field is no column of the type or already has one.
fn place_column<'a>(
    columns: &[crate::schema::entity::ColumnDesc],
    ops: &mut [u8],
    values: &mut [Option<&'a [u8]>],
    from: &mut usize,
    (name, op, value): ColumnOp<'a>,
) -> bool {
    let named = |c: &crate::schema::entity::ColumnDesc| c.name.as_bytes() == name;
    let j = match columns[*from..].iter().position(named) {
        Some(k) => *from + k,
        None => match columns[..*from].iter().position(named) {
            Some(j) => j,
            None => return false,
        },
    };
    *from = j + 1;
    if ops[j] != fast::OP_KEEP {
        return false;
    }
    ops[j] = op;
    values[j] = value;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::keys_of_member as keys;
    use crate::schema::fixtures::*;

    fn cmd(name: &'static str, key: usize, args: &[&str]) -> DataCommand {
        DataCommand {
            name,
            key,
            args: args.iter().map(|a| b(a).into()).collect(),
        }
    }

    /// The name of the key a data command writes.
    fn key_of<'p>(plan: &'p WritePlan, c: &DataCommand) -> &'p str {
        plan.keys.all().nth(c.key).expect("a key of the entity")
    }

    fn user_row(email: Option<&str>, version: Option<&str>) -> Row {
        row(
            &[
                Some("ann"),
                Some("DE"),
                Some("7.50"),
                email,
                version,
                Some("a:b"),
            ],
            &[&[("theme", "dark")]],
        )
    }

    #[test]
    fn save_of_a_hash_sets_present_columns_and_deletes_absent_ones() {
        let plan = save(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            user_row(None, Some("3")),
            false,
            None,
        );
        assert_eq!(plan.op, WriteOp::Save);
        assert_eq!(plan.keys.base, "user:9");
        assert_eq!(plan.ttl, None);
        assert_eq!(plan.cas, None);
        // The stored version is expected, the next one is written.
        assert_eq!(plan.version_expected.as_deref(), Some("3"));
        assert_eq!(
            plan.commands,
            [
                cmd(
                    "HSET",
                    0,
                    &[
                        "username", "ann", "country", "DE", "rating", "7.50", "version", "4",
                        "tags", "a:b"
                    ]
                ),
                cmd("HDEL", 0, &["email"]),
                cmd("HREPLACE", 1, &["theme", "dark"]),
            ]
        );
        assert_eq!(key_of(&plan, &plan.commands[0]), "user:9");
        assert_eq!(key_of(&plan, &plan.commands[2]), "user:9:prefs");
        assert_eq!(
            plan.index_values,
            [
                IndexValue::Value(b("ann")),
                IndexValue::Value(b("DE")),
                // The score, not the stored text.
                IndexValue::Value(b("7.5")),
                IndexValue::Absent,
                IndexValue::Value(b("a:b")),
            ]
        );
        assert!(plan.stale.is_empty());
    }

    #[test]
    fn copy_writes_the_version_as_it_is_and_expects_none() {
        let ttl = Some(Duration::from_secs(30));
        let plan = copy(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            user_row(Some("ann@x"), Some("3")),
            ttl,
        );
        assert_eq!(plan.op, WriteOp::Save);
        assert_eq!(plan.ttl, ttl);
        // The source's version is copied, not bumped, and nothing is checked.
        assert_eq!(plan.version_expected, None);
        assert_eq!(
            plan.commands[0],
            cmd(
                "HSET",
                0,
                &[
                    "username", "ann", "country", "DE", "rating", "7.50", "email", "ann@x",
                    "version", "3", "tags", "a:b"
                ]
            )
        );
        assert_eq!(plan.index_values[3], IndexValue::Value(b("ann@x")));
    }

    #[test]
    fn save_without_a_stored_version_checks_none() {
        let plan = save(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            user_row(Some("ann@x"), None),
            false,
            None,
        );
        assert_eq!(plan.version_expected, None);
        assert_eq!(plan.commands[0].name, "HSET");
        assert!(!plan.commands[0]
            .args
            .iter()
            .any(|a| a[..] == b"version"[..]));
        assert_eq!(plan.commands[1].name, "HDEL");
        assert_eq!(plan.commands[1].args, [&b"version"[..]]);
        assert_eq!(plan.index_values[3], IndexValue::Value(b("ann@x")));
    }

    #[test]
    fn insert_is_a_create_only_save_with_its_ttl() {
        let ttl = Some(Duration::from_secs(30));
        let row = user_row(None, Some("0"));
        let insert = save(
            &USER,
            &crate::schema::escape::Namespace::trusted_prefix("t").unwrap(),
            keys(&USER, "9"),
            row.clone(),
            true,
            ttl,
        );
        let upsert = save(
            &USER,
            &crate::schema::escape::Namespace::trusted_prefix("t").unwrap(),
            keys(&USER, "9"),
            row.clone(),
            false,
            ttl,
        );
        assert_eq!(insert.op, WriteOp::Insert);
        assert_eq!(insert.ns.as_str(), "t:");
        assert_eq!(insert.ttl, ttl);
        assert_eq!(insert.commands, upsert.commands);
        assert_eq!(insert.index_values, upsert.index_values);
    }

    #[test]
    fn sorted_value_without_a_score_gives_no_entry() {
        let mut row = user_row(None, None);
        row.columns[RATING] = Some(b("high"));
        let plan = save(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            row.clone(),
            false,
            None,
        );
        assert_eq!(plan.index_values[RATING], IndexValue::Absent);
    }

    #[test]
    fn save_of_strings_sets_each_column_key_with_its_own_ttl() {
        let k = keys(&SESSION, "s1");
        let plan = save(
            &SESSION,
            &crate::schema::escape::Namespace::none(),
            k.clone(),
            row(&[Some("ann"), None, Some("3"), Some("1")], &[]),
            false,
            None,
        );
        assert_eq!(
            plan.commands,
            [
                cmd("SET", 1, &["ann", "0"]),
                cmd("DEL", 2, &[]),
                cmd("SET", 3, &["3", "0"]),
                cmd("SET", 4, &["2", "0"]),
            ]
        );
        let written: Vec<&str> = plan.commands.iter().map(|c| key_of(&plan, c)).collect();
        assert_eq!(
            written,
            [
                "session:s1:user",
                "session:s1:code",
                "session:s1:hits",
                "session:s1:rev"
            ]
        );
        assert_eq!(plan.version_expected.as_deref(), Some("1"));
        assert_eq!(plan.index_values, [IndexValue::Value(b("ann"))]);

        // A column with a TTL of its own carries it, in milliseconds.
        let plan = save(
            &SESSION,
            &crate::schema::escape::Namespace::none(),
            k,
            row(&[Some("ann"), Some("x"), Some("3"), None], &[]),
            false,
            None,
        );
        assert_eq!(plan.commands[1], cmd("SET", 2, &["x", "60000"]));
        assert_eq!(plan.commands[3], cmd("DEL", 4, &[]));
        assert_eq!(plan.version_expected, None);
    }

    #[test]
    fn save_of_json_writes_one_document_and_its_maps() {
        let plan = save(
            &DOC,
            &crate::schema::escape::Namespace::none(),
            keys(&DOC, "d1"),
            row(&[Some("\"Hi\""), None], &[&[("n1", "first")]]),
            false,
            None,
        );
        assert_eq!(
            plan.commands,
            [
                cmd("SET", 0, &["{\"title\":\"Hi\"}", "0"]),
                cmd("HREPLACE", 1, &["n1", "first"]),
            ]
        );
        assert_eq!(key_of(&plan, &plan.commands[1]), "doc:d1:notes");
        assert!(plan.index_values.is_empty());
    }

    #[test]
    fn update_of_a_hash_runs_increments_first_and_bumps_the_version() {
        let ops = [
            UpdateOp::Set {
                col: COUNTRY,
                value: Some(b("FR")),
            },
            UpdateOp::MapSet {
                map: 0,
                key: b("theme"),
                value: b("light"),
            },
            UpdateOp::Incr {
                col: RATING,
                delta: b("0.5"),
                float: true,
            },
            UpdateOp::MapDel {
                map: 0,
                key: b("font"),
            },
            UpdateOp::Set {
                col: EMAIL,
                value: None,
            },
        ];
        let plan = update(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            ops.to_vec(),
            None,
            Some("4".into()),
        );
        assert_eq!(plan.op, WriteOp::Update);
        assert_eq!(plan.version_expected.as_deref(), Some("4"));
        assert_eq!(
            plan.commands,
            [
                cmd("HINCRBYFLOAT", 0, &["rating", "0.5"]),
                cmd("HINCRBY", 0, &["version", "1"]),
                cmd("HSET", 0, &["country", "FR"]),
                cmd("HSET", 1, &["theme", "light"]),
                cmd("HDEL", 1, &["font"]),
                cmd("HDEL", 0, &["email"]),
            ]
        );
        assert_eq!(
            plan.index_values,
            [
                // Not touched: its entries stay, nothing is read again.
                IndexValue::Unchanged,
                IndexValue::Value(b("FR")),
                // Incremented on the server: read after the write.
                IndexValue::Unknown,
                IndexValue::Absent,
                IndexValue::Unchanged,
            ]
        );
    }

    #[test]
    fn update_that_writes_the_version_does_not_bump_it() {
        let set = [UpdateOp::Set {
            col: VERSION,
            value: Some(b("10")),
        }];
        let plan = update(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            set.to_vec(),
            None,
            None,
        );
        assert_eq!(plan.commands, [cmd("HSET", 0, &["version", "10"])]);
        assert_eq!(plan.version_expected, None);

        let incr = [UpdateOp::Incr {
            col: VERSION,
            delta: b("5"),
            float: false,
        }];
        let plan = update(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            incr.to_vec(),
            None,
            None,
        );
        assert_eq!(plan.commands, [cmd("HINCRBY", 0, &["version", "5"])]);
    }

    #[test]
    fn update_of_strings_writes_column_keys() {
        let ops = [
            UpdateOp::Set {
                col: 1,
                value: Some(b("x")),
            },
            UpdateOp::Incr {
                col: 2,
                delta: b("5"),
                float: false,
            },
            UpdateOp::Set {
                col: 0,
                value: None,
            },
        ];
        let ttl = Some(Duration::from_millis(1500));
        let plan = update(
            &SESSION,
            &crate::schema::escape::Namespace::none(),
            keys(&SESSION, "s1"),
            ops.to_vec(),
            ttl,
            None,
        );
        assert_eq!(plan.ttl, ttl);
        assert_eq!(
            plan.commands,
            [
                cmd("INCRBY", 3, &["5"]),
                cmd("INCRBY", 4, &["1"]),
                cmd("SET", 2, &["x", "60000"]),
                cmd("DEL", 1, &[]),
            ]
        );
        let written: Vec<&str> = plan.commands.iter().map(|c| key_of(&plan, c)).collect();
        assert_eq!(
            written,
            [
                "session:s1:hits",
                "session:s1:rev",
                "session:s1:code",
                "session:s1:user"
            ]
        );
        assert_eq!(plan.index_values, [IndexValue::Absent]);

        let float = [UpdateOp::Incr {
            col: 2,
            delta: b("0.5"),
            float: true,
        }];
        let plan = update(
            &SESSION,
            &crate::schema::escape::Namespace::none(),
            keys(&SESSION, "s1"),
            float.to_vec(),
            None,
            None,
        );
        assert_eq!(plan.commands[0], cmd("INCRBYFLOAT", 3, &["0.5"]));
    }

    #[test]
    fn json_cas_carries_the_document_read_and_map_changes_only() {
        let ops = [
            UpdateOp::Set {
                col: 0,
                value: Some(b("\"New\"")),
            },
            UpdateOp::MapReplace {
                map: 0,
                entries: vec![(b("n1"), b("x"))],
            },
        ];
        let ttl = Some(Duration::from_secs(5));
        let plan = json_cas(
            &DOC,
            &crate::schema::escape::Namespace::none(),
            keys(&DOC, "d1"),
            b("{\"title\":\"Old\"}"),
            b("{\"title\":\"New\"}"),
            &ops,
            ttl,
        );
        assert_eq!(plan.op, WriteOp::Cas);
        assert_eq!(plan.cas, Some(b("{\"title\":\"Old\"}")));
        assert_eq!(plan.ttl, ttl);
        // The column change is in the document already.
        assert_eq!(
            plan.commands,
            [
                cmd("SET", 0, &["{\"title\":\"New\"}", "0"]),
                cmd("HREPLACE", 1, &["n1", "x"]),
            ]
        );
    }

    #[test]
    fn clean_carries_the_stale_entries_and_writes_no_data() {
        let entries = vec![(COUNTRY, b("DE")), (TAGS, b("php"))];
        let plan = clean(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            &entries,
        );
        assert_eq!(plan.op, WriteOp::Clean);
        assert_eq!(plan.stale, entries);
        assert!(plan.commands.is_empty());
        assert!(plan.index_values.iter().all(|v| *v == IndexValue::Unknown));
        assert_eq!(plan.version_expected, None);
    }

    #[test]
    fn lifecycle_ops_carry_their_op_and_ttl() {
        for (op, ttl) in [
            (WriteOp::Delete, None),
            (WriteOp::Expire, Some(Duration::from_secs(9))),
            (WriteOp::Persist, None),
            (WriteOp::Reindex, None),
            (WriteOp::Sweep, None),
        ] {
            let plan = lifecycle(
                &USER,
                &crate::schema::escape::Namespace::trusted_prefix("t").unwrap(),
                keys(&USER, "9"),
                op,
                ttl,
            );
            assert_eq!(plan.op, op);
            assert_eq!(plan.ttl, ttl);
            assert_eq!(plan.ns.as_str(), "t:");
            assert!(plan.commands.is_empty(), "{op:?}");
            assert!(plan.stale.is_empty(), "{op:?}");
            assert_eq!(plan.cas, None);
        }
    }

    #[test]
    fn an_indexed_pk_field_is_given_its_escaped_value() {
        // Member `a%3Ab_7`: shop `a:b`, n 7.
        let plan = lifecycle(
            &ORDER,
            &crate::schema::escape::Namespace::none(),
            keys(&ORDER, "a%3Ab_7"),
            WriteOp::Delete,
            None,
        );
        assert_eq!(
            plan.index_values,
            [IndexValue::Value(b("a%3Ab")), IndexValue::Unknown]
        );
        let plan = save(
            &ORDER,
            &crate::schema::escape::Namespace::none(),
            keys(&ORDER, "acme_8"),
            row(&[Some("paid")], &[]),
            false,
            None,
        );
        assert_eq!(
            plan.index_values,
            [IndexValue::Value(b("acme")), IndexValue::Value(b("paid"))]
        );
        // A member that does not parse has no value for the field.
        let plan = lifecycle(
            &ORDER,
            &crate::schema::escape::Namespace::none(),
            keys(&ORDER, "nonsense"),
            WriteOp::Sweep,
            None,
        );
        assert_eq!(plan.index_values[0], IndexValue::Absent);
    }

    #[test]
    fn nan_and_non_numbers_are_refused_on_sorted_fields() {
        let mut row = user_row(None, None);
        assert!(check_scores(&USER, &row).is_ok());
        row.columns[RATING] = None;
        assert!(check_scores(&USER, &row).is_ok());
        for bad in ["NaN", "high"] {
            row.columns[RATING] = Some(b(bad));
            match check_scores(&USER, &row) {
                Err(Error::Encode { field, .. }) => assert_eq!(field, "rating"),
                other => panic!("{bad}: {other:?}"),
            }
        }

        let set = |col, v: &str| UpdateOp::Set {
            col,
            value: Some(b(v)),
        };
        match check_update_scores(&USER, &[set(COUNTRY, "x"), set(RATING, "NaN")]) {
            Err(Error::Encode { field, .. }) => assert_eq!(field, "rating"),
            other => panic!("{other:?}"),
        }
        // NaN on a field without a sorted index, and a valid score, are fine.
        assert!(check_update_scores(&USER, &[set(COUNTRY, "NaN"), set(RATING, "-3")]).is_ok());
        assert!(check_update_scores(
            &USER,
            &[UpdateOp::Set {
                col: RATING,
                value: None
            }]
        )
        .is_ok());
    }

    /// The keys and the arguments of one entity of a batch.
    type Frame = (Words, Words);

    /// Splits a batch call into its entities.
    fn frames(call: &Call<'_>) -> Vec<Frame> {
        let number = |v: &[u8]| -> usize { std::str::from_utf8(v).unwrap().parse().unwrap() };
        let (mut out, mut k, mut j) = (Vec::new(), 0, 0);
        while j < call.args().len() {
            let (nk, na) = (number(&call.args()[j]), number(&call.args()[j + 1]));
            out.push((
                call.keys().slice(k..k + nk),
                call.args().slice(j + 2..j + 2 + na),
            ));
            k += nk;
            j += 2 + na;
        }
        assert_eq!(k, call.keys().len(), "every key belongs to an entity");
        out
    }

    fn key_bytes(plan: &WritePlan) -> Words {
        plan.keys.all().collect()
    }

    #[test]
    fn a_batch_frames_each_plan_with_its_key_and_argument_counts() {
        let plans = [
            save(
                &SESSION,
                &crate::schema::escape::Namespace::none(),
                keys(&SESSION, "s1"),
                row(&[Some("ann"), None, Some("1"), None], &[]),
                false,
                None,
            ),
            save(
                &SESSION,
                &crate::schema::escape::Namespace::none(),
                keys(&SESSION, "s2"),
                row(&[Some("bob"), Some("c"), Some("2"), Some("7")], &[]),
                false,
                Some(Duration::from_secs(1)),
            ),
        ];
        let call = batch_call(&plans);
        let got = frames(&call);
        assert_eq!(got.len(), 2);
        for (plan, (keys, args)) in plans.iter().zip(got) {
            assert_eq!(keys, key_bytes(plan));
            assert_eq!(args, plan.args());
        }
        // The single call carries the same keys and arguments.
        let single = plans[1].call();
        assert_eq!(single.keys(), &key_bytes(&plans[1]));
        assert_eq!(single.args(), &plans[1].args());
    }

    #[test]
    fn args_encode_the_typed_fields_in_the_prelude_order() {
        // write_prelude.lua: request token, namespace, member, ttl ms (-1: keep), cas
        // document, expected version, the conditions (a count, then five
        // arguments each), one value per index ('' unknown, u
        // unchanged, n None, v.. value), then the data commands (name, 1-based key
        // position, argument count, arguments), then clean's
        // (1-based index, escaped value) pairs.
        let mut plan = lifecycle(
            &ACCOUNT,
            &crate::schema::escape::Namespace::trusted_prefix("t").unwrap(),
            keys(&ACCOUNT, "9"),
            WriteOp::Update,
            None,
        );
        plan.ttl = Some(Duration::from_millis(1500));
        plan.cas = Some(b("{}"));
        plan.version_expected = Some("3".into());
        plan.index_values = vec![IndexValue::Value(b("a@x")), IndexValue::Absent];
        plan.commands = vec![cmd("HSET", 0, &["email", "a@x"]), cmd("DEL", 0, &[])];
        plan.stale = vec![(1, b("DE"))];
        plan.conditions = vec![crate::schema::condition::Spec {
            col: 0,
            field: "email",
            test: crate::schema::condition::Test::IsNot(None),
        }];
        let expected: Vec<Vec<u8>> = [
            "", "t:", "9", "1500", "{}", "3", "1", "1", "email", "ne", "n", "", "va@x", "n",
            "HSET", "1", "2", "email", "a@x", "DEL", "1", "0", "2", "DE",
        ]
        .iter()
        .map(|s| b(s))
        .collect();
        assert_eq!(plan.args().to_vecs(), expected);

        let mut plan = lifecycle(
            &ACCOUNT,
            &crate::schema::escape::Namespace::none(),
            keys(&ACCOUNT, "9"),
            WriteOp::Delete,
            None,
        );
        assert_eq!(
            plan.args().to_vecs(),
            [
                b(""),
                b(""),
                b("9"),
                b("-1"),
                b(""),
                b(""),
                b("0"),
                b(""),
                b("")
            ]
        );
        // A TTL under a millisecond still expires (0 would mean none).
        plan.ttl = Some(Duration::from_micros(10));
        assert_eq!(plan.args()[3], b("1"));
        plan.index_values = vec![IndexValue::Unchanged, IndexValue::Unknown];
        assert_eq!(plan.args().to_vecs()[7..], [b("u"), b("")]);
        plan.token = Some("t1".into());
        assert_eq!(plan.args()[0], b("t1"));
    }

    #[test]
    fn script_errors_become_typed_errors_naming_the_key() {
        let plan = update(
            &USER,
            &crate::schema::escape::Namespace::none(),
            keys(&USER, "9"),
            vec![UpdateOp::Set {
                col: USERNAME,
                value: Some(b("ann")),
            }],
            None,
            Some("3".into()),
        );
        match plan.outcome(server_error("ENTITY_EXISTS entity already stored")) {
            Err(Error::AlreadyExists { key }) => assert_eq!(key, "user:9"),
            other => panic!("{other:?}"),
        }
        match plan.outcome(server_error("ENTITY_NOT_FOUND no entity stored")) {
            Err(Error::NotFound { key }) => assert_eq!(key, "user:9"),
            other => panic!("{other:?}"),
        }
        match plan.outcome(server_error("VERSION_CONFLICT 5")) {
            Err(Error::VersionConflict {
                key,
                expected,
                found,
            }) => assert_eq!((&*key, &*expected, &*found), ("user:9", "3", "5")),
            other => panic!("{other:?}"),
        }
        // The script names the 0-based index; the error names its field and
        // the value this write gave it.
        match plan.outcome(server_error("UNIQUE_VIOLATION 0")) {
            Err(Error::UniqueViolation { field, value }) => {
                assert_eq!((field, &*value), ("username", "ann"))
            }
            other => panic!("{other:?}"),
        }
        match plan.outcome(server_error("UNIQUE_VIOLATION 99")) {
            Err(Error::Redis { key, .. }) => assert_eq!(key, "user:9"),
            other => panic!("{other:?}"),
        }
        match plan.outcome(server_error("WRONGTYPE Operation against a key")) {
            Err(Error::WrongType { key, .. }) => assert_eq!(key, "user:9"),
            other => panic!("{other:?}"),
        }
        match plan.outcome(Value::Nil) {
            Err(Error::UnexpectedReply { key, .. }) => assert_eq!(key, "user:9"),
            other => panic!("{other:?}"),
        }
        assert!(plan.outcome(Value::Int(1)).unwrap());
        assert!(!plan.outcome(Value::Int(0)).unwrap());

        let changed = redis::make_extension_error("ENTITY_CHANGED".into(), None);
        assert!(WritePlan::is_cas_retry(&changed));
        let other = redis::make_extension_error("ENTITY_NOT_FOUND".into(), None);
        assert!(!WritePlan::is_cas_retry(&other));
    }

    #[test]
    fn cas_backoff_starts_at_zero_and_stays_under_its_cap() {
        assert_eq!(cas_backoff(0), Duration::ZERO);
        for attempt in 1..100 {
            let cap = Duration::from_micros((attempt as u64 * 500).min(20_000));
            assert!(cas_backoff(attempt) < cap, "attempt {attempt}");
        }
    }
}
