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
use crate::schema::entity::{EntityDesc, IndexSource, Layout, Row};
use crate::schema::escape::escape_bytes_into;
pub(crate) use crate::schema::update_op::UpdateOp;
use crate::script::{self, write::WriteOp, Call};
use redis::Value;
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
    pub args: Vec<Vec<u8>>,
}

/// One write of one entity.
#[derive(Debug, Clone)]
pub(crate) struct WritePlan {
    /// What the write does.
    pub op: WriteOp,
    /// The entity type.
    pub desc: &'static EntityDesc,
    /// The namespace prefix of every key.
    pub ns: String,
    /// The entity's keys.
    pub keys: EntityKeys,
    /// A TTL to give every key (`None`: keep the remaining one).
    pub ttl: Option<Duration>,
    /// Compare-and-set: the document the caller read.
    pub cas: Option<Vec<u8>>,
    /// The `#[version]` the write expects to find stored.
    pub version_expected: Option<String>,
    /// Per index of the type: the value this write gives the field.
    pub index_values: Vec<IndexValue>,
    /// The data commands, in order.
    pub commands: Vec<DataCommand>,
    /// Clean: the (index, escaped value) entries a reader found stale.
    pub stale: Vec<(usize, Vec<u8>)>,
}

fn ms(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}

impl WritePlan {
    /// A plan that changes nothing yet: indexed pk fields carry their fixed
    /// value, every other indexed field is unknown.
    fn new(op: WriteOp, desc: &'static EntityDesc, ns: &str, keys: EntityKeys) -> Self {
        let index_values = desc
            .indexes
            .iter()
            .map(|i| match i.source {
                IndexSource::Pk => match (desc.pk_index_value)(&keys.member, i.field) {
                    Some(raw) => {
                        let mut v = Vec::new();
                        escape_bytes_into(&mut v, &raw);
                        IndexValue::Value(v)
                    }
                    None => IndexValue::Absent,
                },
                IndexSource::Column(_) => IndexValue::Unknown,
            })
            .collect();
        WritePlan {
            op,
            desc,
            ns: ns.to_owned(),
            keys,
            ttl: None,
            cas: None,
            version_expected: None,
            index_values,
            commands: Vec::new(),
            stale: Vec::new(),
        }
    }

    fn command(&mut self, name: &'static str, key: usize, args: Vec<Vec<u8>>) {
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
            self.index_values[i] = match (value, idx.score) {
                (None, _) => IndexValue::Absent,
                // A sorted index is given the score, not the stored text (a
                // timestamp is stored as text and scored in milliseconds).
                (Some(v), Some(score)) => match score(v) {
                    Some(s) => IndexValue::Value(crate::schema::codec::score_text(s).into_bytes()),
                    None => IndexValue::Absent,
                },
                (Some(v), None) => IndexValue::Value(v.clone()),
            };
        }
    }

    fn set_column(&mut self, col: usize, value: Option<Vec<u8>>) {
        self.index_column(col, &value);
        let c = &self.desc.columns[col];
        let name = c.name.as_bytes().to_vec();
        let own_ttl_ms = (c.ttl.unwrap_or(0) * 1000).to_string().into_bytes();
        match (self.desc.layout, value) {
            (Layout::Strings, Some(v)) => {
                self.command("SET", self.column_key(col), vec![v, own_ttl_ms])
            }
            (Layout::Strings, None) => self.command("DEL", self.column_key(col), vec![]),
            (_, Some(v)) => self.command("HSET", 0, vec![name, v]),
            (_, None) => self.command("HDEL", 0, vec![name]),
        }
    }

    fn replace_map(&mut self, map: usize, entries: &[(Vec<u8>, Vec<u8>)]) {
        let args = entries
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect();
        self.command("HREPLACE", self.map_key(map), args);
    }

    fn map_op(&mut self, op: &UpdateOp) {
        match op {
            UpdateOp::MapReplace { map, entries } => self.replace_map(*map, entries),
            UpdateOp::MapSet { map, key, value } => {
                self.command("HSET", self.map_key(*map), vec![key.clone(), value.clone()])
            }
            UpdateOp::MapDel { map, key } => {
                self.command("HDEL", self.map_key(*map), vec![key.clone()])
            }
            UpdateOp::Set { .. } | UpdateOp::Incr { .. } => {}
        }
    }

    /// The script's arguments (see `script/lua/write_prelude.lua`).
    pub(crate) fn args(&self) -> Vec<Vec<u8>> {
        let mut args = Vec::with_capacity(5 + self.index_values.len() + 3 * self.commands.len());
        args.push(self.ns.as_bytes().to_vec());
        args.push(self.keys.member.as_bytes().to_vec());
        args.push(match self.ttl {
            Some(t) => ms(t).to_string().into_bytes(),
            None => b"-1".to_vec(),
        });
        args.push(self.cas.clone().unwrap_or_default());
        args.push(
            self.version_expected
                .clone()
                .unwrap_or_default()
                .into_bytes(),
        );
        for v in &self.index_values {
            args.push(match v {
                IndexValue::Unknown => Vec::new(),
                IndexValue::Unchanged => b"u".to_vec(),
                IndexValue::Absent => b"n".to_vec(),
                IndexValue::Value(v) => [b"v", &v[..]].concat(),
            });
        }
        for c in &self.commands {
            args.push(c.name.as_bytes().to_vec());
            args.push((c.key + 1).to_string().into_bytes());
            args.push(c.args.len().to_string().into_bytes());
            args.extend(c.args.iter().cloned());
        }
        for (i, v) in &self.stale {
            args.push((i + 1).to_string().into_bytes());
            args.push(v.clone());
        }
        args
    }

    /// The call of the type's write script for this plan.
    pub(crate) fn call(&self) -> Call<'static> {
        let mut call = script::write::script(self.desc, self.op, false).call();
        call.keys = self.keys.all().map(|k| k.as_bytes().to_vec()).collect();
        call.args = self.args();
        call
    }

    /// The entity key, for error messages.
    pub(crate) fn key(&self) -> &str {
        &self.keys.base
    }

    /// Turns the script's reply into the call's outcome: `Ok(true)` when the
    /// entity was created (save / insert) or existed (delete).
    pub(crate) fn outcome(&self, reply: Value) -> Result<bool> {
        match reply {
            Value::Int(n) => Ok(n == 1),
            Value::ServerError(e) => Err(self.server_error(e.into())),
            other => Err(Error::UnexpectedReply {
                key: self.key().to_owned(),
                detail: format!("{other:?}"),
            }),
        }
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

    /// True for the compare-and-set reply that asks the caller to read again.
    pub(crate) fn is_cas_retry(e: &redis::RedisError) -> bool {
        e.code() == Some("ENTITY_CHANGED")
    }
}

/// One call writing every plan (all of one entity type and operation) with
/// a result per plan, in order.
pub(crate) fn batch_call(plans: &[WritePlan]) -> Call<'static> {
    let first = &plans[0];
    let mut call = script::write::script(first.desc, first.op, true).call();
    for p in plans {
        debug_assert!(std::ptr::eq(p.desc, first.desc) && p.op == first.op);
        let before = call.keys.len();
        call.keys
            .extend(p.keys.all().map(|k| k.as_bytes().to_vec()));
        let args = p.args();
        call.args
            .push((call.keys.len() - before).to_string().into_bytes());
        call.args.push(args.len().to_string().into_bytes());
        call.args.extend(args);
    }
    call
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
    ns: &str,
    keys: EntityKeys,
    row: &Row,
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
    let bumped;
    let row = match desc
        .version
        .and_then(|c| Some((c, row.columns[c].as_deref()?)))
    {
        Some((c, raw)) => {
            let current: i128 = std::str::from_utf8(raw)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            p.version_expected = Some(current.to_string());
            let mut next = row.clone();
            next.columns[c] = Some(current.saturating_add(1).to_string().into_bytes());
            bumped = next;
            &bumped
        }
        None => row,
    };
    match desc.layout {
        Layout::Hash => {
            let mut set = Vec::new();
            let mut del = Vec::new();
            for (i, (c, v)) in desc.columns.iter().zip(&row.columns).enumerate() {
                p.index_column(i, v);
                match v {
                    Some(v) => {
                        set.push(c.name.as_bytes().to_vec());
                        set.push(v.clone());
                    }
                    None => del.push(c.name.as_bytes().to_vec()),
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
            for (i, v) in row.columns.iter().enumerate() {
                p.set_column(i, v.clone());
            }
        }
        Layout::Json => {
            for (i, v) in row.columns.iter().enumerate() {
                p.index_column(i, v);
            }
            let doc = json_document(desc, row);
            p.command("SET", 0, vec![doc, b"0".to_vec()]);
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
    ns: &str,
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
    ns: &str,
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
    ns: &str,
    keys: EntityKeys,
    ops: &[UpdateOp],
    ttl: Option<Duration>,
    expected_version: Option<String>,
) -> WritePlan {
    let mut p = WritePlan::new(WriteOp::Update, desc, ns, keys);
    p.ttl = ttl;
    p.version_expected = expected_version;
    let bump = desc.version.filter(|c| {
        !ops.iter().any(
            |op| matches!(op, UpdateOp::Set { col, .. } | UpdateOp::Incr { col, .. } if col == c),
        )
    });
    let bump_op = bump.map(|col| UpdateOp::Incr {
        col,
        delta: b"1".to_vec(),
        float: false,
    });
    let ops: Vec<UpdateOp> = ops.iter().cloned().chain(bump_op).collect();
    // Increments go first: they are the only operations that can fail on the
    // stored data (a value that is not a number), and a script that fails
    // before its first write changes nothing.
    let (incrs, others): (Vec<&UpdateOp>, Vec<&UpdateOp>) = ops
        .iter()
        .partition(|op| matches!(op, UpdateOp::Incr { .. }));
    for op in incrs.into_iter().chain(others) {
        match op {
            UpdateOp::Set { col, value } => p.set_column(*col, value.clone()),
            UpdateOp::Incr { col, delta, float } => {
                let name = desc.columns[*col].name.as_bytes().to_vec();
                let (cmd, key, args) = match (desc.layout, float) {
                    (Layout::Strings, false) => ("INCRBY", p.column_key(*col), vec![delta.clone()]),
                    (Layout::Strings, true) => {
                        ("INCRBYFLOAT", p.column_key(*col), vec![delta.clone()])
                    }
                    (_, false) => ("HINCRBY", 0, vec![name, delta.clone()]),
                    (_, true) => ("HINCRBYFLOAT", 0, vec![name, delta.clone()]),
                };
                p.command(cmd, key, args);
            }
            other => p.map_op(other),
        }
    }
    // Indexed columns no operation touches keep their entries: the script
    // neither reads them again nor moves anything.
    let touched = |col: usize| {
        ops.iter().any(
            |op| matches!(op, UpdateOp::Set { col: c, .. } | UpdateOp::Incr { col: c, .. } if *c == col),
        )
    };
    for (i, idx) in desc.indexes.iter().enumerate() {
        if idx.column().is_some_and(|c| !touched(c)) {
            p.index_values[i] = IndexValue::Unchanged;
        }
    }
    p
}

/// Plans the compare-and-set that finishes an update of the `json` layout:
/// `read` is the document the caller read, `doc` the new one.
pub(crate) fn json_cas(
    desc: &'static EntityDesc,
    ns: &str,
    keys: EntityKeys,
    read: Vec<u8>,
    doc: Vec<u8>,
    ops: &[UpdateOp],
    ttl: Option<Duration>,
) -> WritePlan {
    let mut p = WritePlan::new(WriteOp::Cas, desc, ns, keys);
    p.ttl = ttl;
    p.cas = Some(read);
    p.command("SET", 0, vec![doc, b"0".to_vec()]);
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
