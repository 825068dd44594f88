//! The checker of `verify` as a state machine without I/O that works page by
//! page, so that what it holds does not grow with the number of entities:
//!
//! 1. **Entities to indexes.** Each `SCAN` page of entity keys is read; each
//!    stored entity's expected entries are probed where they must be (`GET`
//!    of its unique key, `SISMEMBER` of its sets and of the set of all ids,
//!    `ZSCORE` in a sorted set), and its relation register, relation sets
//!    and timelines are followed.
//! 2. **Indexes to entities.** Each index is walked in pages (a `SCAN` page
//!    of its key family, then `GET` or `SSCAN` of those keys; or `ZSCAN` of
//!    its sorted set), and the entity of each listed member is asked for the
//!    indexed value (`HMGET` of that field in the hash layout, the whole
//!    entity in the others): an entry its entity does not hold is stale.
//!    Then the set of all ids, by the presence of each member's entity: the
//!    one set, then (an integer pk) the directory of buckets a page at a
//!    time, each page's buckets read whole.
//!
//! Between pages it keeps only the report so far, so its memory grows with
//! the violations found, not with the data (an earlier form held every
//! expected and listed entry until the end: about 1.9 KB per entity).
//!
//! This file holds the state, the requests and the report; `pages/entities.rs`
//! the entity side, `pages/indexes.rs` the index side and the reads of
//! listed members' entities.

use super::{Progress, Report, Violation};
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::query;
use crate::plan::read::read_whole;
use crate::schema::entity::{EntityDesc, IndexKind, IndexSource, Layout, Row};
use crate::schema::escape::Namespace;
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};

mod entities;
mod indexes;

use entities::Listing;

/// Entities (or listed members) read per round trip.
const CHUNK: usize = 500;
/// Index keys read per round trip: a page of each.
const KEYS_PER_TRIP: usize = 50;
/// Members asked of an index set per page (`SSCAN .. COUNT`): with
/// [`KEYS_PER_TRIP`], a round trip brings about 10,000 members at most,
/// however big the sets, and the members to look up stay as many.
const SET_PAGE: usize = 200;
/// Entries asked of the set of all ids per page.
const ZSET_PAGE: usize = 1000;
/// Entries asked of a sorted index per page (`ZSCAN .. COUNT`): fewer than
/// of a set, since each comes with its score formatted as text. Measured on
/// a 10,000,000-member sorted set: a page of 1,000 took the server 2.4 ms
/// on average and up to 19.5 ms, a page of 250 0.6 ms and at most 7.5 ms
/// (benches/NOTES.md).
const SORTED_PAGE: usize = 250;
/// The bit of the ids walk's cursor that says it is in the directory of
/// buckets (`keyspace::bucketed_ids`); below it, in the one set.
const IDS_BUCKETS: u64 = 1 << 62;
/// Ids a bucket holds at most.
const BUCKET_IDS: usize = 100;

/// The probe of a stored entity's id in a type with buckets, in one reply:
/// 1 if its bucket lists it, 2 if the one set written before buckets does,
/// 4 if the directory lists its bucket.
const BUCKETED_ID_PROBE: &str = "return redis.call('SISMEMBER', KEYS[1], ARGV[1]) \
    + 2 * redis.call('SISMEMBER', KEYS[2], ARGV[1]) \
    + 4 * redis.call('SISMEMBER', KEYS[3], ARGV[2])";

/// What the checker asks for next.
enum Step {
    ScanEntities {
        cursor: u64,
    },
    ReadEntities {
        offset: usize,
    },
    ProbeEntries {
        offset: usize,
    },
    ReadRegisters {
        offset: usize,
    },
    ReadListings {
        offset: usize,
    },
    CheckReferences {
        offset: usize,
    },
    /// Reads the entities of `checks`, then goes on with `resume`.
    ReadChecks {
        offset: usize,
    },
    ScanIndex {
        index: usize,
        cursor: u64,
    },
    /// The first page of each key an index `SCAN` page found; `cursor` is
    /// where that `SCAN` goes on.
    ReadIndex {
        index: usize,
        cursor: u64,
        offset: usize,
    },
    /// The next pages of the sets that had more.
    ReadIndexMore {
        index: usize,
        cursor: u64,
    },
    /// A page of the one set of all ids, or (from [`IDS_BUCKETS`] on) of
    /// the directory of a type's id buckets.
    ReadIds {
        cursor: u64,
    },
    /// The buckets a directory page named, read whole (at most 100 ids
    /// each); the directory's walk goes on at `cursor`.
    ReadBuckets {
        cursor: u64,
        buckets: Vec<String>,
    },
    Done,
}

/// An entry to look for: `index` (`None`: the set of all ids), the value it
/// lists (escaped value, tag, score text), and the member.
#[derive(Default)]
struct Entry {
    index: Option<usize>,
    value: Vec<u8>,
    member: String,
}

/// What a [`Check`] decides once the member's entity says whether it holds
/// the entry.
#[derive(Default)]
enum Then {
    /// An entry found listed: stale unless the entity holds it.
    #[default]
    Stale,
    /// A unique key that names `member` while `candidate` holds its value:
    /// both hold it (a duplicate), or `candidate` is missing from it.
    Owner { candidate: String },
}

#[derive(Default)]
struct Check {
    entry: Entry,
    then: Then,
}

/// A stored entity of the page being checked.
#[derive(Default)]
struct Live {
    member: String,
    /// The keys under it this page's `SCAN` found.
    scanned: Vec<String>,
    /// Whether its entity key is among them: it is checked in the page
    /// that holds its entity key (and only there, should another page
    /// hold other keys of it).
    checked_here: bool,
}

/// Decodes the row of a member as the entity type would; the field and the
/// reason of a failure.
pub(crate) type RowCheck = fn(member: &str, row: &Row) -> Option<(&'static str, String)>;

/// Whether a member is one that a pk of the type writes.
pub(crate) type MemberCheck = fn(member: &str) -> bool;

/// The [`MemberCheck`] of entity type `E`: its pk reads the member back
/// (strictly: only what it writes).
pub(crate) fn member_check<E: crate::schema::entity::Entity>(member: &str) -> bool {
    E::read_member(member).is_some()
}

/// The [`RowCheck`] of entity type `E`.
pub(crate) fn row_check<E: crate::schema::entity::Entity>(
    member: &str,
    row: &Row,
) -> Option<(&'static str, String)> {
    let pk = E::read_member(member)?;
    match E::from_row(&pk, row.clone()) {
        Ok(_) => None,
        Err(e) => Some((
            e.field,
            match e.kind {
                crate::error::FieldErrorKind::Missing => "missing".to_owned(),
                crate::error::FieldErrorKind::Parse { value, reason } => {
                    format!("{value:?}: {reason}")
                }
            },
        )),
    }
}

fn text(v: Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

fn list(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        _ => Vec::new(),
    }
}

/// The reply of a request of one command (`Nil` for none).
fn first_reply(replies: Vec<Value>) -> Value {
    replies.into_iter().next().unwrap_or(Value::Nil)
}

/// A cursor walk's reply (`SCAN`, `SSCAN`, `ZSCAN`): the next cursor and
/// the items (for `ZSCAN` the flat `member, score, ...` list).
fn cursor_reply(v: Value) -> (u64, Vec<Value>) {
    let mut parts = list(v).into_iter();
    let cursor = parts
        .next()
        .and_then(text)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (cursor, parts.next().map(list).unwrap_or_default())
}

/// `SCAN` / `SSCAN` reply: the next cursor and the keys or members.
fn scan_reply(v: Value) -> (u64, Vec<String>) {
    let (cursor, items) = cursor_reply(v);
    (cursor, items.into_iter().filter_map(text).collect())
}

/// A score as `ZSCORE` answers it (a bulk string, or a double in RESP3).
fn score_of(v: Value) -> Option<f64> {
    match v {
        Value::Double(d) => Some(d),
        v => query::parse_score(&text(v)?),
    }
}

/// True for an error reply of a command on a key of another type.
fn is_wrong_type(v: &Value) -> bool {
    matches!(v, Value::ServerError(e) if e.code() == "WRONGTYPE")
}

/// What is found so far: the violations by kind, in the order the report
/// lists them, and the unique keys whose holders are being worked out.
#[derive(Default)]
struct Found {
    stale: Vec<Violation>,
    missing: Vec<Violation>,
    /// Unique key -> the entities found holding its value without being
    /// its owner, and the owner if it holds it too.
    unique: BTreeMap<String, BTreeSet<String>>,
    stale_ids: Vec<Violation>,
    missing_ids: Vec<Violation>,
    one_sided: Vec<Violation>,
    /// Keys of gone entities, and (after them in the report) members
    /// listed whose entity is gone.
    leftovers: Vec<Violation>,
    dangling: Vec<Violation>,
    unreadable: Vec<Violation>,
    /// Registers, sets and lists of the wrong type already reported.
    wrong_typed: BTreeSet<String>,
    /// Entity keys already reported unreadable or undecodable.
    unreadable_keys: BTreeSet<String>,
    /// Member -> its position in `leftovers`.
    leftover_at: BTreeMap<String, usize>,
}

impl Found {
    /// Adds a [`Violation::WrongType`] for `key`, once.
    fn wrong_type(&mut self, key: &str, wanted: &'static str) {
        if self.wrong_typed.insert(key.to_owned()) {
            self.unreadable.push(Violation::WrongType {
                key: key.to_owned(),
                wanted,
            });
        }
    }

    /// Adds a [`Violation::Unreadable`] or [`Violation::Undecodable`] once
    /// per key (other keys of the entity may come in another page and
    /// have it read again).
    fn unreadable(&mut self, v: Violation) {
        let key = match &v {
            Violation::Unreadable { key, .. } | Violation::Undecodable { key, .. } => key,
            _ => "",
        };
        if key.is_empty() || self.unreadable_keys.insert(key.to_owned()) {
            self.unreadable.push(v);
        }
    }

    /// Adds the leftover keys of a gone entity, to those another page found.
    fn leftover(&mut self, member: &str, keys: Vec<String>) {
        if let Some(&at) = self.leftover_at.get(member) {
            if let Violation::Leftover { keys: k, .. } = &mut self.leftovers[at] {
                k.extend(keys);
            }
            return;
        }
        self.leftover_at
            .insert(member.to_owned(), self.leftovers.len());
        self.leftovers.push(Violation::Leftover {
            member: member.to_owned(),
            keys,
        });
    }
}

/// The checker: `next_request` gives the pipeline to send, `feed` takes its
/// replies. The async and the blocking store drive the same machine, each
/// with its own connection.
pub(crate) struct Verifier<'a> {
    desc: &'static EntityDesc,
    ns: &'a Namespace,
    step: Step,
    /// Per index: the prefix of its entry keys, and its sorted set.
    prefixes: Vec<String>,
    zsets: Vec<String>,
    // The entity page being checked.
    /// Where the entity `SCAN` goes on after this page.
    entity_cursor: u64,
    /// Its members and the keys found under each.
    page: Vec<(String, Vec<String>)>,
    probes: Vec<Entry>,
    live: Vec<Live>,
    listings: Vec<Listing>,
    /// (listing, member it lists).
    references: Vec<(usize, String)>,
    // The index page being checked.
    index_keys: Vec<String>,
    /// The sets of the index being read that have more pages: (position in
    /// `index_keys`, cursor).
    index_more: Vec<(usize, u64)>,
    /// Entities to read for listed entries, and the step after them.
    checks: Vec<Check>,
    resume: Option<Step>,
    /// Counts for the report and the progress.
    entities: usize,
    entities_read: usize,
    index_entries: usize,
    ids_seen: usize,
    found: Found,
    /// Decodes a stored row as the Rust type would: the field and reason of
    /// the first error.
    decodes: Option<RowCheck>,
    /// Whether a member is one some pk of the type writes.
    members_valid: Option<MemberCheck>,
}

impl<'a> Verifier<'a> {
    pub fn new(desc: &'static EntityDesc, ns: &'a Namespace) -> Self {
        Verifier {
            desc,
            ns,
            step: Step::ScanEntities { cursor: 0 },
            prefixes: desc
                .indexes
                .iter()
                .map(|i| keyspace::index_prefix(desc, ns, i.field))
                .collect(),
            zsets: desc
                .indexes
                .iter()
                .map(|i| keyspace::index_zset(desc, ns, i.field))
                .collect(),
            entity_cursor: 0,
            page: Vec::new(),
            probes: Vec::new(),
            live: Vec::new(),
            listings: Vec::new(),
            references: Vec::new(),
            index_keys: Vec::new(),
            index_more: Vec::new(),
            checks: Vec::new(),
            resume: None,
            entities: 0,
            entities_read: 0,
            index_entries: 0,
            ids_seen: 0,
            found: Found::default(),
            decodes: None,
            members_valid: None,
        }
    }

    /// Also reports rows that do not decode as the entity type.
    pub fn decoding(mut self, check: RowCheck) -> Self {
        self.decodes = Some(check);
        self
    }

    /// Reports the keys whose member no pk of the type writes as
    /// [`Violation::ForeignKey`], and checks nothing else of them.
    pub fn members(mut self, check: MemberCheck) -> Self {
        self.members_valid = Some(check);
        self
    }

    /// The key of an entry of a unique or set index, as sent (the value's
    /// bytes as they are).
    fn entry_key_bytes(&self, index: usize, value: &[u8]) -> Vec<u8> {
        let mut key = self.prefixes[index].clone().into_bytes();
        key.extend_from_slice(value);
        key
    }

    /// The same key as the report names it.
    fn entry_key(&self, index: usize, value: &[u8]) -> String {
        String::from_utf8_lossy(&self.entry_key_bytes(index, value)).into_owned()
    }

    /// The next pipeline to send, or `None` when the report is ready.
    pub fn next_request(&self) -> Option<redis::Pipeline> {
        let (desc, ns) = (self.desc, self.ns);
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        match &self.step {
            Step::ScanEntities { cursor } => keyspace::nodes::scan_page(
                &mut pipe,
                *cursor,
                &keyspace::entity_scan_pattern(desc, ns),
            ),
            Step::ReadEntities { offset } => {
                for (m, _) in chunk(&self.page, *offset) {
                    read_whole(desc, &EntityKeys::new(desc, ns, m.clone()), &mut pipe);
                }
            }
            Step::ProbeEntries { offset } => {
                for e in chunk(&self.probes, *offset) {
                    self.request_probe(&mut pipe, e);
                }
            }
            Step::ReadRegisters { offset } => {
                for l in chunk(&self.live, *offset) {
                    pipe.cmd("HGETALL")
                        .arg(keyspace::relation_register(&keyspace::entity_key(
                            desc, ns, &l.member,
                        )));
                }
            }
            Step::ReadListings { offset } => self.request_listings(&mut pipe, *offset),
            Step::CheckReferences { offset } => self.request_references(&mut pipe, *offset),
            Step::ReadChecks { offset } => {
                for c in chunk(&self.checks, *offset) {
                    self.request_holder(&mut pipe, &c.entry);
                }
            }
            Step::ScanIndex { index, cursor } => self.request_index(&mut pipe, *index, *cursor),
            Step::ReadIndex { index, offset, .. } => {
                let end = (offset + KEYS_PER_TRIP).min(self.index_keys.len());
                for k in &self.index_keys[*offset..end] {
                    match desc.indexes[*index].kind {
                        IndexKind::Unique => pipe.cmd("GET").arg(k),
                        _ => pipe.cmd("SSCAN").arg(k).arg(0).arg("COUNT").arg(SET_PAGE),
                    };
                }
            }
            Step::ReadIndexMore { .. } => {
                for (at, cursor) in self.index_more.iter().take(KEYS_PER_TRIP) {
                    pipe.cmd("SSCAN")
                        .arg(&self.index_keys[*at])
                        .arg(*cursor)
                        .arg("COUNT")
                        .arg(SET_PAGE);
                }
            }
            // A page of the set of all ids at a time: one `SMEMBERS` of a
            // million ids held the server (and this round trip) for a second.
            Step::ReadIds { cursor } if cursor & IDS_BUCKETS == 0 => {
                pipe.cmd("SSCAN")
                    .arg(keyspace::ids_key(desc, ns))
                    .arg(*cursor)
                    .arg("COUNT")
                    .arg(ZSET_PAGE);
            }
            Step::ReadIds { cursor } => {
                pipe.cmd("SSCAN")
                    .arg(keyspace::ids_directory(&keyspace::ids_key(desc, ns)))
                    .arg(cursor & !IDS_BUCKETS)
                    .arg("COUNT")
                    .arg(ZSET_PAGE / BUCKET_IDS);
            }
            Step::ReadBuckets { buckets, .. } => {
                let ids = keyspace::ids_key(desc, ns);
                for bucket in buckets {
                    pipe.cmd("SMEMBERS").arg(format!("{ids}:{bucket}"));
                }
            }
            Step::Done => return None,
        }
        Some(pipe)
    }

    /// Asks whether the entry a stored entity needs is there.
    fn request_probe(&self, pipe: &mut redis::Pipeline, e: &Entry) {
        let Some(index) = e.index else {
            let ids = keyspace::ids_key(self.desc, self.ns);
            let bucket = keyspace::ids_bucket(&e.member);
            if let (true, Some(bucket)) = (keyspace::bucketed_ids(self.desc), bucket) {
                pipe.cmd("EVAL")
                    .arg(BUCKETED_ID_PROBE)
                    .arg(3)
                    .arg(format!("{ids}:{bucket}"))
                    .arg(&ids)
                    .arg(keyspace::ids_directory(&ids))
                    .arg(&e.member)
                    .arg(bucket);
            } else {
                pipe.cmd("SISMEMBER").arg(ids).arg(&e.member);
            }
            return;
        };
        match self.desc.indexes[index].kind {
            IndexKind::Unique => pipe.cmd("GET").arg(self.entry_key_bytes(index, &e.value)),
            IndexKind::Sorted => pipe.cmd("ZSCORE").arg(&self.zsets[index]).arg(&e.member),
            IndexKind::Prefix => {
                let mut listed = e.value.clone();
                listed.push(b':');
                listed.extend_from_slice(e.member.as_bytes());
                pipe.cmd("ZSCORE").arg(&self.zsets[index]).arg(listed)
            }
            IndexKind::Equality | IndexKind::Tags => pipe
                .cmd("SISMEMBER")
                .arg(self.entry_key_bytes(index, &e.value))
                .arg(&e.member),
        };
    }

    /// Reads index `index`: a `ZSCAN` page of the one sorted set of a
    /// prefix index (its members) or of a sorted index (with the scores);
    /// a SCAN page of the key family of any other. (Pages, not the sorted
    /// set whole: one `ZRANGE 0 -1` of a million entries held the server,
    /// and this round trip, for a second.)
    fn request_index(&self, pipe: &mut redis::Pipeline, index: usize, cursor: u64) {
        let (desc, ns) = (self.desc, self.ns);
        let idx = &desc.indexes[index];
        if matches!(idx.kind, IndexKind::Prefix | IndexKind::Sorted) {
            pipe.cmd("ZSCAN")
                .arg(&self.zsets[index])
                .arg(cursor)
                .arg("COUNT")
                .arg(SORTED_PAGE);
        } else {
            keyspace::nodes::scan_page(
                pipe,
                cursor,
                &keyspace::index_scan_pattern(desc, ns, idx.field),
            );
        }
    }

    /// Takes the replies of the last request.
    pub fn feed(&mut self, replies: Vec<Value>) -> Result<()> {
        let desc = self.desc;
        self.step = match std::mem::replace(&mut self.step, Step::Done) {
            Step::ScanEntities { .. } => self.feed_entity_scan(first_reply(replies)),
            Step::ReadEntities { offset } => self.feed_entities(offset, replies),
            Step::ProbeEntries { offset } => self.feed_probes(offset, replies),
            Step::ReadRegisters { offset } => self.feed_registers(offset, replies),
            Step::ReadListings { offset } => self.feed_listings(offset, replies),
            Step::CheckReferences { offset } => self.feed_references(offset, replies),
            Step::ReadChecks { offset } => self.feed_checks(offset, replies),
            Step::ScanIndex { index, .. }
                if matches!(
                    desc.indexes[index].kind,
                    IndexKind::Prefix | IndexKind::Sorted
                ) =>
            {
                self.feed_zset_page(index, first_reply(replies))
            }
            Step::ScanIndex { index, .. } => self.feed_index_scan(index, first_reply(replies)),
            Step::ReadIndex {
                index,
                cursor,
                offset,
            } => self.feed_index_keys(index, cursor, offset, replies),
            Step::ReadIndexMore { index, cursor } => self.feed_index_more(index, cursor, replies),
            Step::ReadIds { cursor } => self.feed_ids(cursor, first_reply(replies)),
            Step::ReadBuckets { cursor, buckets } => self.feed_buckets(cursor, &buckets, replies),
            Step::Done => {
                return Err(Error::UnexpectedReply {
                    key: keyspace::ids_key(desc, self.ns),
                    detail: "verify fed after it finished".into(),
                })
            }
        };
        Ok(())
    }

    /// How many keys, members and entries it holds between round trips
    /// (the report so far aside).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.page.len()
            + self.probes.len()
            + self.live.len()
            + self.listings.len()
            + self.references.len()
            + self.index_keys.len()
            + self.index_more.len()
            + self.checks.len()
    }

    /// Where the check is.
    pub fn progress(&self) -> Progress {
        let (step, done) = match &self.step {
            Step::ScanEntities { .. } => ("scanning entity keys", self.entities_read),
            Step::ReadEntities { .. } => ("reading entities", self.entities_read),
            Step::ProbeEntries { .. } => ("probing the entries of entities", self.entities),
            Step::ReadRegisters { .. } => ("reading relation registers", self.entities),
            Step::ReadListings { .. } => ("reading relation sets and timelines", self.entities),
            Step::CheckReferences { .. } => ("checking the members they list", self.entities),
            Step::ReadChecks { .. } => ("checking listed entities", self.index_entries),
            Step::ScanIndex { .. } | Step::ReadIndex { .. } | Step::ReadIndexMore { .. } => {
                ("reading index keys", self.index_entries)
            }
            Step::ReadIds { .. } | Step::ReadBuckets { .. } => {
                ("reading the set of all ids", self.ids_seen)
            }
            Step::Done => ("done", self.entities),
        };
        let total = matches!(self.step, Step::Done).then_some(self.entities);
        Progress { step, done, total }
    }

    /// The report, once `next_request` returned `None`.
    pub fn report(&self) -> Report {
        let found = &self.found;
        // The entries of an unreadable entity are not stale: it is there.
        let unreadable: BTreeSet<&str> = found
            .unreadable
            .iter()
            .filter_map(|v| match v {
                Violation::Unreadable { member, .. } => Some(member.as_str()),
                _ => None,
            })
            .collect();
        let readable = |v: &&Violation| match v {
            Violation::StaleEntry { member, .. }
            | Violation::StaleSortedEntry { member, .. }
            | Violation::StaleId { member } => !unreadable.contains(member.as_str()),
            _ => true,
        };
        let stale = in_order(found.stale.iter().filter(readable).cloned().collect());
        // A unique value held by more than one entity is a duplicate; held
        // by one that its key does not name, that one is missing from it.
        let mut missing = found.missing.clone();
        for (key, holders) in &found.unique {
            missing.push(match holders.len() {
                1 => Violation::MissingEntry {
                    key: key.clone(),
                    member: holders.iter().next().cloned().unwrap_or_default(),
                },
                _ => Violation::DuplicateUnique {
                    key: key.clone(),
                    members: holders.iter().cloned().collect(),
                },
            });
        }
        let missing = in_order(missing);
        let ids = in_order(found.stale_ids.iter().filter(readable).cloned().collect());
        let missing_ids = in_order(found.missing_ids.clone());
        let mut violations = stale;
        violations.extend(missing);
        violations.extend(ids);
        violations.extend(missing_ids);
        violations.extend(found.one_sided.iter().cloned());
        violations.extend(found.leftovers.iter().cloned());
        violations.extend(found.dangling.iter().cloned());
        violations.extend(found.unreadable.iter().cloned());
        Report {
            entities: self.entities,
            index_entries: self.index_entries,
            violations,
            memory_policy: None,
        }
    }
}

/// The `offset` chunk of `items` a round trip carries.
fn chunk<T>(items: &[T], offset: usize) -> &[T] {
    &items[offset.min(items.len())..(offset + CHUNK).min(items.len())]
}

/// Index violations in the report's order (by key, then member), each once:
/// an entity whose key SCAN returned twice (as it may while the keyspace
/// is resized) is checked twice, and its findings are kept once.
fn in_order(mut found: Vec<Violation>) -> Vec<Violation> {
    found.sort_by(|a, b| order(a).cmp(&order(b)));
    found.dedup();
    found
}

/// The order of index violations in a report: by key, then member.
fn order(v: &Violation) -> (&str, &str) {
    match v {
        Violation::StaleEntry { key, member }
        | Violation::MissingEntry { key, member }
        | Violation::StaleSortedEntry { key, member, .. }
        | Violation::MissingSortedEntry { key, member, .. }
        | Violation::MisplacedId { key, member } => (key, member),
        Violation::DuplicateUnique { key, .. } => (key, ""),
        Violation::StaleId { member } | Violation::MissingId { member } => ("", member),
        _ => ("", ""),
    }
}
