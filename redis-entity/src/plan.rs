//! Plans: the exact commands one call sends, built without a server.
//!
//! Building a plan is pure (keys, script arguments, reply decoding) and unit
//! tested here; sending it is the job of [`crate::Store`] (the blocking store
//! runs the same code on a runtime of its own).

use crate::entity::{EntityDesc, EntityKeys, IndexKind, IndexSource, Layout, Row};
use crate::error::{Error, Result};
use crate::key::{escape_bytes_into, Namespace};
use redis::Value;
use std::time::Duration;

/// What a write does when the entity exists (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Upsert.
    Save,
    /// Create only; an existing entity is [`Error::AlreadyExists`].
    Insert,
    /// Change an existing entity; a missing one is [`Error::NotFound`].
    Update,
    /// Like `Update`, and only if the JSON document is still the one read.
    Cas,
    /// Remove every key of the entity.
    Delete,
    /// Set a TTL on every key of an existing entity.
    Expire,
    /// Remove the TTL of every key of an existing entity.
    Persist,
    /// Remove index entries found stale.
    Clean,
    /// Re-add every index entry the stored values need (repairs a missing one).
    Reindex,
    /// Remove every index entry of the entity if it has expired.
    Sweep,
}

impl WriteMode {
    fn name(self) -> &'static str {
        match self {
            WriteMode::Save => "save",
            WriteMode::Insert => "insert",
            WriteMode::Update => "update",
            WriteMode::Cas => "cas",
            WriteMode::Delete => "delete",
            WriteMode::Expire => "expire",
            WriteMode::Persist => "persist",
            WriteMode::Clean => "clean",
            WriteMode::Reindex => "reindex",
            WriteMode::Sweep => "sweep",
        }
    }
}

/// One change made by `update()`; `col` / `map` index the entity's description.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOp {
    /// Store a column value (`None`: remove it).
    Set {
        /// Column index.
        col: usize,
        /// Encoded value.
        value: Option<Vec<u8>>,
    },
    /// Add to a numeric column in place.
    Incr {
        /// Column index.
        col: usize,
        /// The encoded delta.
        delta: Vec<u8>,
        /// Float columns use the `...FLOAT` commands.
        float: bool,
    },
    /// Replace a whole `#[hash]` map.
    MapReplace {
        /// Map index.
        map: usize,
        /// Encoded entries.
        entries: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// Set one entry of a `#[hash]` map.
    MapSet {
        /// Map index.
        map: usize,
        /// Encoded entry key.
        key: Vec<u8>,
        /// Encoded entry value.
        value: Vec<u8>,
    },
    /// Remove one entry of a `#[hash]` map.
    MapDel {
        /// Map index.
        map: usize,
        /// Encoded entry key.
        key: Vec<u8>,
    },
}

/// One call of the write script: keys and arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct WritePlan {
    /// The entity's keys (`KEYS`).
    pub keys: Vec<String>,
    /// The script arguments (`ARGV`).
    pub args: Vec<Vec<u8>>,
    /// Per index: the new value of a unique field this write sets (for the
    /// error message of a violation).
    unique: Vec<(&'static str, Option<Vec<u8>>)>,
    /// The version the write expects to find, if it checks one.
    version_expected: Option<String>,
}

/// The write script, loaded once per connection and called by its SHA1.
pub static WRITE_SCRIPT: &str = include_str!("lua/write.lua");

/// The SHA1 of [`WRITE_SCRIPT`].
pub fn write_script_sha() -> &'static str {
    static SHA: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SHA.get_or_init(|| redis::Script::new(WRITE_SCRIPT).get_hash().to_owned())
}

fn ms(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}

struct Builder<'a> {
    desc: &'a EntityDesc,
    keys: &'a EntityKeys,
    ns: &'a Namespace,
    ops: Vec<Vec<u8>>,
    /// Per index of the entity: the new stored value of the field, when this
    /// write sets it (`Some(None)`: set to None); the script then needs not
    /// read it back, and checks a unique value before writing anything.
    new_values: Vec<Option<Option<Vec<u8>>>>,
    /// The `#[version]` the write expects to find stored.
    version_expected: Option<String>,
}

impl<'a> Builder<'a> {
    fn new(desc: &'a EntityDesc, keys: &'a EntityKeys, ns: &'a Namespace) -> Self {
        Builder {
            desc,
            keys,
            ns,
            ops: Vec::new(),
            new_values: vec![None; desc.indexes.len()],
            version_expected: None,
        }
    }

    fn op(&mut self, name: &str, key: usize, args: Vec<Vec<u8>>) {
        self.ops.push(name.as_bytes().to_vec());
        self.ops.push((key + 1).to_string().into_bytes());
        self.ops.push(args.len().to_string().into_bytes());
        self.ops.extend(args);
    }

    fn column_key(&self, col: usize) -> usize {
        1 + col
    }

    fn map_key(&self, map: usize) -> usize {
        1 + self.keys.columns.len() + map
    }

    fn own_ttl_ms(&self, col: usize) -> Vec<u8> {
        let t = self.desc.columns[col].ttl.unwrap_or(0) * 1000;
        t.to_string().into_bytes()
    }

    fn set_column(&mut self, col: usize, value: Option<Vec<u8>>) {
        for (i, idx) in self.desc.indexes.iter().enumerate() {
            if idx.column() == Some(col) {
                self.new_values[i] = Some(value.clone());
            }
        }
        let name = self.desc.columns[col].name.as_bytes().to_vec();
        match (self.desc.layout, value) {
            (Layout::Strings, Some(v)) => {
                let own = self.own_ttl_ms(col);
                self.op("SET", self.column_key(col), vec![v, own]);
            }
            (Layout::Strings, None) => self.op("DEL", self.column_key(col), vec![]),
            (_, Some(v)) => self.op("HSET", 0, vec![name, v]),
            (_, None) => self.op("HDEL", 0, vec![name]),
        }
    }

    fn replace_map(&mut self, map: usize, entries: &[(Vec<u8>, Vec<u8>)]) {
        let args = entries
            .iter()
            .flat_map(|(k, v)| [k.clone(), v.clone()])
            .collect();
        self.op("HREPLACE", self.map_key(map), args);
    }

    /// Member, ids key, owner presence keys and index specs (see write.lua).
    fn index_header(&self, args: &mut Vec<Vec<u8>>) {
        let desc = self.desc;
        if desc.indexes.is_empty() {
            // member (relations), no ids set, expiry set (relations of an
            // expired entity are swept), no owner head, suffixes or index.
            args.extend([
                self.keys.member.clone().into_bytes(),
                Vec::new(),
                desc.expiry_key(self.ns).into_bytes(),
                Vec::new(),
                b"0".to_vec(),
                b"0".to_vec(),
            ]);
            return;
        }
        args.push(self.keys.member.clone().into_bytes());
        args.push(desc.ids_key(self.ns).into_bytes());
        args.push(desc.expiry_key(self.ns).into_bytes());
        args.push(format!("{}{}{{", self.ns.as_str(), desc.key_head).into_bytes());
        let suffixes = crate::query::presence_suffixes(desc);
        args.push(suffixes.len().to_string().into_bytes());
        args.extend(suffixes.into_iter().map(String::into_bytes));
        args.push(desc.indexes.len().to_string().into_bytes());
        for (i, idx) in desc.indexes.iter().enumerate() {
            args.push(idx.kind.code().as_bytes().to_vec());
            let (key, field, fixed) = match (idx.source, desc.layout) {
                (IndexSource::Pk, _) => {
                    let mut v = vec![b'v'];
                    match (desc.pk_index_value)(&self.keys.member, idx.field) {
                        Some(raw) => escape_bytes_into(&mut v, &raw),
                        None => v.clear(),
                    }
                    (0, Vec::new(), v)
                }
                (IndexSource::Column(c), Layout::Strings) => (1 + c, Vec::new(), Vec::new()),
                (IndexSource::Column(c), _) => {
                    (0, desc.columns[c].name.as_bytes().to_vec(), Vec::new())
                }
            };
            args.push((key + 1).to_string().into_bytes());
            args.push(field);
            args.push(fixed);
            args.push(match idx.kind {
                IndexKind::Prefix | IndexKind::Sorted => desc.index_zset(self.ns, idx).into_bytes(),
                _ => desc.index_prefix(self.ns, idx).into_bytes(),
            });
            args.push(match (&self.new_values[i], idx.score) {
                (None, _) => Vec::new(),
                (Some(None), _) => b"n".to_vec(),
                // A sorted index is given the score, not the stored text (a
                // timestamp is stored as text and scored in milliseconds).
                (Some(Some(v)), Some(score)) => match score(v) {
                    Some(s) => format!("v{}", crate::codec::score_text(s)).into_bytes(),
                    None => b"n".to_vec(),
                },
                (Some(Some(v)), None) => [b"v", &v[..]].concat(),
            });
        }
    }

    fn finish(self, mode: WriteMode, ttl: Option<Duration>, cas: Vec<u8>) -> WritePlan {
        let desc = self.desc;
        let mut roles = String::with_capacity(1 + self.keys.columns.len() + self.keys.maps.len());
        roles.push('p');
        for c in &desc.columns[..self.keys.columns.len()] {
            roles.push(if c.ttl.is_some() { 'o' } else { 'p' });
        }
        roles.extend(std::iter::repeat_n('d', self.keys.maps.len()));
        if self.keys.shadow.is_some() {
            roles.push('s');
        }
        let marker = match desc.layout {
            Layout::Hash if desc.columns.iter().all(|c| c.optional) => "hash",
            Layout::Strings if !desc.columns.iter().any(|c| !c.optional && c.ttl.is_none()) => {
                "string"
            }
            _ => "none",
        };
        let mut args = Vec::with_capacity(6 + self.ops.len());
        args.push(mode.name().as_bytes().to_vec());
        args.push(roles.into_bytes());
        args.push(match ttl {
            Some(t) => ms(t).to_string().into_bytes(),
            None => b"-1".to_vec(),
        });
        args.push((desc.ttl.unwrap_or(0) * 1000).to_string().into_bytes());
        args.push(marker.as_bytes().to_vec());
        args.push(cas);
        self.index_header(&mut args);
        match (desc.version, &self.version_expected) {
            (Some(c), Some(expected)) => {
                let (key, field) = match desc.layout {
                    Layout::Strings => (1 + c, Vec::new()),
                    _ => (0, desc.columns[c].name.as_bytes().to_vec()),
                };
                args.push((key + 1).to_string().into_bytes());
                args.push(field);
                args.push(expected.clone().into_bytes());
            }
            _ => args.extend([b"0".to_vec(), Vec::new(), Vec::new()]),
        }
        args.extend(self.ops);
        let unique = desc
            .indexes
            .iter()
            .zip(self.new_values)
            .map(|(i, v)| (i.field, v.flatten().filter(|_| i.kind == IndexKind::Unique)))
            .collect();
        WritePlan {
            keys: self.keys.all().cloned().collect(),
            args,
            unique,
            version_expected: self.version_expected,
        }
    }
}

/// The JSON document of the `json` layout: `{"column": <json text>, ...}`.
/// Columns of that layout are encoded as JSON text by their codecs, so the
/// document is assembled without re-parsing them.
pub fn json_document(desc: &EntityDesc, row: &Row) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.push(b'{');
    let mut first = true;
    for (c, v) in desc.columns.iter().zip(&row.columns) {
        if let Some(v) = v {
            if !first {
                out.push(b',');
            }
            first = false;
            // Field names are Rust identifiers or checked `rename`s; still escape them properly.
            out.extend_from_slice(serde_json::to_string(c.name).unwrap_or_default().as_bytes());
            out.push(b':');
            out.extend_from_slice(v);
        }
    }
    out.push(b'}');
    out
}

/// Refuses a row whose sorted index value has no score (NaN), before anything
/// is sent: Redis would reject it half-way through the write.
pub fn check_scores(desc: &EntityDesc, row: &Row) -> Result<()> {
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
pub fn check_update_scores(desc: &EntityDesc, ops: &[UpdateOp]) -> Result<()> {
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

/// Plans a save or insert of one entity. With a `#[version]` field, the
/// write expects the stored version to be the entity's and stores the next.
pub fn save(
    desc: &EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    row: &Row,
    mode: WriteMode,
    ttl: Option<Duration>,
) -> WritePlan {
    let mut b = Builder::new(desc, keys, ns);
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
            b.version_expected = Some(current.to_string());
            let mut next = row.clone();
            next.columns[c] = Some(current.saturating_add(1).to_string().into_bytes());
            bumped = next;
            &bumped
        }
        None => row,
    };
    for (i, idx) in desc.indexes.iter().enumerate() {
        if let Some(c) = idx.column() {
            b.new_values[i] = Some(row.columns[c].clone());
        }
    }
    match desc.layout {
        Layout::Hash => {
            let mut set = Vec::new();
            let mut del = Vec::new();
            for (c, v) in desc.columns.iter().zip(&row.columns) {
                match v {
                    Some(v) => {
                        set.push(c.name.as_bytes().to_vec());
                        set.push(v.clone());
                    }
                    None => del.push(c.name.as_bytes().to_vec()),
                }
            }
            if !set.is_empty() {
                b.op("HSET", 0, set);
            }
            if !del.is_empty() {
                b.op("HDEL", 0, del);
            }
        }
        Layout::Strings => {
            for (i, v) in row.columns.iter().enumerate() {
                b.set_column(i, v.clone());
            }
        }
        Layout::Json => {
            let doc = json_document(desc, row);
            b.op("SET", 0, vec![doc, b"0".to_vec()]);
        }
    }
    for (i, entries) in row.maps.iter().enumerate() {
        b.replace_map(i, entries);
    }
    b.finish(mode, ttl, Vec::new())
}

/// Plans the removal of index entries a reader found stale: each
/// (index, escaped value) entry is removed only if the stored entity does
/// not need it, in the same atomic step that reads the stored value.
pub fn clean(
    desc: &EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    entries: &[(usize, Vec<u8>)],
) -> WritePlan {
    let mut b = Builder::new(desc, keys, ns);
    for (i, v) in entries {
        b.ops.push((i + 1).to_string().into_bytes());
        b.ops.push(v.clone());
    }
    b.finish(WriteMode::Clean, None, Vec::new())
}

/// Plans a reindex: every entry the stored entity needs is added again.
pub fn reindex(desc: &EntityDesc, ns: &Namespace, keys: &EntityKeys) -> WritePlan {
    Builder::new(desc, keys, ns).finish(WriteMode::Reindex, None, Vec::new())
}

/// Plans a delete, an expire (`Some(ttl)`) or a persist (`None` with `Persist`).
pub fn lifecycle(
    desc: &EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    mode: WriteMode,
    ttl: Option<Duration>,
) -> WritePlan {
    Builder::new(desc, keys, ns).finish(mode, ttl, Vec::new())
}

/// Plans an in-place update of the `hash` or `strings` layout. With a
/// `#[version]` field, the update adds 1 to it (unless it sets it) and, given
/// `expected`, first checks that the stored version is that one.
pub fn update(
    desc: &EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    ops: &[UpdateOp],
    ttl: Option<Duration>,
) -> WritePlan {
    update_checked(desc, ns, keys, ops, ttl, None)
}

/// [`update`] that first checks the stored `#[version]`.
pub fn update_checked(
    desc: &EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    ops: &[UpdateOp],
    ttl: Option<Duration>,
    expected_version: Option<String>,
) -> WritePlan {
    let mut b = Builder::new(desc, keys, ns);
    b.version_expected = expected_version;
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
    let ops = &ops[..];
    // Increments go first: they are the only operations that can fail on the
    // stored data (a value that is not a number), and a script that fails
    // before its first write changes nothing.
    let (incrs, others): (Vec<&UpdateOp>, Vec<&UpdateOp>) = ops
        .iter()
        .partition(|op| matches!(op, UpdateOp::Incr { .. }));
    for op in incrs.into_iter().chain(others) {
        match op {
            UpdateOp::Set { col, value } => b.set_column(*col, value.clone()),
            UpdateOp::Incr { col, delta, float } => {
                let name = desc.columns[*col].name.as_bytes().to_vec();
                match (desc.layout, float) {
                    (Layout::Strings, false) => {
                        b.op("INCRBY", b.column_key(*col), vec![delta.clone()])
                    }
                    (Layout::Strings, true) => {
                        b.op("INCRBYFLOAT", b.column_key(*col), vec![delta.clone()])
                    }
                    (_, false) => b.op("HINCRBY", 0, vec![name, delta.clone()]),
                    (_, true) => b.op("HINCRBYFLOAT", 0, vec![name, delta.clone()]),
                }
            }
            other => map_op(&mut b, other),
        }
    }
    b.finish(WriteMode::Update, ttl, Vec::new())
}

fn map_op(b: &mut Builder<'_>, op: &UpdateOp) {
    match op {
        UpdateOp::MapReplace { map, entries } => b.replace_map(*map, entries),
        UpdateOp::MapSet { map, key, value } => {
            b.op("HSET", b.map_key(*map), vec![key.clone(), value.clone()])
        }
        UpdateOp::MapDel { map, key } => b.op("HDEL", b.map_key(*map), vec![key.clone()]),
        UpdateOp::Set { .. } | UpdateOp::Incr { .. } => {}
    }
}

/// Plans the compare-and-set that finishes an update of the `json` layout:
/// `read` is the document the caller read, `doc` the new one.
pub fn json_cas(
    desc: &EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    read: Vec<u8>,
    doc: Vec<u8>,
    ops: &[UpdateOp],
    ttl: Option<Duration>,
) -> WritePlan {
    let mut b = Builder::new(desc, keys, ns);
    b.op("SET", 0, vec![doc, b"0".to_vec()]);
    for op in ops {
        map_op(&mut b, op);
    }
    b.finish(WriteMode::Cas, ttl, read)
}

impl WritePlan {
    /// `EVALSHA` of the write script.
    pub fn evalsha(&self) -> redis::Cmd {
        self.command("EVALSHA", write_script_sha())
    }

    /// `EVAL` with the script text: the fallback after `NOSCRIPT` (it also
    /// caches the script on the server again).
    pub fn eval(&self) -> redis::Cmd {
        self.command("EVAL", WRITE_SCRIPT)
    }

    fn command(&self, name: &str, script: &str) -> redis::Cmd {
        let mut c = redis::cmd(name);
        c.arg(script).arg(self.keys.len());
        for k in &self.keys {
            c.arg(k);
        }
        for a in &self.args {
            c.arg(a.as_slice());
        }
        c
    }

    /// The entity key, for error messages.
    pub fn key(&self) -> &str {
        &self.keys[0]
    }

    /// Turns the script's reply into the call's outcome: `Ok(true)` when the
    /// entity was created (save / insert) or existed (delete).
    pub fn outcome(&self, reply: Value) -> Result<bool> {
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
    pub fn server_error(&self, e: redis::RedisError) -> Error {
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
                match which.and_then(|i| self.unique.get(i)) {
                    Some((field, value)) => Error::UniqueViolation {
                        field,
                        value: value
                            .as_deref()
                            .map(crate::error::shown)
                            .unwrap_or_default(),
                    },
                    None => Error::redis(&key, e),
                }
            }
            _ => Error::redis(&key, e),
        }
    }

    /// True for the compare-and-set reply that asks the caller to read again.
    pub fn is_cas_retry(e: &redis::RedisError) -> bool {
        e.code() == Some("ENTITY_CHANGED")
    }
}

/// How long to wait before compare-and-set attempt `attempt` (0-based) after
/// losing a race: random, growing, capped at 20 ms, so that contending writers
/// stop retrying in lockstep.
pub fn cas_backoff(attempt: usize) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    if attempt == 0 {
        return Duration::ZERO;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(attempt);
    let cap = (attempt as u64 * 500).min(20_000);
    Duration::from_micros(h.finish() % cap)
}

/// True when the server no longer has the script (after `SCRIPT FLUSH` or a restart).
pub fn is_noscript(e: &redis::RedisError) -> bool {
    e.code() == Some("NOSCRIPT")
}

/// The commands that read one entity; their replies go to [`decode_read`].
pub fn read(desc: &EntityDesc, keys: &EntityKeys, pipe: &mut redis::Pipeline) {
    match desc.layout {
        Layout::Hash => {
            pipe.cmd("HGETALL").arg(&keys.base);
        }
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

/// How many replies [`read`] adds per entity.
pub fn read_len(desc: &EntityDesc) -> usize {
    1 + desc.maps.len()
}

fn bytes(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::VerbatimString { text, .. } => Some(text.into_bytes()),
        _ => None,
    }
}

fn pairs(key: &str, v: Value) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    match v {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                if let (Some(k), Some(v)) = (bytes(k), bytes(v)) {
                    out.push((k, v));
                }
            }
            Ok(out)
        }
        Value::Map(items) => Ok(items
            .into_iter()
            .filter_map(|(k, v)| Some((bytes(k)?, bytes(v)?)))
            .collect()),
        Value::Nil => Ok(Vec::new()),
        Value::ServerError(e) => Err(Error::redis(key, e.into())),
        other => Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: format!("{other:?}"),
        }),
    }
}

/// Decodes the replies of [`read`] into a row; `None` when the entity does not exist.
pub fn decode_read(
    desc: &EntityDesc,
    keys: &EntityKeys,
    replies: &mut impl Iterator<Item = Value>,
) -> Result<Option<Row>> {
    let first = replies.next().unwrap_or(Value::Nil);
    let mut map_replies = Vec::with_capacity(desc.maps.len());
    for (i, _) in desc.maps.iter().enumerate() {
        let v = replies.next().unwrap_or(Value::Nil);
        map_replies.push(pairs(&keys.maps[i], v)?);
    }
    let columns = match desc.layout {
        Layout::Hash => {
            let fields = pairs(&keys.base, first)?;
            if fields.is_empty() {
                return Ok(None);
            }
            // Move each stored value into its column; fields are usually in
            // column order, so the guess `i` is checked first.
            let mut columns = vec![None; desc.columns.len()];
            for (i, (k, v)) in fields.into_iter().enumerate() {
                let hit = match desc.columns.get(i) {
                    Some(c) if c.name.as_bytes() == k.as_slice() => Some(i),
                    _ => desc
                        .columns
                        .iter()
                        .position(|c| c.name.as_bytes() == k.as_slice()),
                };
                if let Some(c) = hit {
                    columns[c] = Some(v);
                }
            }
            columns
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
            json_columns(desc, &keys.base, &doc)?
        }
    };
    Ok(Some(Row {
        columns,
        maps: map_replies,
    }))
}

/// Splits a `json` layout document into per-column JSON texts.
pub fn json_columns(desc: &EntityDesc, key: &str, doc: &[u8]) -> Result<Vec<Option<Vec<u8>>>> {
    let parsed: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_slice(doc).map_err(|e| Error::Decode {
            key: key.to_owned(),
            field: "(document)",
            value: crate::error::shown(doc),
            reason: e.to_string(),
        })?;
    Ok(desc
        .columns
        .iter()
        .map(|c| parsed.get(c.name).map(|r| r.get().as_bytes().to_vec()))
        .collect())
}

/// Applies `ops` to a parsed `json` layout document (the read half of a
/// compare-and-set update). Errors name the key and field.
pub fn apply_json_ops(
    desc: &EntityDesc,
    key: &str,
    doc: &[u8],
    ops: &[UpdateOp],
) -> Result<Vec<u8>> {
    let mut map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(doc).map_err(|e| Error::Decode {
            key: key.to_owned(),
            field: "(document)",
            value: crate::error::shown(doc),
            reason: e.to_string(),
        })?;
    for op in ops {
        match op {
            UpdateOp::Set { col, value } => {
                let name = desc.columns[*col].name;
                match value {
                    Some(v) => {
                        let v = serde_json::from_slice(v).map_err(|e| Error::Encode {
                            field: name,
                            reason: e.to_string(),
                        })?;
                        map.insert(name.to_owned(), v);
                    }
                    None => {
                        map.remove(name);
                    }
                }
            }
            UpdateOp::Incr { col, delta, float } => {
                let name = desc.columns[*col].name;
                let current = map.get(name).cloned().unwrap_or(serde_json::Value::from(0));
                let bad = |reason: String| Error::Decode {
                    key: key.to_owned(),
                    field: name,
                    value: current.to_string(),
                    reason,
                };
                let delta_s = String::from_utf8_lossy(delta);
                let next = if *float {
                    let d: f64 = delta_s.parse().map_err(|_| bad("bad delta".into()))?;
                    let c = current.as_f64().ok_or_else(|| bad("not a number".into()))?;
                    serde_json::Number::from_f64(c + d)
                        .map(serde_json::Value::Number)
                        .ok_or_else(|| bad("increment gives a non-finite number".into()))?
                } else if let (Some(c), Ok(d)) = (current.as_i64(), delta_s.parse::<i64>()) {
                    serde_json::Value::from(
                        c.checked_add(d)
                            .ok_or_else(|| bad("increment overflows".into()))?,
                    )
                } else if let (Some(c), Ok(d)) = (current.as_u64(), delta_s.parse::<u64>()) {
                    serde_json::Value::from(
                        c.checked_add(d)
                            .ok_or_else(|| bad("increment overflows".into()))?,
                    )
                } else {
                    return Err(bad("not an integer".into()));
                };
                map.insert(name.to_owned(), next);
            }
            _ => {}
        }
    }
    serde_json::to_vec(&map).map_err(|e| Error::Encode {
        field: "(document)",
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::{ColumnDesc, IndexDesc, MapDesc};
    use crate::key::Namespace;

    const COLS: &[ColumnDesc] = &[
        ColumnDesc {
            name: "username",
            rust_type: "String",
            optional: false,
            ttl: None,
        },
        ColumnDesc {
            name: "code",
            rust_type: "Option<String>",
            optional: true,
            ttl: Some(60),
        },
    ];
    const MAPS: &[MapDesc] = &[MapDesc {
        name: "settings",
        rust_type: "BTreeMap<String, String>",
    }];

    fn desc(layout: Layout) -> EntityDesc {
        EntityDesc {
            type_name: "User",
            prefix: "user",
            layout,
            key_pattern: "user:userid:{<id>}",
            key_head: "user:userid:",
            key_tail: "",
            indexes: &[],
            pk_index_value: |_, _| None,
            version: None,
            pk_fields: &["id"],
            numeric_pk: true,
            columns: COLS,
            maps: MAPS,
            ttl: Some(10),
        }
    }

    fn row() -> Row {
        Row {
            columns: vec![Some(b"lisi".to_vec()), None],
            maps: vec![vec![(b"theme".to_vec(), b"dark".to_vec())]],
        }
    }

    fn args(p: &WritePlan) -> Vec<String> {
        p.args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn strings_layout_writes_one_key_per_column() {
        let d = desc(Layout::Strings);
        let ns = Namespace::none();
        let keys = EntityKeys::new(&d, &ns, "9".into());
        assert_eq!(
            keys.all().cloned().collect::<Vec<_>>(),
            [
                "user:userid:{9}",
                "user:userid:{9}:username",
                "user:userid:{9}:code",
                "user:userid:{9}:settings"
            ]
        );
        let p = save(&d, &ns, &keys, &row(), WriteMode::Save, None);
        let expected = [
            "save",
            "ppod",
            "-1",
            "10000",
            "none",
            "",
            "9",
            "",
            "user:@expiry",
            "",
            "0",
            "0",
            "0",
            "",
            "",
            "SET",
            "2",
            "2",
            "lisi",
            "0",
            "DEL",
            "3",
            "0",
            "HREPLACE",
            "4",
            "2",
            "theme",
            "dark",
        ];
        assert_eq!(args(&p), expected);
    }

    #[test]
    fn hash_layout_sets_present_and_deletes_absent_fields() {
        let d = desc(Layout::Hash);
        let ns = Namespace::tenant(42);
        let keys = EntityKeys::new(&d, &ns, "9".into());
        assert_eq!(keys.base, "tenant:42:user:userid:{9}");
        let p = save(
            &d,
            &ns,
            &keys,
            &row(),
            WriteMode::Insert,
            Some(Duration::from_secs(5)),
        );
        let expected = [
            "insert",
            "pd",
            "5000",
            "10000",
            "none",
            "",
            "9",
            "",
            "tenant:42:user:@expiry",
            "",
            "0",
            "0",
            "0",
            "",
            "",
            "HSET",
            "1",
            "2",
            "username",
            "lisi",
            "HDEL",
            "1",
            "1",
        ];
        assert_eq!(args(&p)[..23], expected);
    }

    #[test]
    fn indexed_entities_send_their_index_specs() {
        const IDX: &[IndexDesc] = &[IndexDesc {
            field: "username",
            source: IndexSource::Column(0),
            kind: IndexKind::Unique,
            score: None,
        }];
        let mut d = desc(Layout::Hash);
        d.key_head = "user:";
        d.indexes = IDX;
        let ns = Namespace::none();
        let keys = EntityKeys::new(&d, &ns, "9".into());
        let p = save(&d, &ns, &keys, &row(), WriteMode::Save, None);
        assert_eq!(
            args(&p)[6..20],
            [
                "9",
                "user:@ids",
                "user:@expiry",
                "user:{",
                "1",
                "}",
                "1",
                "u",
                "1",
                "username",
                "",
                "user:username:",
                "vlisi",
                "0"
            ]
        );
        let e = p.server_error(redis::RedisError::from((redis::ErrorKind::Extension, "x")));
        assert!(matches!(e, Error::Redis { .. }));
    }

    #[test]
    fn json_document_joins_column_texts() {
        let d = desc(Layout::Json);
        let r = Row {
            columns: vec![Some(br#""lisi""#.to_vec()), None],
            maps: vec![vec![]],
        };
        assert_eq!(json_document(&d, &r), br#"{"username":"lisi"}"#);
        let cols = json_columns(&d, "k", br#"{"username":"lisi","extra":1}"#).unwrap();
        assert_eq!(cols, vec![Some(br#""lisi""#.to_vec()), None]);
    }

    #[test]
    fn json_increment_is_exact_for_large_integers() {
        let d = desc(Layout::Json);
        let doc = apply_json_ops(
            &d,
            "k",
            br#"{"username":9007199254740993}"#,
            &[UpdateOp::Incr {
                col: 0,
                delta: b"1".to_vec(),
                float: false,
            }],
        )
        .unwrap();
        assert_eq!(doc, br#"{"username":9007199254740994}"#);
    }
}
