//! Schema evolution: the keyspace records the definition each type was
//! written with, a store compares it with its own on first use, and indexes
//! added to a deployed type are built online.
//!
//! - Each type has a schema record, `<key head>@schema` (`user:@schema`, a
//!   hash; in the slot of the type's first index shard on a cluster; see
//!   `keyspace::schema_key`, and `script/lua/schema.lua` for its fields).
//!   The first write of a type records its definition.
//! - A store announces its definition of a type before its first write, and
//!   again every half heartbeat while it writes (one round trip): the
//!   record remembers until when each definition may write. A definition
//!   the record has not met is compared with the current one
//!   ([`crate::schema::definition::diff`]): when it fits (new optional
//!   fields, new or dropped indexes) it becomes the current one, its new
//!   indexes *building*; when it does not, its writes are refused with
//!   [`Error::SchemaMismatch`].
//! - A query on an index that is not ready is refused with
//!   [`Error::IndexBuilding`] (unless the store was made with
//!   [`StoreBuilder::partial_indexes`](crate::StoreBuilder::partial_indexes)).
//! - [`Schema::apply`] deletes the keys of dropped indexes and walks the
//!   stored entities, indexing each from its stored value in one atomic
//!   write; the indexes become ready once a walk ran while no process of a
//!   definition that does not keep them wrote (see docs/schema-evolution.md).

mod apply;
mod record;

pub use apply::Applied;
pub use record::IndexState;

use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::definition::{
    describe_desc, diff, fingerprint, fingerprint_text, kind_name, renames, Change, Definition,
    Difference,
};
use crate::schema::entity::{Entity, EntityDesc};
use crate::schema::escape::{KeyLayout, Namespace};
use crate::script::{self, args::SchemaMode, args::SchemaStep};
use crate::store::Store;
use record::Record;
use redis::aio::ConnectionLike;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a store's announcement of its definition lets it write: it
/// announces again after half of it. `schema apply` waits this long at most
/// for the processes of an older definition to be gone.
pub(crate) const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);

/// Which definitions an announcement makes the keyspace's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adopt {
    /// One the record has not met, if it fits (a write).
    New,
    /// Also one it met, older than the current one, if it fits: `schema
    /// apply` of a rolled-back deploy.
    Known,
    /// Any, fitting or not: an operator's `reindex` or `repair`, which
    /// bring the stored data to the code's definition.
    Forced,
}

/// What a store knows of one type's record.
#[derive(Debug, Clone)]
struct Known {
    /// Writes go without announcing until then.
    write_until: Option<Instant>,
    /// When the record was last read.
    read_at: Instant,
    /// Per index of the type: ready for queries.
    ready: Vec<bool>,
    /// Why this definition may not write, in words.
    refused: Option<Vec<String>>,
    /// The current definition it was refused over for not fitting stored
    /// data: while that stays the current one, the next announcement
    /// refuses again without walking the keys to look for entities.
    refused_over: Option<String>,
}

/// The schema records a store has read, per definition (shared by its
/// clones).
#[derive(Debug, Clone)]
pub(crate) struct Tracking {
    heartbeat: Duration,
    partial: bool,
    types: Arc<Mutex<Types>>,
}

/// A map keyed by an address or a fingerprint (neither chosen by a
/// caller), hashed by one multiplication as `Seen` is: every write and
/// query looks both maps up.
type ByAddress<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<crate::seen::AddressHasher>>;

/// What a store knows, by fingerprint; and the fingerprint of each
/// description it met, by address (a description may have more than one:
/// a constant is copied where it is used), so that a write hashes nothing.
#[derive(Debug, Default)]
struct Types {
    known: ByAddress<u64, Known>,
    fingerprints: ByAddress<usize, u64>,
}

impl Types {
    fn fingerprint(&mut self, desc: &EntityDesc) -> u64 {
        *self
            .fingerprints
            .entry(crate::store::desc_id(desc))
            .or_insert_with(|| fingerprint(desc))
    }
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            heartbeat: DEFAULT_HEARTBEAT,
            partial: false,
            types: Default::default(),
        }
    }
}

impl Tracking {
    fn known(&self, desc: &EntityDesc) -> Option<Known> {
        // Nothing panics while holding the lock; a poisoned map is intact.
        let mut types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        let fp = types.fingerprint(desc);
        types.known.get(&fp).cloned()
    }

    /// Whether `desc`'s definition may write now without announcing
    /// itself (`None`: it must announce first): the write path's check, a
    /// clock read and a lookup, nothing copied.
    fn may_write(&self, desc: &EntityDesc) -> Option<std::result::Result<(), Vec<String>>> {
        let now = Instant::now();
        let mut types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        let fp = types.fingerprint(desc);
        let k = types.known.get(&fp)?;
        if k.write_until.is_none_or(|u| now >= u) {
            return None;
        }
        Some(match &k.refused {
            None => Ok(()),
            Some(words) => Err(words.clone()),
        })
    }

    /// Whether `desc`'s record was read less than a heartbeat ago and says
    /// every one of `indexes` is ready: the read path's check, a clock read
    /// and a lookup, nothing copied (every query and unique lookup asks).
    fn ready_for_reads(&self, desc: &EntityDesc, indexes: &[usize]) -> bool {
        let mut types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        let fp = types.fingerprint(desc);
        types.known.get(&fp).is_some_and(|k| {
            k.read_at.elapsed() < self.heartbeat && indexes.iter().all(|&i| k.ready[i])
        })
    }

    fn remember(&self, desc: &EntityDesc, known: Known) {
        let mut types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        let fp = types.fingerprint(desc);
        types.known.insert(fp, known);
    }
}

fn refusal(desc: &EntityDesc, words: &[String]) -> Error {
    Error::SchemaMismatch {
        type_name: desc.type_name,
        differences: words.to_vec(),
    }
}

/// The "<field> <kind>" of each index of `desc`, as `use` records them.
fn index_words(desc: &EntityDesc) -> Vec<String> {
    desc.indexes
        .iter()
        .map(|i| format!("{} {}", i.field, kind_name(i.kind)))
        .collect()
}

/// The index states a definition sets when it becomes the current one
/// over `stored`: its new indexes (and those of another kind) building,
/// the old kind's keys to delete, the indexes it lacks dropping, the fields
/// it renamed to rewrite.
fn adopted_states(code: &Definition, stored: &Definition) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (field, kind) in &code.indexes {
        match stored.index(field) {
            Some(old) if old == *kind => {}
            old => {
                out.push((
                    format!("index:{field}"),
                    format!("{} building", kind_name(*kind)),
                ));
                if let Some(old) = old {
                    out.push((format!("drop:{field}"), kind_name(old).to_owned()));
                }
            }
        }
    }
    for (field, kind) in &stored.indexes {
        if code.index(field).is_none() {
            out.push((
                format!("index:{field}"),
                format!("{} dropping", kind_name(*kind)),
            ));
        }
    }
    // Renamed fields: rewritten under their new names by the walk.
    for (old, new) in renames(stored, code) {
        out.push((format!("rename:{old}"), new));
    }
    out
}

/// The states of a type with nothing stored taking `desc`'s definition:
/// its indexes ready, every other index state, kind change and rename gone.
fn fresh_states(desc: &EntityDesc, rec: &Record) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = rec
        .fields
        .keys()
        .filter(|f| f.starts_with("index:") || f.starts_with("drop:") || f.starts_with("rename:"))
        .map(|f| (f.clone(), String::new()))
        .collect();
    for i in desc.indexes {
        out.retain(|(f, _)| f != &format!("index:{}", i.field));
        out.push((
            format!("index:{}", i.field),
            format!("{} ready", kind_name(i.kind)),
        ));
    }
    out
}

/// Why a definition older than the current one may not write: the indexes
/// the keyspace has ready that it does not keep, and the fields the current
/// definition renamed (rewritten already) that it writes under their old
/// names.
fn older_refusal(desc: &EntityDesc, rec: &Record) -> Option<Vec<String>> {
    let pending = rec.renames();
    let current = rec
        .current()
        .and_then(|c| rec.definition(c))
        .unwrap_or_default();
    let mut words: Vec<String> = current
        .columns
        .iter()
        .filter_map(|c| {
            let old = c.alias.as_ref()?;
            let writes_old = desc.columns.iter().any(|d| d.name == old);
            let applied = !pending.iter().any(|(o, _)| o == old);
            (writes_old && applied).then(|| {
                format!(
                    "field `{old}` was renamed `{}` in the keyspace and this definition, older \
                     than the keyspace's, writes the old name",
                    c.name
                )
            })
        })
        .collect();
    for (field, kind, state) in rec.indexes() {
        let kept = desc
            .indexes
            .iter()
            .any(|i| i.field == field && i.kind == kind);
        if state == IndexState::Ready && !kept {
            words.push(format!(
                "index `{field}` ({}) is ready and this definition, older than the keyspace's, \
                 does not keep it: its writes would leave it incomplete",
                kind_name(kind)
            ));
        }
    }
    (!words.is_empty()).then_some(words)
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Answers queries on building indexes from what they hold
    /// ([`StoreBuilder::partial_indexes`](crate::StoreBuilder::partial_indexes)).
    pub(crate) fn set_partial_indexes(&mut self, on: bool) {
        if let Some(t) = &mut self.schema {
            t.partial = on;
        }
    }

    /// Announces the definitions for `heartbeat` at a time
    /// ([`StoreBuilder::schema_heartbeat`](crate::StoreBuilder::schema_heartbeat)).
    pub(crate) fn set_schema_heartbeat(&mut self, heartbeat: Duration) {
        if let Some(t) = &mut self.schema {
            t.heartbeat = heartbeat.max(Duration::from_millis(10));
        }
    }

    /// Schema evolution: the plan, apply and status of each type's
    /// recorded definition.
    pub fn schema(&self) -> Schema<'_, C> {
        Schema { store: self }
    }

    /// True when the store tracks schema records (`StoreBuilder::layout_check`).
    pub(crate) fn tracks_schemas(&self) -> bool {
        self.schema.is_some()
    }

    /// Makes `desc`'s definition the keyspace's whether or not it fits the
    /// stored data (a repair or reindex brings the data to it).
    pub(crate) async fn adopt_forced(&self, desc: &'static EntityDesc) -> Result<()> {
        if self.tracks_schemas() {
            self.announce(desc, Adopt::Forced).await?;
        }
        Ok(())
    }

    /// Before a write of `desc`: the store's definition is announced (once
    /// per half heartbeat) and may write.
    pub(crate) async fn schema_write_check(&self, desc: &'static EntityDesc) -> Result<()> {
        let Some(t) = &self.schema else {
            return Ok(());
        };
        match t.may_write(desc) {
            Some(Ok(())) => return Ok(()),
            Some(Err(words)) => return Err(refusal(desc, &words)),
            None => {}
        }
        // Once per type and heartbeat: boxed out of every write's future.
        let known = Box::pin(self.announce(desc, Adopt::New)).await?.1;
        match &known.refused {
            Some(words) => Err(refusal(desc, words)),
            None => Ok(()),
        }
    }

    /// Before a query of `desc` through `indexes` (positions): each is
    /// ready, or the store reads partial indexes.
    pub(crate) async fn schema_read_check(
        &self,
        desc: &'static EntityDesc,
        indexes: impl IntoIterator<Item = usize>,
    ) -> Result<()> {
        let Some(t) = &self.schema else {
            return Ok(());
        };
        if t.partial {
            return Ok(());
        }
        // A query names a few indexes: held on the stack.
        let indexes: smallvec::SmallVec<[usize; 4]> = indexes.into_iter().collect();
        if t.ready_for_reads(desc, &indexes) {
            return Ok(());
        }
        // Not known, not ready, or read a heartbeat ago: read it again
        // (one HGETALL on the reading connection; nothing written).
        let rec = self.schema_record(desc).await?;
        let ready = rec.ready(desc);
        let known = match t.known(desc) {
            Some(k) => Known {
                read_at: Instant::now(),
                ready: ready.clone(),
                ..k
            },
            None => Known {
                write_until: None,
                read_at: Instant::now(),
                ready: ready.clone(),
                refused: None,
                refused_over: None,
            },
        };
        t.remember(desc, known);
        match indexes.iter().find(|&&i| !ready[i]) {
            None => Ok(()),
            Some(&i) => Err(not_ready(desc, &rec, i)),
        }
    }

    /// Before a walk of every `desc` through its ids set (`query().scan`): the
    /// set holds every stored entity once any index of the type is ready
    /// (every entity was then written by a definition with indexes, which
    /// keeps the set, or walked); while all are building, it may not.
    pub(crate) async fn schema_ids_check(&self, desc: &'static EntityDesc) -> Result<()> {
        if desc.indexes.is_empty() {
            return Ok(());
        }
        match self.schema_read_check(desc, 0..desc.indexes.len()).await {
            Err(e @ Error::IndexBuilding { .. }) => {
                let any_ready = self
                    .schema
                    .as_ref()
                    .and_then(|t| t.known(desc))
                    .is_some_and(|k| k.ready.iter().any(|&r| r));
                if any_ready {
                    Ok(())
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    /// One step on `desc`'s schema record.
    async fn schema_step(&self, desc: &EntityDesc, mode: SchemaMode<'_>) -> Result<Record> {
        let key = keyspace::schema_key(desc, &self.ns);
        let fp = fingerprint_text(fingerprint(desc));
        let call = SchemaStep {
            record: &key,
            fingerprint: &fp,
            mode,
        }
        .call();
        // Retried as the write it comes before is: announcing twice is
        // announcing once, and an adoption that was applied is found.
        let reply: Vec<String> = self
            .retrying(|| async {
                script::invoke(&mut self.connection(), self.sent(), &call)
                    .await
                    .map_err(|e| Error::redis(&key, e))
            })
            .await?;
        Record::from_reply(&key, reply)
    }

    /// Compares `desc`'s definition with the current one of `rec` and, if
    /// it fits (or `how` forces it, or the type stores nothing), makes it
    /// the keyspace's. Returns the record after, with status `new` when
    /// another definition came first (to compare again), or the
    /// differences that refuse it.
    async fn adopt(
        &self,
        desc: &'static EntityDesc,
        rec: &Record,
        how: Adopt,
        text: &str,
        heartbeat_ms: u64,
    ) -> Result<std::result::Result<Record, Vec<String>>> {
        let current = rec.current().unwrap_or_default().to_owned();
        let code = Definition::of(desc);
        let cluster = self.ns.layout() == KeyLayout::Cluster;
        let diffs: Vec<Difference> = match rec.definition(&current) {
            Some(stored) => diff(&stored, &code, cluster),
            None => vec![Difference {
                change: Change::Incompatible,
                what: format!("the recorded definition {current} does not read back"),
            }],
        };
        let bad: Vec<String> = diffs
            .iter()
            .filter(|d| d.change == Change::Incompatible)
            .map(|d| d.what.clone())
            .collect();
        // A definition that does not fit stored data fits no data: a type
        // with no entity stored takes any definition, every index ready.
        let empty = !bad.is_empty() && how != Adopt::Forced && !self.stores_entities(desc).await?;
        if !bad.is_empty() && how != Adopt::Forced && !empty {
            return Ok(Err(bad));
        }
        let states = if empty {
            fresh_states(desc, rec)
        } else {
            adopted_states(&code, &rec.definition(&current).unwrap_or_default())
        };
        let mut next = self
            .schema_step(
                desc,
                SchemaMode::Adopt {
                    text,
                    heartbeat_ms,
                    over: &current,
                    states,
                },
            )
            .await?;
        if next.status == "moved" {
            // Another definition came first: compare with it.
            next.status = "new".into();
        }
        Ok(Ok(next))
    }

    /// Announces the store's definition of `desc` to its record: recorded
    /// if the type has none, made the keyspace's as `how` says. Returns the
    /// record and what the store now knows.
    async fn announce(&self, desc: &'static EntityDesc, how: Adopt) -> Result<(Record, Known)> {
        let Some(t) = &self.schema else {
            return Err(Error::InvalidQuery {
                reason: "this store does not track schemas (made with `Store::new`; build it with `Store::builder()`, which checks)",
            });
        };
        let text = describe_desc(desc);
        let ours = fingerprint_text(fingerprint(desc));
        let heartbeat_ms = t.heartbeat.as_millis() as u64;
        let sent = Instant::now();
        let mut rec = self
            .schema_step(
                desc,
                SchemaMode::Use {
                    text: &text,
                    heartbeat_ms,
                    indexes: index_words(desc),
                    eviction_allowed: self.memory_policy().eviction_allowed,
                },
            )
            .await?;
        self.memory_policy().judge(&rec.status, &rec.policy)?;
        let mut refused = None;
        let mut refused_over = None;
        let before = t.known(desc);
        for _ in 0..8 {
            let adopt = rec.status == "new" || (how != Adopt::New && rec.current() != Some(&ours));
            if !adopt {
                break;
            }
            let current = rec.current().map(str::to_owned);
            // Refused over the same current definition before: the stored
            // data has not changed definition, and a walk of every key to
            // find it empty again every half heartbeat would load the
            // server for a deploy that cannot write anyway.
            if let Some(k) = before.as_ref().filter(|k| {
                how != Adopt::Forced && k.refused_over.is_some() && k.refused_over == current
            }) {
                refused.clone_from(&k.refused);
                refused_over = current;
                break;
            }
            match self.adopt(desc, &rec, how, &text, heartbeat_ms).await? {
                Err(bad) => {
                    refused = Some(bad);
                    refused_over = current;
                    break;
                }
                Ok(next) => rec = next,
            }
        }
        if refused.is_none() && rec.current() != Some(&ours) {
            refused = older_refusal(desc, &rec);
        }
        if refused.is_none() && rec.status == "new" {
            refused = Some(vec![
                "the keyspace's definition kept changing while this one was compared".into(),
            ]);
        }
        let known = Known {
            write_until: Some(sent + t.heartbeat / 2),
            read_at: Instant::now(),
            ready: rec.ready(desc),
            refused,
            refused_over,
        };
        t.remember(desc, known.clone());
        Ok((rec, known))
    }
}

/// The refusal of a query on index `i` of `desc`, with its state in words.
fn not_ready(desc: &EntityDesc, rec: &Record, i: usize) -> Error {
    let index = &desc.indexes[i];
    let state = match rec.state(index.field, index.kind) {
        Some(IndexState::Building) => match rec.walk() {
            Some(w) => format!("building ({} stored entities indexed so far)", w.walked),
            None => "building (waiting for `schema apply`)".to_owned(),
        },
        Some(IndexState::Dropping) => "being dropped by a newer definition".to_owned(),
        Some(IndexState::Ready) => "ready".to_owned(),
        None => format!(
            "not built: the keyspace's definition has no {} index `{}` yet",
            kind_name(index.kind),
            index.field
        ),
    };
    Error::IndexBuilding {
        type_name: desc.type_name,
        index: index.field,
        state,
    }
}

/// Schema evolution for a store: `store.schema()`.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// # #[derive(RedisEntity)] struct Item { #[pk] id: u64, #[index] color: String }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let plan = store.schema().plan::<Item>().await?;
/// print!("{plan}"); // Item: index `color` (equality) is new: ...
/// let applied = store.schema().apply::<Item>().await?;
/// println!("{} entities indexed", applied.indexed);
/// # Ok(()) }
/// ```
pub struct Schema<'s, C> {
    store: &'s Store<C>,
}

impl<C> std::fmt::Debug for Schema<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schema")
    }
}

/// The rate `schema apply` walks stored entities at, entities per second,
/// as measured on a 2-core machine over loopback (benches/NOTES.md,
/// *Schema evolution*): what [`SchemaPlan::estimate`] assumes. A remote
/// server's round trips slow it; bigger machines speed it.
pub const APPLY_RATE: u64 = 45_000;

/// What applying the code's definition of a type would do: the
/// differences from the recorded one, and the work.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaPlan {
    /// The Rust type.
    pub type_name: &'static str,
    /// The fingerprint of the code's definition.
    pub code: String,
    /// The fingerprint of the keyspace's current definition (`None`:
    /// nothing recorded yet; the first write records the code's).
    pub recorded: Option<String>,
    /// Each difference, classified, in words.
    pub differences: Vec<Difference>,
    /// The indexes `apply` builds (new, of another kind, or building).
    pub build: Vec<&'static str>,
    /// The indexes whose keys `apply` deletes.
    pub drop: Vec<String>,
    /// How many stored entities a build walks (`None` when nothing is
    /// built). Read from the type's sets of ids; a type whose sets do not
    /// list every entity yet (no index of it is ready: its first index) is
    /// counted by a SCAN of the keyspace, one round trip per 1,000 keys.
    pub entities: Option<u64>,
}

impl SchemaPlan {
    /// About how long `apply`'s walk takes: [`SchemaPlan::entities`] at
    /// [`APPLY_RATE`] (`None` when nothing is built). The walk runs in
    /// bounded steps while the application writes; this is its length, not
    /// a pause.
    pub fn estimate(&self) -> Option<std::time::Duration> {
        self.entities
            .map(|n| std::time::Duration::from_secs_f64(n as f64 / APPLY_RATE as f64))
    }

    /// True when applying changes nothing.
    pub fn is_empty(&self) -> bool {
        self.build.is_empty() && self.drop.is_empty() && self.differences.is_empty()
    }

    /// True when the code's definition does not fit the stored data: its
    /// writes are refused.
    pub fn is_incompatible(&self) -> bool {
        self.differences
            .iter()
            .any(|d| d.change == Change::Incompatible)
    }
}

impl std::fmt::Display for SchemaPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.recorded {
            None => writeln!(
                f,
                "{}: nothing recorded; the first write records definition {}",
                self.type_name, self.code
            )?,
            Some(r) if self.is_empty() => {
                writeln!(f, "{}: up to date (definition {r})", self.type_name)?
            }
            Some(r) => writeln!(f, "{}: definition {r} -> {}", self.type_name, self.code)?,
        }
        for d in &self.differences {
            writeln!(f, "  {d}")?;
        }
        if !self.build.is_empty() {
            let n = match (self.entities, self.estimate()) {
                (Some(n), Some(t)) => format!(
                    "{n} stored entities, about {:.1} s at {APPLY_RATE} entities/s",
                    t.as_secs_f64()
                ),
                _ => "every stored entity".into(),
            };
            writeln!(f, "  apply builds {}: walks {n}", self.build.join(", "))?;
        }
        if !self.drop.is_empty() {
            writeln!(f, "  apply deletes the keys of {}", self.drop.join(", "))?;
        }
        Ok(())
    }
}

/// The state of a type's recorded schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaStatus {
    /// The Rust type.
    pub type_name: &'static str,
    /// The keyspace's current definition (`None`: nothing recorded).
    pub current: Option<String>,
    /// Every definition the record met, oldest first: fingerprint, and
    /// whether a process running it may still write.
    pub definitions: Vec<(String, bool)>,
    /// Each index the record names: field, kind (`equality`, `unique`,
    /// `tags`, `prefix`, `sorted`), state.
    pub indexes: Vec<(String, &'static str, IndexState)>,
    /// Stored entities indexed by the walk under way, if one is.
    pub walked: Option<u64>,
}

impl std::fmt::Display for SchemaStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(current) = &self.current else {
            return writeln!(f, "{}: nothing recorded", self.type_name);
        };
        writeln!(f, "{}: definition {current}", self.type_name)?;
        for (fp, active) in &self.definitions {
            if fp != current {
                let state = if *active { "writing" } else { "gone" };
                writeln!(f, "  older definition {fp}: {state}")?;
            }
        }
        for (field, kind, state) in &self.indexes {
            writeln!(f, "  index {field} ({kind}): {}", state.name())?;
        }
        if let Some(w) = self.walked {
            writeln!(f, "  apply under way: {w} entities indexed")?;
        }
        Ok(())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Schema<'_, C> {
    /// What applying `E`'s definition would do, read from the record
    /// without writing anything: each difference from the keyspace's
    /// current definition, the indexes to build and to drop.
    pub async fn plan<E: Entity>(&self) -> Result<SchemaPlan> {
        let desc = E::DESC;
        let rec = self.store.schema_record(E::DESC).await?;
        let code = Definition::of(desc);
        let cluster = self.store.ns.layout() == KeyLayout::Cluster;
        let mut plan = SchemaPlan {
            type_name: desc.type_name,
            code: fingerprint_text(fingerprint(desc)),
            recorded: rec.current().map(str::to_owned),
            differences: Vec::new(),
            build: Vec::new(),
            drop: Vec::new(),
            entities: None,
        };
        let Some(current) = rec.current() else {
            return Ok(plan);
        };
        let stored = rec.definition(current).unwrap_or_default();
        if current != plan.code {
            plan.differences = diff(&stored, &code, cluster);
        }
        let states: Vec<(String, String)> = if current == plan.code {
            Vec::new()
        } else {
            adopted_states(&code, &stored)
        };
        for i in desc.indexes {
            let building = rec.state(i.field, i.kind) != Some(IndexState::Ready)
                || states
                    .iter()
                    .any(|(f, _)| f == &format!("index:{}", i.field));
            if building {
                plan.build.push(i.field);
            }
        }
        for (field, _, state) in rec.indexes() {
            let gone = code.index(&field).is_none();
            if state == IndexState::Dropping || gone {
                plan.drop.push(field);
            }
        }
        for (field, _) in rec.stale_kinds() {
            if !plan.drop.contains(&field) {
                plan.drop.push(field);
            }
        }
        if !plan.build.is_empty() {
            // The sets of ids hold every stored entity once an index of the
            // type is ready; before (a type's first index), the walk's size
            // is counted by a SCAN.
            let listed = rec.indexes().iter().any(|i| i.2 == IndexState::Ready);
            plan.entities = Some(if listed {
                self.store.count_ids(desc).await?.unwrap_or(0)
            } else {
                self.store.count_by_scan(desc).await?
            });
        }
        Ok(plan)
    }

    /// The state of `E`'s recorded schema: the definitions met, each
    /// index's state, the walk under way. Nothing is written.
    pub async fn status<E: Entity>(&self) -> Result<SchemaStatus> {
        let desc = E::DESC;
        let rec = self.store.schema_record(E::DESC).await?;
        let now = self.store.server_ms().await?;
        Ok(SchemaStatus {
            type_name: desc.type_name,
            current: rec.current().map(str::to_owned),
            definitions: rec
                .definitions()
                .into_iter()
                .map(|(fp, _, seen)| (fp, seen >= now))
                .collect(),
            indexes: rec
                .indexes()
                .into_iter()
                .map(|(f, k, s)| (f, kind_name(k), s))
                .collect(),
            walked: rec.walk().map(|w| w.walked),
        })
    }
}

/// Where the entity keys of `desc`'s type may be, for a SCAN: each of its
/// spaces in its own spelling, and its spelling without indexes (what a
/// definition without them wrote; on one server the same, walked once),
/// with the SCAN pattern of each.
fn entity_walks(desc: &EntityDesc, ns: &Namespace) -> Vec<(EntityDesc, Namespace, String)> {
    let mut walks: Vec<(EntityDesc, Namespace)> = keyspace::spaces(desc, ns)
        .into_iter()
        .map(|space| (*desc, space))
        .collect();
    walks.push((crate::store::unplaced::unindexed(desc), ns.clone()));
    let mut out: Vec<(EntityDesc, Namespace, String)> = Vec::new();
    for (d, space) in walks {
        let pattern = keyspace::entity_scan_pattern(&d, &space);
        if !out.iter().any(|(_, _, p)| *p == pattern) {
            out.push((d, space, pattern));
        }
    }
    out
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// How many entities the type's id sets hold (`None` for a type that
    /// keeps none: one without indexes).
    async fn count_ids(&self, desc: &EntityDesc) -> Result<Option<u64>> {
        let mut total = 0;
        for space in keyspace::spaces(desc, &self.ns) {
            total += self.count_id_sets(desc, &space).await?;
        }
        Ok((total > 0).then_some(total))
    }

    /// True when some entity of `desc`'s type is stored: in an id set of
    /// its spaces, or as a key of its own spelling or of its spelling
    /// without indexes (a SCAN of every master's keys: only when a
    /// definition that does not fit is met).
    async fn stores_entities(&self, desc: &EntityDesc) -> Result<bool> {
        if self.count_ids(desc).await?.is_some() {
            return Ok(true);
        }
        // Page by page, stopping at the first entity key: nothing kept.
        for (d, space, pattern) in entity_walks(desc, &self.ns) {
            let mut found = false;
            self.each_page(
                &pattern,
                |page| async move { Ok(page) },
                |page| {
                    found = found
                        || page
                            .iter()
                            .any(|k| keyspace::member_of_key(&d, &space, k).is_some())
                },
            )
            .await?;
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// How many entities of `desc`'s type are stored, counted by a SCAN of
    /// every key (of every master) for a type that keeps no set of ids (one
    /// without indexes yet): one round trip per 1,000 keys of the keyspace,
    /// each a bounded call. A strings-layout entity has a key per column:
    /// its members are kept to count each once (the memory of the
    /// members); any other entity has one entity key, counted as met.
    async fn count_by_scan(&self, desc: &EntityDesc) -> Result<u64> {
        let mut members = std::collections::HashSet::new();
        let mut keys = 0u64;
        let strings = desc.layout == crate::schema::entity::Layout::Strings;
        for (d, space, pattern) in entity_walks(desc, &self.ns) {
            self.each_page(
                &pattern,
                |page| async move { Ok(page) },
                |page| {
                    for k in &page {
                        let Some(m) = keyspace::member_of_key(&d, &space, k) else {
                            continue;
                        };
                        if strings {
                            members.insert(m);
                        } else if keyspace::entity_key(&d, &space, &m) == *k {
                            // The entity key itself, not a key under it.
                            keys += 1;
                        }
                    }
                },
            )
            .await?;
        }
        Ok(keys + members.len() as u64)
    }

    /// `desc`'s schema record, read with one HGETALL on the reading
    /// connection (nothing written).
    async fn schema_record(&self, desc: &EntityDesc) -> Result<Record> {
        let key = keyspace::schema_key(desc, &self.ns);
        let fields = self.read_cmd(redis::cmd("HGETALL").arg(&key), &key).await?;
        Ok(Record::from_fields(fields))
    }

    /// The server's clock, ms.
    async fn server_ms(&self) -> Result<u64> {
        let (s, us): (u64, u64) = self.read_cmd(&redis::cmd("TIME"), "TIME").await?;
        Ok(s * 1000 + us / 1000)
    }
}
