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
//!    Then the set of all ids, by the presence of each member's entity.
//!
//! Between pages it keeps only the report so far, so its memory grows with
//! the violations found, not with the data (an earlier form held every
//! expected and listed entry until the end: about 1.9 KB per entity).

use super::{Progress, Report, Violation};
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::query;
use crate::schema::entity::{EntityDesc, IndexKind, IndexSource, Layout, Row};
use crate::schema::escape::Namespace;
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Entities (or listed members) read per round trip.
const CHUNK: usize = 500;
/// Index keys read per round trip: a page of each.
const KEYS_PER_TRIP: usize = 50;
/// Members asked of an index set per page (`SSCAN .. COUNT`): with
/// [`KEYS_PER_TRIP`], a round trip brings about 10,000 members at most,
/// however big the sets, and the members to look up stay as many.
const SET_PAGE: usize = 200;
/// Entries asked of a sorted set or of the set of all ids per page.
const ZSET_PAGE: usize = 1000;

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
    ReadIds {
        cursor: u64,
    },
    Done,
}

/// An entry to look for: `index` (`None`: the set of all ids), the value it
/// lists (escaped value, tag, score text), and the member.
struct Entry {
    index: Option<usize>,
    value: Vec<u8>,
    member: String,
}

/// What a [`Check`] decides once the member's entity says whether it holds
/// the entry.
enum Then {
    /// An entry found listed: stale unless the entity holds it.
    Stale,
    /// A unique key that names `member` while `candidate` holds its value:
    /// both hold it (a duplicate), or `candidate` is missing from it.
    Owner { candidate: String },
}

struct Check {
    entry: Entry,
    then: Then,
}

/// A stored entity of the page being checked.
struct Live {
    member: String,
    /// The keys under it this page's `SCAN` found.
    scanned: Vec<String>,
    /// Whether its entity key is among them: it is checked in the page
    /// that holds its entity key (and only there, should another page
    /// hold other keys of it).
    checked_here: bool,
}

/// A relation set or timeline of a stored entity, from its register entry.
pub(super) struct Listing {
    /// The member of the owning entity.
    owner: String,
    /// The set or list.
    key: String,
    /// How to spell the entity key of a member it lists: head, tail, and
    /// the suffix of the key that shows the entity exists.
    head: String,
    tail: String,
    presence: String,
    /// For a relation set: the name of the set on the other side that
    /// lists the owner back.
    reverse: Option<String>,
}

impl Listing {
    /// Parses a register entry: `head \n tail \n name [\n presence]` for a
    /// relation set, `@list \n head \n tail \n presence` for a timeline;
    /// `None` for an entry that does not say (a timeline pushed by an older
    /// version).
    fn parse(owner: &str, key: String, entry: &str) -> Option<Listing> {
        let parts: Vec<&str> = entry.split('\n').collect();
        let (head, tail, presence, reverse) = match parts.as_slice() {
            [mark, head, tail, rest @ ..] if *mark == keyspace::TIMELINE_MARK => {
                (head, tail, rest.first().copied(), None)
            }
            [head, tail, name, rest @ ..] => {
                (head, tail, rest.first().copied(), Some(name.to_string()))
            }
            _ => return None,
        };
        Some(Listing {
            owner: owner.to_owned(),
            key,
            head: head.to_string(),
            tail: tail.to_string(),
            presence: presence.unwrap_or_default().to_owned(),
            reverse,
        })
    }

    /// The key of `member`'s entity that exists while it does.
    fn entity_of(&self, member: &str) -> String {
        let mut k = keyspace::key_from_entry(&self.head, member, &self.tail);
        k.push_str(&self.presence);
        k
    }
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
                    crate::plan::read::read(desc, &EntityKeys::new(desc, ns, m.clone()), &mut pipe);
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
            Step::ReadListings { offset } => {
                for l in chunk(&self.listings, *offset) {
                    match l.reverse {
                        Some(_) => pipe.cmd("SMEMBERS").arg(&l.key),
                        None => pipe.cmd("LRANGE").arg(&l.key).arg(0).arg(-1),
                    };
                }
            }
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
            Step::ReadIds { cursor } => {
                pipe.cmd("SSCAN")
                    .arg(keyspace::ids_key(desc, ns))
                    .arg(*cursor)
                    .arg("COUNT")
                    .arg(ZSET_PAGE);
            }
            Step::Done => return None,
        }
        Some(pipe)
    }

    /// Asks whether the entry a stored entity needs is there.
    fn request_probe(&self, pipe: &mut redis::Pipeline, e: &Entry) {
        let Some(index) = e.index else {
            pipe.cmd("SISMEMBER")
                .arg(keyspace::ids_key(self.desc, self.ns))
                .arg(&e.member);
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

    /// Reads what decides whether the entity of `e.member` holds the entry:
    /// in the hash layout the indexed field alone (`HMGET`, with its old
    /// name) or, for the set of all ids or an index of a pk field, whether
    /// it exists; in the other layouts the whole entity.
    fn request_holder(&self, pipe: &mut redis::Pipeline, e: &Entry) {
        let desc = self.desc;
        let keys = EntityKeys::new(desc, self.ns, e.member.clone());
        if desc.layout != Layout::Hash {
            crate::plan::read::read(desc, &keys, pipe);
            return;
        }
        match e.index.map(|i| desc.indexes[i].source) {
            Some(IndexSource::Column(c)) => {
                let col = &desc.columns[c];
                pipe.cmd("HMGET")
                    .arg(&keys.base)
                    .arg(col.name)
                    .arg(col.alias);
            }
            None | Some(IndexSource::Pk) => {
                pipe.cmd("EXISTS").arg(&keys.base);
            }
        }
    }

    /// Decodes the replies of [`request_holder`](Self::request_holder):
    /// whether the entity holds the entry (`None`: it cannot be read, which
    /// the entity walk reports).
    fn holds(&self, e: &Entry, replies: &mut impl Iterator<Item = Value>) -> Option<bool> {
        let desc = self.desc;
        let row = if desc.layout != Layout::Hash {
            let keys = EntityKeys::new(desc, self.ns, e.member.clone());
            match crate::plan::read::decode_read(desc, &keys, replies) {
                Ok(Some(row)) => row,
                Ok(None) => return Some(false),
                Err(_) => return None,
            }
        } else {
            let v = replies.next().unwrap_or(Value::Nil);
            match (e.index.map(|i| desc.indexes[i].source), v) {
                (_, Value::ServerError(_)) => return None,
                (Some(IndexSource::Column(c)), v) => {
                    let mut columns = vec![None; desc.columns.len()];
                    columns[c] = list(v).into_iter().find_map(crate::plan::read::bytes);
                    Row {
                        columns,
                        maps: Vec::new(),
                    }
                }
                (_, Value::Int(1)) => Row {
                    columns: vec![None; desc.columns.len()],
                    maps: Vec::new(),
                },
                _ => return Some(false),
            }
        };
        Some(match e.index {
            None => true,
            Some(i) => query::row_entries(desc, &e.member, &row, i).contains(&e.value),
        })
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
                .arg(ZSET_PAGE);
        } else {
            keyspace::nodes::scan_page(
                pipe,
                cursor,
                &keyspace::index_scan_pattern(desc, ns, idx.field),
            );
        }
    }

    /// For a chunk of the members the listings name: EXISTS of the member's
    /// entity and, for a relation set, SISMEMBER of the owner in the other
    /// side's set (whether it lists the owner back).
    fn request_references(&self, pipe: &mut redis::Pipeline, offset: usize) {
        for (at, m) in chunk(&self.references, offset) {
            let l = &self.listings[*at];
            pipe.cmd("EXISTS").arg(l.entity_of(m));
            if let Some(reverse) = &l.reverse {
                let theirs = keyspace::key_from_entry(&l.head, m, &l.tail);
                pipe.cmd("SISMEMBER")
                    .arg(keyspace::sub_key(&theirs, reverse))
                    .arg(&l.owner);
            }
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
            Step::ReadIds { .. } => self.feed_ids(first_reply(replies)),
            Step::Done => {
                return Err(Error::UnexpectedReply {
                    key: keyspace::ids_key(desc, self.ns),
                    detail: "verify fed after it finished".into(),
                })
            }
        };
        Ok(())
    }

    // --- Entities to indexes.

    /// A SCAN page of the entity keys: groups them by member (a key whose
    /// member no pk of the type writes is foreign), to be read.
    fn feed_entity_scan(&mut self, reply: Value) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let (cursor, keys) = scan_reply(reply);
        let mut page: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for k in keys {
            match keyspace::member_of_key(desc, ns, &k) {
                Some(m) if self.members_valid.is_none_or(|ok| ok(&m)) => {
                    page.entry(m).or_default().push(k);
                }
                Some(_) => self.found.unreadable(Violation::ForeignKey { key: k }),
                None => {}
            }
        }
        self.entity_cursor = cursor;
        self.page = page.into_iter().collect();
        if self.page.is_empty() {
            self.page_done()
        } else {
            Step::ReadEntities { offset: 0 }
        }
    }

    /// A chunk of the page's entities read: each stored entity's expected
    /// entries to probe, each gone one's leftover keys.
    fn feed_entities(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let end = (offset + CHUNK).min(self.page.len());
        let mut it = replies.into_iter();
        for at in offset..end {
            let (m, scanned) = std::mem::take(&mut self.page[at]);
            let keys = EntityKeys::new(desc, ns, m.clone());
            let first = it.next().unwrap_or(Value::Nil);
            let checked_here = scanned
                .iter()
                .any(|k| Some(k.as_str()) == first_key(&keys, &first));
            let mut replies = std::iter::once(first).chain(&mut it);
            match crate::plan::read::decode_read(desc, &keys, &mut replies) {
                Ok(Some(row)) => self.entity_stored(m, &keys, &row, scanned, checked_here),
                Ok(None) => self.entity_gone(&m, scanned),
                // One entity that cannot be read does not stop the
                // check of the others.
                Err(e) => self.found.unreadable(Violation::Unreadable {
                    key: keys.base.clone(),
                    detail: e.to_string(),
                    member: m,
                }),
            }
        }
        self.entities_read += end - offset;
        if end < self.page.len() {
            Step::ReadEntities { offset: end }
        } else {
            self.page.clear();
            self.probes_step()
        }
    }

    /// Stored entity `m`: in the page of its entity key, a row the Rust
    /// type cannot decode is reported and its index entries are probed;
    /// its register is read next.
    fn entity_stored(
        &mut self,
        m: String,
        keys: &EntityKeys,
        row: &Row,
        scanned: Vec<String>,
        checked_here: bool,
    ) {
        let desc = self.desc;
        if checked_here {
            self.entities += 1;
            if let Some((field, reason)) = self.decodes.and_then(|check| check(&m, row)) {
                self.found.unreadable(Violation::Undecodable {
                    key: keys.base.clone(),
                    field,
                    reason,
                });
            }
            for i in 0..desc.indexes.len() {
                for value in query::row_entries(desc, &m, row, i) {
                    self.probes.push(Entry {
                        index: Some(i),
                        value,
                        member: m.clone(),
                    });
                }
            }
            if !desc.indexes.is_empty() {
                self.probes.push(Entry {
                    index: None,
                    value: Vec::new(),
                    member: m.clone(),
                });
            }
        }
        self.live.push(Live {
            member: m,
            scanned,
            checked_here,
        });
    }

    /// Entity `m` is gone: what SCAN found under its key is left over.
    fn entity_gone(&mut self, m: &str, scanned: Vec<String>) {
        // Request records expire on their own.
        let keys: Vec<String> = scanned
            .into_iter()
            .filter(|k| !k.contains(keyspace::REQUEST_SUFFIX))
            .collect();
        if !keys.is_empty() {
            self.found.leftover(m, keys);
        }
    }

    fn probes_step(&mut self) -> Step {
        if self.probes.is_empty() {
            self.registers_step()
        } else {
            Step::ProbeEntries { offset: 0 }
        }
    }

    /// A chunk of probes: an entry that is not where it must be is missing;
    /// a unique key naming another entity is looked into (a duplicate, or
    /// a stale owner and a missing entry).
    fn feed_probes(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.probes.len());
        let probes: Vec<Entry> = self.probes.drain(offset..end).collect();
        for (e, v) in probes.into_iter().zip(replies) {
            self.probed(e, v);
        }
        if offset < self.probes.len() {
            return Step::ProbeEntries { offset };
        }
        self.probes.clear();
        let next = self.registers_step();
        self.checks_then(next)
    }

    /// The answer of one probe.
    fn probed(&mut self, e: Entry, v: Value) {
        let Some(index) = e.index else {
            if !matches!(v, Value::Int(1)) {
                self.found
                    .missing_ids
                    .push(Violation::MissingId { member: e.member });
            }
            return;
        };
        let value = || String::from_utf8_lossy(&e.value).into_owned();
        let missing_sorted = |e: &Entry| Violation::MissingSortedEntry {
            key: self.zsets[index].clone(),
            member: e.member.clone(),
            value: value(),
        };
        match self.desc.indexes[index].kind {
            IndexKind::Unique => match text(v) {
                Some(owner) if owner == e.member => {}
                Some(owner) => self.checks.push(Check {
                    entry: Entry {
                        index: Some(index),
                        value: e.value,
                        member: owner,
                    },
                    then: Then::Owner {
                        candidate: e.member,
                    },
                }),
                None => {
                    let key = self.entry_key(index, &e.value);
                    self.found.unique.entry(key).or_default().insert(e.member);
                }
            },
            IndexKind::Sorted => {
                let listed = score_of(v).map(crate::schema::codec::score_text);
                if listed.as_deref().map(str::as_bytes) != Some(&e.value[..]) {
                    let v = missing_sorted(&e);
                    self.found.missing.push(v);
                }
            }
            IndexKind::Prefix => {
                if score_of(v).is_none() {
                    let v = missing_sorted(&e);
                    self.found.missing.push(v);
                }
            }
            IndexKind::Equality | IndexKind::Tags => {
                if !matches!(v, Value::Int(1)) {
                    let key = self.entry_key(index, &e.value);
                    self.found.missing.push(Violation::MissingEntry {
                        key,
                        member: e.member,
                    });
                }
            }
        }
    }

    fn registers_step(&mut self) -> Step {
        if self.live.is_empty() {
            self.page_done()
        } else {
            Step::ReadRegisters { offset: 0 }
        }
    }

    /// A chunk of relation registers (HGETALL): the listings each names,
    /// and the scanned keys of the entity none accounts for.
    fn feed_registers(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let end = (offset + CHUNK).min(self.live.len());
        for (at, v) in (offset..end).zip(replies) {
            let live = std::mem::replace(
                &mut self.live[at],
                Live {
                    member: String::new(),
                    scanned: Vec::new(),
                    checked_here: false,
                },
            );
            let owner_key = keyspace::entity_key(desc, ns, &live.member);
            let register = keyspace::relation_register(&owner_key);
            if is_wrong_type(&v) {
                self.found.wrong_type(&register, "hash");
            }
            let flat: Vec<String> = list(v).into_iter().filter_map(text).collect();
            let listings: Vec<Listing> = flat
                .chunks(2)
                .filter_map(|pair| {
                    let key = keyspace::sub_key(&owner_key, &pair[0]);
                    let entry = pair.get(1).map(String::as_str).unwrap_or("");
                    Listing::parse(&live.member, key, entry)
                })
                .collect();
            self.report_unlisted(&live, &register, &listings);
            if live.checked_here {
                self.listings.extend(listings);
            }
        }
        if end < self.live.len() {
            Step::ReadRegisters { offset: end }
        } else {
            self.live.clear();
            self.listings_step()
        }
    }

    /// Reports the keys SCAN found under stored entity `live` that are none
    /// of its keys, its register, the listings its register names or a
    /// request record.
    fn report_unlisted(&mut self, live: &Live, register: &str, listings: &[Listing]) {
        let keys = EntityKeys::new(self.desc, self.ns, live.member.clone());
        for k in &live.scanned {
            let known = keys.all().any(|own| own == k)
                || k == register
                || k.contains(keyspace::REQUEST_SUFFIX)
                || listings.iter().any(|l| l.key == *k);
            if !known {
                self.found.unreadable.push(Violation::UnlistedKey {
                    key: k.clone(),
                    member: live.member.clone(),
                });
            }
        }
    }

    fn listings_step(&mut self) -> Step {
        if self.listings.is_empty() {
            self.page_done()
        } else {
            Step::ReadListings { offset: 0 }
        }
    }

    /// A chunk of relation sets and timelines: the members each lists.
    fn feed_listings(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.listings.len());
        for (at, v) in (offset..end).zip(replies) {
            if is_wrong_type(&v) {
                let l = &self.listings[at];
                let wanted = if l.reverse.is_some() { "set" } else { "list" };
                let key = l.key.clone();
                self.found.wrong_type(&key, wanted);
            }
            let mut listed: Vec<String> = list(v).into_iter().filter_map(text).collect();
            // A timeline may list a member more than once.
            listed.sort();
            listed.dedup();
            self.references.extend(listed.into_iter().map(|m| (at, m)));
        }
        if end < self.listings.len() {
            Step::ReadListings { offset: end }
        } else if self.references.is_empty() {
            self.page_done()
        } else {
            Step::CheckReferences { offset: 0 }
        }
    }

    /// A chunk of reference checks: a listed member whose entity is gone
    /// dangles; one whose set does not list the owner back is one-sided.
    fn feed_references(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.references.len());
        let mut it = replies.into_iter();
        for (at, m) in &self.references[offset..end] {
            let l = &self.listings[*at];
            let exists = matches!(it.next(), Some(Value::Int(1)));
            let back = l.reverse.as_ref().map(|_| it.next());
            if let (Some(reverse), Some(Some(v))) = (&l.reverse, &back) {
                if is_wrong_type(v) {
                    // The other side's set holds another type: that is
                    // the problem to report, not a one-sided pair.
                    let theirs = keyspace::key_from_entry(&l.head, m, &l.tail);
                    self.found
                        .wrong_type(&keyspace::sub_key(&theirs, reverse), "set");
                    continue;
                }
            }
            let listed_back = back.map(|v| matches!(v, Some(Value::Int(1))));
            if !exists {
                self.found.dangling.push(Violation::DanglingMember {
                    key: l.key.clone(),
                    member: m.clone(),
                    entity: l.entity_of(m),
                    owner: l.owner.clone(),
                });
            } else if listed_back == Some(false) {
                self.found.one_sided.push(Violation::OneSidedRelation {
                    key: l.key.clone(),
                    member: m.clone(),
                });
            }
        }
        if end < self.references.len() {
            Step::CheckReferences { offset: end }
        } else {
            self.page_done()
        }
    }

    /// The entity page is checked: the next one, or the indexes.
    fn page_done(&mut self) -> Step {
        self.listings.clear();
        self.references.clear();
        match self.entity_cursor {
            0 => self.index_step(0),
            cursor => Step::ScanEntities { cursor },
        }
    }

    // --- Reading listed members' entities.

    /// The entity reads of `checks` first, if any, then `next`.
    fn checks_then(&mut self, next: Step) -> Step {
        if self.checks.is_empty() {
            next
        } else {
            self.resume = Some(next);
            Step::ReadChecks { offset: 0 }
        }
    }

    /// A chunk of listed members' entities read: whether each holds the
    /// entry that lists it.
    fn feed_checks(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.checks.len());
        let mut it = replies.into_iter();
        for at in offset..end {
            let holds = self.holds(&self.checks[at].entry, &mut it);
            let c = std::mem::replace(
                &mut self.checks[at],
                Check {
                    entry: Entry {
                        index: None,
                        value: Vec::new(),
                        member: String::new(),
                    },
                    then: Then::Stale,
                },
            );
            self.checked(c, holds);
        }
        if end < self.checks.len() {
            return Step::ReadChecks { offset: end };
        }
        self.checks.clear();
        self.resume.take().unwrap_or(Step::Done)
    }

    /// What a check found: `holds` is whether the entity holds the entry
    /// (`None`: it cannot be read, its own violation).
    fn checked(&mut self, c: Check, holds: Option<bool>) {
        let e = c.entry;
        match c.then {
            Then::Owner { candidate } => {
                let key = self.entry_key(e.index.unwrap_or_default(), &e.value);
                let holders = self.found.unique.entry(key).or_default();
                holders.insert(candidate);
                if holds == Some(true) {
                    holders.insert(e.member);
                }
            }
            Then::Stale if holds != Some(false) => {}
            Then::Stale => {
                let v = match e.index {
                    None => Violation::StaleId { member: e.member },
                    Some(i) => match self.desc.indexes[i].kind {
                        IndexKind::Sorted | IndexKind::Prefix => Violation::StaleSortedEntry {
                            key: self.zsets[i].clone(),
                            member: e.member,
                            value: String::from_utf8_lossy(&e.value).into_owned(),
                        },
                        _ => Violation::StaleEntry {
                            key: self.entry_key(i, &e.value),
                            member: e.member,
                        },
                    },
                };
                match v {
                    Violation::StaleId { .. } => self.found.stale_ids.push(v),
                    v => self.found.stale.push(v),
                }
            }
        }
    }

    // --- Indexes to entities.

    /// The step that reads index `from`; past the last index, the set of
    /// all members (kept only for a type with indexes), else the end.
    fn index_step(&self, from: usize) -> Step {
        if from < self.desc.indexes.len() {
            Step::ScanIndex {
                index: from,
                cursor: 0,
            }
        } else if self.desc.indexes.is_empty() {
            Step::Done
        } else {
            Step::ReadIds { cursor: 0 }
        }
    }

    /// Index `index`'s next page, or the next index once `cursor` is 0.
    fn next_page(&self, index: usize, cursor: u64) -> Step {
        match cursor {
            0 => self.index_step(index + 1),
            cursor => Step::ScanIndex { index, cursor },
        }
    }

    /// Adds an entry found listed, to be checked against its entity.
    fn listed(&mut self, index: usize, value: Vec<u8>, member: String) {
        self.index_entries += 1;
        self.checks.push(Check {
            entry: Entry {
                index: Some(index),
                value,
                member,
            },
            then: Then::Stale,
        });
    }

    /// A `ZSCAN` page of a sorted index (members and scores) or of a prefix
    /// index (`<value>:<member>`): its entries, checked; then the next page.
    fn feed_zset_page(&mut self, index: usize, reply: Value) -> Step {
        let sorted = self.desc.indexes[index].kind == IndexKind::Sorted;
        let (cursor, flat) = cursor_reply(reply);
        let mut it = flat.into_iter();
        while let (Some(entry), Some(score)) = (it.next(), it.next()) {
            let Some(entry) = crate::plan::read::bytes(entry) else {
                continue;
            };
            if sorted {
                // An unreadable score lists no value.
                let Some(score) = score_of(score) else {
                    continue;
                };
                let member = String::from_utf8_lossy(&entry).into_owned();
                let value = crate::schema::codec::score_text(score).into_bytes();
                self.listed(index, value, member);
            } else if let Some(sep) = entry.iter().position(|&b| b == b':') {
                let member = String::from_utf8_lossy(&entry[sep + 1..]).into_owned();
                self.listed(index, entry[..sep].to_vec(), member);
            }
        }
        let next = self.next_page(index, cursor);
        self.checks_then(next)
    }

    /// A SCAN page of an index's key family: the keys found are read.
    fn feed_index_scan(&mut self, index: usize, reply: Value) -> Step {
        let (cursor, keys) = scan_reply(reply);
        self.index_keys = keys;
        if self.index_keys.is_empty() {
            self.next_page(index, cursor)
        } else {
            Step::ReadIndex {
                index,
                cursor,
                offset: 0,
            }
        }
    }

    /// The value an index key is the entry of.
    fn key_value(&self, index: usize, at: usize) -> Vec<u8> {
        let key = &self.index_keys[at];
        key.strip_prefix(self.prefixes[index].as_str())
            .unwrap_or(key)
            .as_bytes()
            .to_vec()
    }

    /// A chunk of index keys read: a unique key's owner (GET) or the first
    /// page of the members a set lists (SSCAN), to be checked; sets with
    /// more pages are read on after the chunks.
    fn feed_index_keys(
        &mut self,
        index: usize,
        cursor: u64,
        offset: usize,
        replies: Vec<Value>,
    ) -> Step {
        let end = (offset + KEYS_PER_TRIP).min(self.index_keys.len());
        let unique = self.desc.indexes[index].kind == IndexKind::Unique;
        for (at, v) in (offset..end).zip(replies) {
            let (more, listed) = if unique {
                (0, text(v).into_iter().collect())
            } else {
                scan_reply(v)
            };
            self.add_listed(index, at, listed);
            if more != 0 {
                self.index_more.push((at, more));
            }
        }
        let next = if end < self.index_keys.len() {
            Step::ReadIndex {
                index,
                cursor,
                offset: end,
            }
        } else {
            self.after_index_keys(index, cursor)
        };
        self.checks_then(next)
    }

    /// The next pages of sets that had more; those with more still go to
    /// the back of the line.
    fn feed_index_more(&mut self, index: usize, cursor: u64, replies: Vec<Value>) -> Step {
        let n = KEYS_PER_TRIP.min(self.index_more.len());
        let read: Vec<(usize, u64)> = self.index_more.drain(..n).collect();
        for ((at, _), v) in read.into_iter().zip(replies) {
            let (more, listed) = scan_reply(v);
            self.add_listed(index, at, listed);
            if more != 0 {
                self.index_more.push((at, more));
            }
        }
        let next = self.after_index_keys(index, cursor);
        self.checks_then(next)
    }

    fn add_listed(&mut self, index: usize, at: usize, listed: Vec<String>) {
        for m in listed {
            let value = self.key_value(index, at);
            self.listed(index, value, m);
        }
    }

    /// Once every key of an index SCAN page had its first page: the sets
    /// with more pages, then the next SCAN page.
    fn after_index_keys(&mut self, index: usize, cursor: u64) -> Step {
        if !self.index_more.is_empty() {
            return Step::ReadIndexMore { index, cursor };
        }
        self.index_keys.clear();
        self.next_page(index, cursor)
    }

    /// A page of the set of all ids: each member's entity must exist.
    fn feed_ids(&mut self, reply: Value) -> Step {
        let (cursor, ids) = scan_reply(reply);
        self.ids_seen += ids.len();
        self.checks.extend(ids.into_iter().map(|member| Check {
            entry: Entry {
                index: None,
                value: Vec::new(),
                member,
            },
            then: Then::Stale,
        }));
        let next = match cursor {
            0 => Step::Done,
            cursor => Step::ReadIds { cursor },
        };
        self.checks_then(next)
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
            Step::ReadIds { .. } => ("reading the set of all ids", self.ids_seen),
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
        }
    }
}

/// The first key of an entity that its read found (`first` is the reply of
/// its first command): the entity key, or in the `strings` layout the
/// first of the presence marker and the columns that is there. The page of
/// `SCAN` that holds it is where the entity is checked.
fn first_key<'k>(keys: &'k EntityKeys, first: &Value) -> Option<&'k str> {
    match first {
        Value::Array(items) if !keys.columns.is_empty() => {
            let at = items.iter().position(|v| *v != Value::Nil)?;
            keys.read_keys().nth(at)
        }
        _ => Some(&keys.base),
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
        | Violation::MissingSortedEntry { key, member, .. } => (key, member),
        Violation::DuplicateUnique { key, .. } => (key, ""),
        Violation::StaleId { member } | Violation::MissingId { member } => ("", member),
        _ => ("", ""),
    }
}
