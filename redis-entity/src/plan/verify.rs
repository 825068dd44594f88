//! `verify`: checks every index invariant of an entity type against what is
//! stored, and `repair` fixes what it found.
//!
//! The checker reads the ground truth (the entity keys, found with SCAN) and
//! every index key (SCAN over each index's key family), computes the entries
//! the stored values imply, and compares:
//! - every index entry points at an entity holding that value (else [`Violation::StaleEntry`]);
//! - every entity is in every index it should be in ([`Violation::MissingEntry`]);
//! - no unique key without its owner (a stale unique entry);
//! - no two owners of one unique value ([`Violation::DuplicateUnique`]);
//! - the set of all members lists exactly the stored entities;
//! - sorted and prefix indexes list each entity with exactly the score or
//!   value it holds ([`Violation::StaleSortedEntry`], named by the sorted set);
//! - relation sets list back, and relation sets and timelines list only
//!   entities that are stored ([`Violation::DanglingMember`]);
//! - no keys under an entity key whose entity is gone ([`Violation::Leftover`]).

use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::plan::query;
use crate::plan::write::{self as plan, WritePlan};
use crate::schema::entity::{EntityDesc, IndexKind};
use crate::schema::escape::Namespace;
use crate::script::args::Repair;
use crate::script::write::WriteOp;
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// An index entry points at an entity that is missing or does not hold the value.
    StaleEntry {
        /// The index key.
        key: String,
        /// The member it lists.
        member: String,
    },
    /// An entity holds a value but is missing from that value's index entry.
    MissingEntry {
        /// The index key that should list it.
        key: String,
        /// The entity's member.
        member: String,
    },
    /// A sorted-set index (`sorted` or `prefix`) lists an entity with a
    /// score or value it does not hold (or an entity that is missing).
    StaleSortedEntry {
        /// The sorted set.
        key: String,
        /// The entity's member.
        member: String,
        /// The score (sorted) or the escaped value (prefix) it is listed with.
        value: String,
    },
    /// A stored entity is missing from a sorted-set index with the score or
    /// value it holds.
    MissingSortedEntry {
        /// The sorted set.
        key: String,
        /// The entity's member.
        member: String,
        /// The score (sorted) or the escaped value (prefix) it should have.
        value: String,
    },
    /// Two or more stored entities hold one unique value.
    DuplicateUnique {
        /// The unique key.
        key: String,
        /// The entities holding the value.
        members: Vec<String>,
    },
    /// The set of all members lists an entity that is not stored.
    StaleId {
        /// The member.
        member: String,
    },
    /// A stored entity is missing from the set of all members.
    MissingId {
        /// The member.
        member: String,
    },
    /// A relation set lists a member whose own reverse set does not list
    /// this entity back (only half of a relation is stored).
    OneSidedRelation {
        /// The relation set of a stored entity.
        key: String,
        /// The member it lists.
        member: String,
    },
    /// A relation set or timeline of a stored entity lists a member whose
    /// entity is not stored (deleted or expired since, or written around
    /// the library).
    DanglingMember {
        /// The relation set or timeline.
        key: String,
        /// The member it lists.
        member: String,
        /// The key whose absence shows that the member's entity is gone.
        entity: String,
        /// The member of the entity that owns `key`.
        owner: String,
    },
    /// Keys of an entity that is not stored: its relation sets, register,
    /// index shadow or other keys, left by an entity that expired and was
    /// not swept yet, or by writes around the library.
    Leftover {
        /// The member of the entity that is gone.
        member: String,
        /// The keys found.
        keys: Vec<String>,
    },
    /// The owner key of a unique value (a type of many shards on a
    /// cluster) names an entity that does not hold the value: a write or a
    /// delete stopped between its steps.
    StaleOwner {
        /// The owner key.
        key: String,
        /// The member it names.
        member: String,
    },
    /// An entity holds a unique value (a type of many shards on a cluster)
    /// whose owner key is missing or names another entity.
    UnownedValue {
        /// The owner key.
        key: String,
        /// The member holding the value.
        member: String,
    },
    /// On a cluster, an entity stored where its type kept it before the type
    /// had indexes (`user:{9}`), which the indexed type, keeping its
    /// entities in index shards, does not read: `reindex` or `repair` moves
    /// it into its shard.
    Unplaced {
        /// Its key.
        key: String,
        /// Its member.
        member: String,
    },
    /// A stored entity with a field that does not decode (or a required one
    /// missing): reported with its key and field; its index entries are
    /// checked as usual, and repair leaves the record to a person.
    Undecodable {
        /// The entity's key.
        key: String,
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A stored entity that cannot be read (a key of another type than the
    /// layout's): reported, its entries left alone; a person must decide.
    Unreadable {
        /// The entity's key.
        key: String,
        /// Why it cannot be read.
        detail: String,
        /// The entity's member.
        member: String,
    },
    /// A key under the type's prefix that no pk produces (`product:{X}`: a
    /// brace no escaped pk holds): not decoded, not indexed, not repaired;
    /// a person must decide what it is.
    ForeignKey {
        /// The key.
        key: String,
    },
    /// A key under a stored entity that nothing of the entity lists: not
    /// one of its keys, nor a relation set or timeline its register names
    /// (a relation set written around the library, say). Left to a person.
    UnlistedKey {
        /// The key.
        key: String,
        /// The member of the entity it is under.
        member: String,
    },
    /// A register, relation set or timeline of a stored entity holds
    /// another Redis type than it needs: its contents are not checked, and
    /// repair leaves it to a person.
    WrongType {
        /// The key.
        key: String,
        /// The type it needs (`hash`, `set`, `list`).
        wanted: &'static str,
    },
}

impl Violation {
    /// The variant's name (`"StaleEntry"`, ...), for machine-readable reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::StaleEntry { .. } => "StaleEntry",
            Violation::MissingEntry { .. } => "MissingEntry",
            Violation::StaleSortedEntry { .. } => "StaleSortedEntry",
            Violation::MissingSortedEntry { .. } => "MissingSortedEntry",
            Violation::DuplicateUnique { .. } => "DuplicateUnique",
            Violation::StaleId { .. } => "StaleId",
            Violation::MissingId { .. } => "MissingId",
            Violation::OneSidedRelation { .. } => "OneSidedRelation",
            Violation::DanglingMember { .. } => "DanglingMember",
            Violation::Leftover { .. } => "Leftover",
            Violation::StaleOwner { .. } => "StaleOwner",
            Violation::UnownedValue { .. } => "UnownedValue",
            Violation::Unplaced { .. } => "Unplaced",
            Violation::Undecodable { .. } => "Undecodable",
            Violation::Unreadable { .. } => "Unreadable",
            Violation::ForeignKey { .. } => "ForeignKey",
            Violation::UnlistedKey { .. } => "UnlistedKey",
            Violation::WrongType { .. } => "WrongType",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::StaleEntry { key, member } => {
                write!(
                    f,
                    "stale entry: `{key}` lists `{member}`, which does not hold that value"
                )
            }
            Violation::MissingEntry { key, member } => {
                write!(f, "missing entry: `{key}` does not list `{member}`")
            }
            Violation::StaleSortedEntry { key, member, value } => write!(
                f,
                "stale entry: `{key}` lists `{member}` with `{value}`, which it does not hold"
            ),
            Violation::MissingSortedEntry { key, member, value } => write!(
                f,
                "missing entry: `{key}` does not list `{member}` with `{value}`"
            ),
            Violation::DuplicateUnique { key, members } => {
                write!(f, "duplicate unique value `{key}` held by {members:?}")
            }
            Violation::StaleId { member } => write!(f, "ids set lists missing entity `{member}`"),
            Violation::MissingId { member } => write!(f, "ids set misses entity `{member}`"),
            Violation::OneSidedRelation { key, member } => {
                write!(
                    f,
                    "one-sided relation: `{key}` lists `{member}`, which does not list it back"
                )
            }
            Violation::DanglingMember {
                key,
                member,
                entity,
                ..
            } => {
                write!(
                    f,
                    "dangling member: `{key}` lists `{member}`, whose entity `{entity}` is not stored"
                )
            }
            Violation::Leftover { member, keys } => {
                write!(f, "leftover keys of missing entity `{member}`: {keys:?}")
            }
            Violation::StaleOwner { key, member } => {
                write!(
                    f,
                    "stale owner: `{key}` names `{member}`, which does not hold the value"
                )
            }
            Violation::UnownedValue { key, member } => {
                write!(
                    f,
                    "unowned value: `{member}` holds the value of `{key}`, which does not name it"
                )
            }
            Violation::Unplaced { key, .. } => write!(
                f,
                "entity at `{key}`, where its type kept it before it had indexes: reindex moves it into its shard"
            ),
            Violation::Unreadable { key, detail, .. } => {
                write!(f, "unreadable entity `{key}`: {detail}")
            }
            Violation::Undecodable { key, field, reason } => {
                write!(f, "field `{field}` of `{key}` does not decode: {reason}")
            }
            Violation::ForeignKey { key } => {
                write!(f, "foreign key `{key}`: no pk of the type has this key")
            }
            Violation::UnlistedKey { key, member } => write!(
                f,
                "unlisted key `{key}` under entity `{member}`: not one of its keys, relation sets or timelines"
            ),
            Violation::WrongType { key, wanted } => {
                write!(f, "`{key}` holds another type than the {wanted} it needs")
            }
        }
    }
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Stored entities seen.
    pub entities: usize,
    /// Index entries seen (set members and unique keys).
    pub index_entries: usize,
    /// Every broken invariant.
    pub violations: Vec<Violation>,
}

impl Report {
    /// True when every invariant holds.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} entities, {} index entries, {} violations",
            self.entities,
            self.index_entries,
            self.violations.len()
        )?;
        for v in &self.violations {
            writeln!(f, "  {v}")?;
        }
        Ok(())
    }
}

/// How far `verify`, `repair` or `reindex` has come, given to the callback
/// of their `_with` forms (to draw a progress bar, say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// What is being done, in words ("reading entities").
    pub step: &'static str,
    /// How many of the step's items are done.
    pub done: usize,
    /// How many there are, when known (a SCAN does not know).
    pub total: Option<usize>,
}

/// What `repair` did with a report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repaired {
    /// Violations fixed (or found fixed already: the entity was written or
    /// deleted since the report).
    pub fixed: usize,
    /// Violations left as they were, each with why.
    pub left: Vec<Unrepaired>,
}

/// A violation `repair` left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unrepaired {
    /// The violation.
    pub violation: Violation,
    /// Why: it needs a person's decision, or the repair's write failed.
    pub reason: String,
}

impl fmt::Display for Repaired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} fixed, {} left", self.fixed, self.left.len())?;
        for u in &self.left {
            writeln!(f, "  {}: {}", u.violation, u.reason)?;
        }
        Ok(())
    }
}

/// Expected entries: index key -> (index position, members that need it).
#[derive(Default)]
pub(crate) struct Expected {
    pub entries: BTreeMap<Vec<u8>, (usize, BTreeSet<String>)>,
    pub members: BTreeSet<String>,
}

impl Expected {
    pub fn add_row(
        &mut self,
        desc: &'static EntityDesc,
        ns: &Namespace,
        member: &str,
        row: &crate::schema::entity::Row,
    ) {
        self.members.insert(member.to_owned());
        for i in 0..desc.indexes.len() {
            let prefix = crate::keyspace::index_prefix(desc, ns, desc.indexes[i].field);
            for e in query::row_entries(desc, member, row, i) {
                let mut key = prefix.clone().into_bytes();
                key.extend_from_slice(&e);
                self.entries
                    .entry(key)
                    .or_insert_with(|| (i, BTreeSet::new()))
                    .1
                    .insert(member.to_owned());
            }
        }
    }
}

/// Actual entries read from the index keys.
#[derive(Default)]
pub(crate) struct Actual {
    /// index key -> (index position, members listed).
    pub entries: BTreeMap<Vec<u8>, (usize, BTreeSet<String>)>,
    pub ids: BTreeSet<String>,
}

/// Adds the `escaped value:member` entries of a prefix index's sorted set,
/// under the same names as the other kinds (`<prefix>:<field>:<value>`).
pub(crate) fn add_prefix_entries(
    desc: &'static EntityDesc,
    ns: &Namespace,
    index: usize,
    entries: Vec<Vec<u8>>,
    actual: &mut Actual,
) {
    let prefix = crate::keyspace::index_prefix(desc, ns, desc.indexes[index].field);
    for entry in entries {
        let Some(sep) = entry.iter().position(|&b| b == b':') else {
            continue;
        };
        let mut key = prefix.clone().into_bytes();
        key.extend_from_slice(&entry[..sep]);
        let member = String::from_utf8_lossy(&entry[sep + 1..]).into_owned();
        actual
            .entries
            .entry(key)
            .or_insert_with(|| (index, BTreeSet::new()))
            .1
            .insert(member);
    }
}

/// The sorted set and the value of an entry named `<prefix>:<field>:<value>`
/// of a sorted or prefix index (the key that exists, and what it lists).
fn sorted_entry(
    desc: &'static EntityDesc,
    ns: &Namespace,
    index: usize,
    key: &[u8],
) -> Option<(String, String)> {
    let idx = &desc.indexes[index];
    if !matches!(idx.kind, IndexKind::Sorted | IndexKind::Prefix) {
        return None;
    }
    let prefix = crate::keyspace::index_prefix(desc, ns, idx.field);
    let value = key.strip_prefix(prefix.as_bytes())?;
    Some((
        crate::keyspace::index_zset(desc, ns, idx.field),
        String::from_utf8_lossy(value).into_owned(),
    ))
}

/// Compares expected and actual entries.
pub(crate) fn compare(
    desc: &'static EntityDesc,
    ns: &Namespace,
    expected: &Expected,
    actual: &Actual,
) -> Report {
    let mut report = Report {
        entities: expected.members.len(),
        index_entries: actual.entries.values().map(|(_, m)| m.len()).sum(),
        violations: Vec::new(),
    };
    let text = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    let empty = BTreeSet::new();
    for (key, (index, listed)) in &actual.entries {
        let want = expected.entries.get(key).map(|(_, m)| m).unwrap_or(&empty);
        let sorted = sorted_entry(desc, ns, *index, key);
        for m in listed.difference(want) {
            report.violations.push(match &sorted {
                Some((zset, value)) => Violation::StaleSortedEntry {
                    key: zset.clone(),
                    member: m.clone(),
                    value: value.clone(),
                },
                None => Violation::StaleEntry {
                    key: text(key),
                    member: m.clone(),
                },
            });
        }
    }
    for (key, (index, want)) in &expected.entries {
        let listed = actual.entries.get(key).map(|(_, m)| m).unwrap_or(&empty);
        let unique = desc.indexes[*index].kind == IndexKind::Unique;
        if unique && want.len() > 1 {
            report.violations.push(Violation::DuplicateUnique {
                key: text(key),
                members: want.iter().cloned().collect(),
            });
            continue;
        }
        let sorted = sorted_entry(desc, ns, *index, key);
        for m in want.difference(listed) {
            report.violations.push(match &sorted {
                Some((zset, value)) => Violation::MissingSortedEntry {
                    key: zset.clone(),
                    member: m.clone(),
                    value: value.clone(),
                },
                None => Violation::MissingEntry {
                    key: text(key),
                    member: m.clone(),
                },
            });
        }
    }
    for m in actual.ids.difference(&expected.members) {
        report
            .violations
            .push(Violation::StaleId { member: m.clone() });
    }
    if !desc.indexes.is_empty() {
        for m in expected.members.difference(&actual.ids) {
            report
                .violations
                .push(Violation::MissingId { member: m.clone() });
        }
    }
    report
}

/// What `repair` does about a report, each step with the violations (their
/// positions in the report) it fixes.
#[derive(Default)]
pub(crate) struct Repairs {
    /// Atomic writes of one entity each: stale entries removed only if still
    /// stale, missing ones re-added from the stored values, what a gone
    /// entity left in indexes and relations swept.
    pub writes: Vec<(WritePlan, Vec<usize>)>,
    /// Removals by the repair script, run after the writes: a listed member,
    /// or a leftover key, of an entity that is gone, removed only while it
    /// is still gone.
    pub removals: Vec<(Repair, usize)>,
    /// The listed halves of one-sided relations: (set, member).
    pub one_sided: Vec<(String, String, usize)>,
    /// Owner keys of unique values to mend (`store::unique`): a stale owner
    /// released, an unowned value claimed for its holder.
    pub owners: Vec<(Violation, usize)>,
    /// Entities to move into their shard: (member, position).
    pub unplaced: Vec<(String, usize)>,
    /// What needs a person, and why.
    pub manual: Vec<(usize, &'static str)>,
}

/// Per member: the stale entries (index, escaped value), and the
/// violations they come from.
type Stale = (Vec<(usize, Vec<u8>)>, Vec<usize>);

/// Plans the repair of a report. Duplicate unique values, unreadable and
/// undecodable records need a decision and are left alone.
pub(crate) fn repairs(desc: &'static EntityDesc, ns: &Namespace, report: &Report) -> Repairs {
    let mut out = Repairs::default();
    let mut stale: BTreeMap<String, Stale> = BTreeMap::new();
    let mut reindex: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (at, v) in report.violations.iter().enumerate() {
        match v {
            Violation::StaleEntry { key, member } => {
                stale_entry_repair(desc, ns, (key, member, at), &mut stale, &mut out)
            }
            Violation::StaleSortedEntry { key, member, value } => {
                let space = crate::keyspace::entity_space(desc, ns, member);
                let found = desc
                    .indexes
                    .iter()
                    .position(|idx| crate::keyspace::index_zset(desc, &space, idx.field) == *key);
                let entry = stale.entry(member.clone()).or_default();
                entry
                    .0
                    .extend(found.map(|i| (i, value.as_bytes().to_vec())));
                entry.1.push(at);
            }
            Violation::StaleId { member } => {
                stale.entry(member.clone()).or_default().1.push(at);
            }
            Violation::MissingEntry { member, .. }
            | Violation::MissingSortedEntry { member, .. }
            | Violation::MissingId { member } => {
                reindex.entry(member.clone()).or_default().push(at);
            }
            Violation::OneSidedRelation { key, member } => {
                out.one_sided.push((key.clone(), member.clone(), at));
            }
            Violation::DanglingMember {
                key,
                member,
                entity,
                owner,
            } => out.removals.push((
                dangling_member_removal(desc, ns, key, member, entity, owner),
                at,
            )),
            Violation::Leftover { member, keys } => {
                leftover_repair(desc, ns, (member, keys, at), &mut out)
            }
            Violation::StaleOwner { .. } | Violation::UnownedValue { .. } => {
                out.owners.push((v.clone(), at))
            }
            Violation::Unplaced { member, .. } => out.unplaced.push((member.clone(), at)),
            Violation::DuplicateUnique { .. }
            | Violation::Unreadable { .. }
            | Violation::Undecodable { .. }
            | Violation::ForeignKey { .. }
            | Violation::UnlistedKey { .. }
            | Violation::WrongType { .. } => out.manual.push((at, manual_reason(v))),
        }
    }
    for (m, (entries, at)) in stale {
        let keys = EntityKeys::new(desc, ns, m);
        out.writes.push((plan::clean(desc, ns, keys, &entries), at));
    }
    for (m, at) in reindex {
        let keys = EntityKeys::new(desc, ns, m);
        out.writes
            .push((plan::lifecycle(desc, ns, keys, WriteOp::Reindex, None), at));
    }
    out
}

/// A stale entry (index `key` lists `member`, violation `at`): collected
/// for the member's clean write when the key is in the entity's own space;
/// cleaned at once in the shard that holds it when it is in another.
fn stale_entry_repair(
    desc: &'static EntityDesc,
    ns: &Namespace,
    (key, member, at): (&str, &String, usize),
    stale: &mut BTreeMap<String, Stale>,
    out: &mut Repairs,
) {
    // The entity's space: the store's, or its shard's.
    let space = crate::keyspace::entity_space(desc, ns, member);
    let in_space = |space: &Namespace| {
        desc.indexes.iter().enumerate().find_map(|(i, idx)| {
            let prefix = crate::keyspace::index_prefix(desc, space, idx.field);
            key.strip_prefix(&prefix)
                .map(|e| (i, e.as_bytes().to_vec()))
        })
    };
    if let Some(found) = in_space(&space) {
        let entry = stale.entry(member.clone()).or_default();
        entry.0.push(found);
        entry.1.push(at);
        return;
    }
    // Listed in another shard than its own (written around the
    // library): removed there, where the member has no entity.
    let foreign = crate::keyspace::spaces(desc, ns)
        .into_iter()
        .find_map(|s| in_space(&s).map(|f| (s, f)));
    match foreign {
        Some((s, found)) => {
            let keys = EntityKeys::new(desc, &s, member.clone());
            out.writes
                .push((plan::clean(desc, &s, keys, &[found]), vec![at]));
        }
        None => out
            .manual
            .push((at, "the key is not one of this type's index keys")),
    }
}

/// The repair script's call that removes `member` from relation set or
/// timeline `key` of `owner` while `entity` (the member's) is still gone.
fn dangling_member_removal(
    desc: &'static EntityDesc,
    ns: &Namespace,
    key: &str,
    member: &str,
    entity: &str,
    owner: &str,
) -> Repair {
    let owner_key = crate::keyspace::entity_key(desc, ns, owner);
    let name = key
        .strip_prefix(&owner_key)
        .and_then(|n| n.strip_prefix(':'))
        .unwrap_or_default();
    Repair::Member {
        entity_key: entity.to_owned(),
        listing: key.to_owned(),
        register: crate::keyspace::relation_register(&owner_key),
        member: member.to_owned(),
        listing_name: name.to_owned(),
    }
}

/// The leftovers of gone entity `member` (violation `at`): a sweep of what
/// it left in indexes and relations, and the removal of each leftover key
/// while the entity is still gone.
fn leftover_repair(
    desc: &'static EntityDesc,
    ns: &Namespace,
    (member, keys, at): (&String, &[String], usize),
    out: &mut Repairs,
) {
    let entity = EntityKeys::new(desc, ns, member.clone());
    let presence = crate::keyspace::ttl_key(desc, ns, member);
    out.writes.push((
        plan::lifecycle(desc, ns, entity, WriteOp::Sweep, None),
        vec![at],
    ));
    for k in keys {
        let removal = Repair::Key {
            entity_key: presence.clone(),
            leftover: k.clone(),
        };
        out.removals.push((removal, at));
    }
}

/// Why a violation that `repair` leaves alone needs a person.
fn manual_reason(v: &Violation) -> &'static str {
    match v {
        Violation::DuplicateUnique { .. } => {
            "two entities hold one unique value: decide which keeps it"
        }
        Violation::Unreadable { .. } => {
            "the entity's key has another type than the layout's: fix or delete it"
        }
        Violation::Undecodable { .. } => {
            "a stored field does not decode: fix the value or delete the entity"
        }
        Violation::ForeignKey { .. } => "no entity of the type has this key: move or delete it",
        Violation::UnlistedKey { .. } => {
            "nothing of the entity lists this key: relate through the library, or delete it"
        }
        Violation::WrongType { .. } => "the key holds another type than it needs: fix or delete it",
        // (`repairs` asks only for the ones above.)
        _ => unreachable!("repair plans a step for {v:?}"),
    }
}

/// What the checker asks for next.
enum Step {
    ScanEntities {
        cursor: u64,
    },
    ReadEntities {
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
    ScanIndex {
        index: usize,
        cursor: u64,
    },
    ReadIndex {
        index: usize,
        offset: usize,
    },
    /// The next pages of the sets of index `index` that had more.
    ReadIndexMore {
        index: usize,
    },
    ReadIds {
        cursor: u64,
    },
    Done,
}

/// The checker as a state machine without I/O: `next_request` gives the
/// pipeline to send, `feed` takes its replies. The async and the blocking
/// store drive the same machine, each with its own connection.
pub(crate) struct Verifier<'a> {
    desc: &'static EntityDesc,
    ns: &'a Namespace,
    step: Step,
    members: Vec<String>,
    /// The keys SCAN found under each member, until its entity was read.
    keys_of: BTreeMap<String, Vec<String>>,
    index_keys: Vec<String>,
    /// The sets of the index being read that have more pages: (position in
    /// `index_keys`, cursor).
    index_more: Vec<(usize, u64)>,
    expected: Expected,
    actual: Actual,
    /// Members whose entity is stored.
    live: Vec<String>,
    /// The relation sets and timelines of stored entities.
    listings: Vec<Listing>,
    /// (listing, member it lists).
    references: Vec<(usize, String)>,
    one_sided: Vec<Violation>,
    /// Dangling members and leftovers.
    gone: Vec<Violation>,
    unreadable: Vec<Violation>,
    /// Decodes a stored row as the Rust type would: the field and reason of
    /// the first error.
    decodes: Option<RowCheck>,
    /// Whether a member is one some pk of the type writes.
    members_valid: Option<MemberCheck>,
    /// The keys SCAN found under each stored entity, until its register
    /// was read: what none of its keys and listings accounts for is
    /// reported.
    scanned_live: BTreeMap<String, Vec<String>>,
    /// Registers, sets and lists of the wrong type already reported.
    wrong_typed: std::collections::BTreeSet<String>,
}

/// A relation set or timeline of a stored entity, from its register entry.
struct Listing {
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
            [mark, head, tail, rest @ ..] if *mark == crate::keyspace::TIMELINE_MARK => {
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
        let mut k = crate::keyspace::key_from_entry(&self.head, member, &self.tail);
        k.push_str(&self.presence);
        k
    }
}

/// Adds a [`Violation::WrongType`] for `key` to `report`, unless `seen`
/// holds it already.
fn wrong_type_once(
    seen: &mut std::collections::BTreeSet<String>,
    report: &mut Vec<Violation>,
    key: &str,
    wanted: &'static str,
) {
    if seen.insert(key.to_owned()) {
        report.push(Violation::WrongType {
            key: key.to_owned(),
            wanted,
        });
    }
}

/// True for an error reply of a command on a key of another type.
fn is_wrong_type(v: &Value) -> bool {
    matches!(v, Value::ServerError(e) if e.code() == "WRONGTYPE")
}

impl Verifier<'_> {
    /// Reports the keys SCAN found under stored entity `m` that are none
    /// of its keys, its register, the listings its register names (from
    /// `first` on in `listings`) or a request record.
    fn report_unlisted(&mut self, m: &str, register: &str, first: usize) {
        let Some(scanned) = self.scanned_live.remove(m) else {
            return;
        };
        let keys = EntityKeys::new(self.desc, self.ns, m.to_owned());
        for k in scanned {
            let known = keys.all().any(|own| *own == k)
                || k == register
                || k.contains(crate::keyspace::REQUEST_SUFFIX)
                || self.listings[first..].iter().any(|l| l.key == k);
            if !known {
                self.unreadable.push(Violation::UnlistedKey {
                    key: k,
                    member: m.to_owned(),
                });
            }
        }
    }
}

/// Decodes the row of a member as the entity type would; the field and the
/// reason of a failure.
pub(crate) type RowCheck =
    fn(member: &str, row: &crate::schema::entity::Row) -> Option<(&'static str, String)>;

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
    row: &crate::schema::entity::Row,
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

const CHUNK: usize = 500;
/// Index keys read per round trip: a page of each.
const KEYS_PER_TRIP: usize = 100;
/// Members asked of an index set per page (`SSCAN .. COUNT`): with
/// [`KEYS_PER_TRIP`], a round trip brings at most about 100,000 members,
/// however big the sets (one `SMEMBERS` of ten tag sets of 100,000 members
/// took a second).
const SET_PAGE: usize = 1000;

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

impl<'a> Verifier<'a> {
    pub fn new(desc: &'static EntityDesc, ns: &'a Namespace) -> Self {
        Verifier {
            desc,
            ns,
            step: Step::ScanEntities { cursor: 0 },
            members: Vec::new(),
            keys_of: BTreeMap::new(),
            index_keys: Vec::new(),
            index_more: Vec::new(),
            expected: Expected::default(),
            actual: Actual::default(),
            live: Vec::new(),
            listings: Vec::new(),
            references: Vec::new(),
            one_sided: Vec::new(),
            gone: Vec::new(),
            unreadable: Vec::new(),
            decodes: None,
            members_valid: None,
            scanned_live: BTreeMap::new(),
            wrong_typed: Default::default(),
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

    /// Reports `key` as holding the wrong type (once).
    fn wrong_type(&mut self, key: &str, wanted: &'static str) {
        wrong_type_once(&mut self.wrong_typed, &mut self.unreadable, key, wanted);
    }

    /// The next pipeline to send, or `None` when the report is ready.
    pub fn next_request(&self) -> Option<redis::Pipeline> {
        let (desc, ns) = (self.desc, self.ns);
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        match &self.step {
            Step::ScanEntities { cursor } => crate::keyspace::nodes::scan_page(
                &mut pipe,
                *cursor,
                &crate::keyspace::entity_scan_pattern(desc, ns),
            ),
            Step::ReadEntities { offset } => {
                let end = (offset + CHUNK).min(self.members.len());
                for m in &self.members[*offset..end] {
                    crate::plan::read::read(desc, &EntityKeys::new(desc, ns, m.clone()), &mut pipe);
                }
            }
            Step::ScanIndex { index, cursor } => self.request_index(&mut pipe, *index, *cursor),
            Step::ReadIndex { index, offset } => {
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
                    .arg(crate::keyspace::ids_key(desc, ns))
                    .arg(*cursor)
                    .arg("COUNT")
                    .arg(1000);
            }
            Step::ReadRegisters { offset } => {
                let end = (offset + CHUNK).min(self.live.len());
                for m in &self.live[*offset..end] {
                    pipe.cmd("HGETALL").arg(crate::keyspace::relation_register(
                        &crate::keyspace::entity_key(desc, ns, m),
                    ));
                }
            }
            Step::ReadListings { offset } => {
                let end = (offset + CHUNK).min(self.listings.len());
                for l in &self.listings[*offset..end] {
                    match l.reverse {
                        Some(_) => pipe.cmd("SMEMBERS").arg(&l.key),
                        None => pipe.cmd("LRANGE").arg(&l.key).arg(0).arg(-1),
                    };
                }
            }
            Step::CheckReferences { offset } => self.request_references(&mut pipe, *offset),
            Step::Done => return None,
        }
        Some(pipe)
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
                .arg(crate::keyspace::index_zset(desc, ns, idx.field))
                .arg(cursor)
                .arg("COUNT")
                .arg(1000);
        } else {
            crate::keyspace::nodes::scan_page(
                pipe,
                cursor,
                &crate::keyspace::index_scan_pattern(desc, ns, idx.field),
            );
        }
    }

    /// For a chunk of the members the listings name: EXISTS of the member's
    /// entity and, for a relation set, SISMEMBER of the owner in the other
    /// side's set (whether it lists the owner back).
    fn request_references(&self, pipe: &mut redis::Pipeline, offset: usize) {
        let end = (offset + CHUNK).min(self.references.len());
        for (at, m) in &self.references[offset..end] {
            let l = &self.listings[*at];
            pipe.cmd("EXISTS").arg(l.entity_of(m));
            if let Some(reverse) = &l.reverse {
                let theirs = crate::keyspace::key_from_entry(&l.head, m, &l.tail);
                pipe.cmd("SISMEMBER")
                    .arg(crate::keyspace::sub_key(&theirs, reverse))
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
            Step::ReadRegisters { offset } => self.feed_registers(offset, replies),
            Step::ReadListings { offset } => self.feed_listings(offset, replies),
            Step::CheckReferences { offset } => self.feed_references(offset, replies),
            Step::ScanIndex { index, .. } if desc.indexes[index].kind == IndexKind::Prefix => {
                self.feed_prefix_index(index, first_reply(replies))
            }
            Step::ScanIndex { index, .. } if desc.indexes[index].kind == IndexKind::Sorted => {
                self.feed_sorted_index(index, first_reply(replies))
            }
            Step::ScanIndex { index, .. } => self.feed_index_scan(index, first_reply(replies)),
            Step::ReadIndex { index, offset } => self.feed_index_keys(index, offset, replies),
            Step::ReadIndexMore { index } => self.feed_index_more(index, replies),
            Step::ReadIds { .. } => {
                let (cursor, ids) = scan_reply(first_reply(replies));
                self.actual.ids.extend(ids);
                match cursor {
                    0 => Step::Done,
                    cursor => Step::ReadIds { cursor },
                }
            }
            Step::Done => {
                return Err(Error::UnexpectedReply {
                    key: crate::keyspace::ids_key(desc, self.ns),
                    detail: "verify fed after it finished".into(),
                })
            }
        };
        Ok(())
    }

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

    /// A SCAN page of the entity keys: groups them by member (a key whose
    /// member no pk of the type writes is foreign); at the last page, the
    /// entities are read.
    fn feed_entity_scan(&mut self, reply: Value) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let (cursor, keys) = scan_reply(reply);
        for k in keys {
            match crate::keyspace::member_of_key(desc, ns, &k) {
                Some(m) if self.members_valid.is_none_or(|ok| ok(&m)) => {
                    self.keys_of.entry(m).or_default().push(k);
                }
                Some(_) => self.unreadable.push(Violation::ForeignKey { key: k }),
                None => {}
            }
        }
        if cursor != 0 {
            Step::ScanEntities { cursor }
        } else {
            self.members = self.keys_of.keys().cloned().collect();
            if self.members.is_empty() {
                self.index_step(0)
            } else {
                Step::ReadEntities { offset: 0 }
            }
        }
    }

    /// A chunk of entity reads: each stored entity's expected index
    /// entries, each gone one's leftover keys.
    fn feed_entities(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let end = (offset + CHUNK).min(self.members.len());
        let mut it = replies.into_iter();
        for at in offset..end {
            let m = self.members[at].clone();
            let keys = EntityKeys::new(desc, ns, m.clone());
            let scanned = self.keys_of.remove(&m).unwrap_or_default();
            match crate::plan::read::decode_read(desc, &keys, &mut it) {
                Ok(Some(row)) => self.entity_stored(&m, &keys, &row, scanned),
                Ok(None) => self.entity_gone(&m, scanned),
                // One entity that cannot be read does not stop the
                // check of the others.
                Err(e) => self.unreadable.push(Violation::Unreadable {
                    key: keys.base.clone(),
                    detail: e.to_string(),
                    member: m,
                }),
            }
        }
        if end < self.members.len() {
            Step::ReadEntities { offset: end }
        } else if self.live.is_empty() {
            self.index_step(0)
        } else {
            Step::ReadRegisters { offset: 0 }
        }
    }

    /// Stored entity `m`: a row the Rust type cannot decode is reported,
    /// its index entries are expected, and its register is read next.
    fn entity_stored(
        &mut self,
        m: &str,
        keys: &EntityKeys,
        row: &crate::schema::entity::Row,
        scanned: Vec<String>,
    ) {
        if let Some((field, reason)) = self.decodes.and_then(|check| check(m, row)) {
            self.unreadable.push(Violation::Undecodable {
                key: keys.base.clone(),
                field,
                reason,
            });
        }
        self.expected.add_row(self.desc, self.ns, m, row);
        self.live.push(m.to_owned());
        self.scanned_live.insert(m.to_owned(), scanned);
    }

    /// Entity `m` is gone: what SCAN found under its key is left over.
    fn entity_gone(&mut self, m: &str, scanned: Vec<String>) {
        // Request records expire on their own.
        let keys: Vec<String> = scanned
            .into_iter()
            .filter(|k| !k.contains(crate::keyspace::REQUEST_SUFFIX))
            .collect();
        if !keys.is_empty() {
            self.gone.push(Violation::Leftover {
                member: m.to_owned(),
                keys,
            });
        }
    }

    /// A chunk of relation registers (HGETALL): the listings each names,
    /// and the scanned keys of the entity none accounts for.
    fn feed_registers(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let end = (offset + CHUNK).min(self.live.len());
        for (at, v) in (offset..end).zip(replies) {
            let m = self.live[at].clone();
            let owner_key = crate::keyspace::entity_key(desc, ns, &m);
            let register = crate::keyspace::relation_register(&owner_key);
            if is_wrong_type(&v) {
                self.wrong_type(&register, "hash");
            }
            let flat: Vec<String> = list(v).into_iter().filter_map(text).collect();
            let first = self.listings.len();
            for pair in flat.chunks(2) {
                let key = crate::keyspace::sub_key(&owner_key, &pair[0]);
                let entry = pair.get(1).map(String::as_str).unwrap_or("");
                self.listings.extend(Listing::parse(&m, key, entry));
            }
            self.report_unlisted(&m, &register, first);
        }
        if end < self.live.len() {
            Step::ReadRegisters { offset: end }
        } else if self.listings.is_empty() {
            self.index_step(0)
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
                self.wrong_type(&l.key.clone(), wanted);
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
            self.index_step(0)
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
                    // The other side's set holds another type: that
                    // is the problem to report, not a one-sided pair.
                    let theirs = crate::keyspace::key_from_entry(&l.head, m, &l.tail);
                    let key = crate::keyspace::sub_key(&theirs, reverse);
                    // (Fields, not `self.wrong_type`: the loop holds
                    // `self.references`.)
                    wrong_type_once(&mut self.wrong_typed, &mut self.unreadable, &key, "set");
                    continue;
                }
            }
            let listed_back = back.map(|v| matches!(v, Some(Value::Int(1))));
            if !exists {
                self.gone.push(Violation::DanglingMember {
                    key: l.key.clone(),
                    member: m.clone(),
                    entity: l.entity_of(m),
                    owner: l.owner.clone(),
                });
            } else if listed_back == Some(false) {
                self.one_sided.push(Violation::OneSidedRelation {
                    key: l.key.clone(),
                    member: m.clone(),
                });
            }
        }
        if end < self.references.len() {
            Step::CheckReferences { offset: end }
        } else {
            self.index_step(0)
        }
    }

    /// A `ZSCAN` page of a prefix index's sorted set: its members
    /// (`<value>:<member>`) as its entries; at the last page, the next index.
    fn feed_prefix_index(&mut self, index: usize, reply: Value) -> Step {
        let (cursor, flat) = cursor_reply(reply);
        let entries = flat
            .into_iter()
            .step_by(2)
            .filter_map(|v| match v {
                Value::BulkString(b) => Some(b),
                _ => None,
            })
            .collect();
        add_prefix_entries(self.desc, self.ns, index, entries, &mut self.actual);
        self.next_page(index, cursor)
    }

    /// A `ZSCAN` page of a sorted index's sorted set: members and scores as
    /// its entries; at the last page, the next index.
    fn feed_sorted_index(&mut self, index: usize, reply: Value) -> Step {
        // Entries named `<prefix>:<field>:<score>`, like the others.
        let (cursor, flat) = cursor_reply(reply);
        let flat: Vec<String> = flat.into_iter().filter_map(text).collect();
        let entries = flat
            .chunks(2)
            .filter_map(|p| {
                let score = crate::plan::query::parse_score(p.get(1)?)?;
                Some(format!("{}:{}", crate::schema::codec::score_text(score), p[0]).into_bytes())
            })
            .collect();
        add_prefix_entries(self.desc, self.ns, index, entries, &mut self.actual);
        self.next_page(index, cursor)
    }

    /// After a `ZSCAN` page of index `index`: its next page, or the next
    /// index once the cursor is back at 0.
    fn next_page(&self, index: usize, cursor: u64) -> Step {
        match cursor {
            0 => self.index_step(index + 1),
            cursor => Step::ScanIndex { index, cursor },
        }
    }

    /// A SCAN page of an index's key family; at the last page, the keys
    /// found are read.
    fn feed_index_scan(&mut self, index: usize, reply: Value) -> Step {
        let (cursor, keys) = scan_reply(reply);
        self.index_keys.extend(keys);
        if cursor != 0 {
            Step::ScanIndex { index, cursor }
        } else if self.index_keys.is_empty() {
            self.index_step(index + 1)
        } else {
            Step::ReadIndex { index, offset: 0 }
        }
    }

    /// A chunk of index keys read: a unique key's owner (GET) or the first
    /// page of the members a set lists (SSCAN), as the entries found; sets
    /// with more pages are read on after the chunks.
    fn feed_index_keys(&mut self, index: usize, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + KEYS_PER_TRIP).min(self.index_keys.len());
        let unique = self.desc.indexes[index].kind == IndexKind::Unique;
        for (at, v) in (offset..end).zip(replies) {
            let (cursor, listed) = if unique {
                (0, text(v).into_iter().collect())
            } else {
                scan_reply(v)
            };
            self.add_listed(index, at, listed);
            if cursor != 0 {
                self.index_more.push((at, cursor));
            }
        }
        if end < self.index_keys.len() {
            Step::ReadIndex { index, offset: end }
        } else {
            self.after_index_keys(index)
        }
    }

    /// The next pages of sets that had more; those with more still go to
    /// the back of the line.
    fn feed_index_more(&mut self, index: usize, replies: Vec<Value>) -> Step {
        let n = KEYS_PER_TRIP.min(self.index_more.len());
        let read: Vec<(usize, u64)> = self.index_more.drain(..n).collect();
        for ((at, _), v) in read.into_iter().zip(replies) {
            let (cursor, listed) = scan_reply(v);
            self.add_listed(index, at, listed);
            if cursor != 0 {
                self.index_more.push((at, cursor));
            }
        }
        self.after_index_keys(index)
    }

    /// Adds members an index key lists (an empty page still records the
    /// key as found).
    fn add_listed(&mut self, index: usize, at: usize, listed: Vec<String>) {
        self.actual
            .entries
            .entry(self.index_keys[at].clone().into_bytes())
            .or_insert_with(|| (index, BTreeSet::new()))
            .1
            .extend(listed);
    }

    /// Once every key of index `index` had its first page: the sets with
    /// more pages, then the next index.
    fn after_index_keys(&mut self, index: usize) -> Step {
        if !self.index_more.is_empty() {
            return Step::ReadIndexMore { index };
        }
        self.index_keys.clear();
        self.index_step(index + 1)
    }

    /// Where the check is.
    pub fn progress(&self) -> Progress {
        let (step, done, total) = match &self.step {
            Step::ScanEntities { .. } => ("scanning entity keys", self.keys_of.len(), None),
            Step::ReadEntities { offset } => {
                ("reading entities", *offset, Some(self.members.len()))
            }
            Step::ReadRegisters { offset } => {
                ("reading relation registers", *offset, Some(self.live.len()))
            }
            Step::ReadListings { offset } => (
                "reading relation sets and timelines",
                *offset,
                Some(self.listings.len()),
            ),
            Step::CheckReferences { offset } => (
                "checking the members they list",
                *offset,
                Some(self.references.len()),
            ),
            Step::ScanIndex { .. } => ("scanning index keys", self.index_keys.len(), None),
            Step::ReadIndex { offset, .. } => {
                ("reading index keys", *offset, Some(self.index_keys.len()))
            }
            Step::ReadIndexMore { .. } => (
                "reading index keys",
                self.index_keys.len(),
                Some(self.index_keys.len()),
            ),
            Step::ReadIds { .. } => ("reading the set of all ids", self.actual.ids.len(), None),
            Step::Done => ("done", self.members.len(), Some(self.members.len())),
        };
        Progress { step, done, total }
    }

    /// The report, once `next_request` returned `None`.
    pub fn report(&self) -> Report {
        let mut report = compare(self.desc, self.ns, &self.expected, &self.actual);
        // The entries of an unreadable entity are not stale: it is there.
        let unreadable: BTreeSet<&str> = self
            .unreadable
            .iter()
            .filter_map(|v| match v {
                Violation::Unreadable { member, .. } => Some(member.as_str()),
                _ => None,
            })
            .collect();
        report.violations.retain(|v| match v {
            Violation::StaleEntry { member, .. }
            | Violation::StaleSortedEntry { member, .. }
            | Violation::StaleId { member } => !unreadable.contains(member.as_str()),
            _ => true,
        });
        report.violations.extend(self.one_sided.iter().cloned());
        report.violations.extend(self.gone.iter().cloned());
        report.violations.extend(self.unreadable.iter().cloned());
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::{b, bulk, commands, ACCOUNT};

    /// What the fake server holds under one key.
    enum Stored {
        Hash(Vec<(&'static str, &'static str)>),
        Text(&'static str),
        Members(Vec<&'static str>),
        List(Vec<&'static str>),
    }

    /// A keyspace that answers the verifier's requests; SCAN pages hold one
    /// key so that cursors are followed.
    struct Fake(BTreeMap<String, Stored>);

    impl Fake {
        fn new(entries: Vec<(&str, Stored)>) -> Self {
            Fake(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
            )
        }

        fn answer(&self, cmd: &[String]) -> Value {
            let texts = |items: Vec<&str>| Value::Array(items.into_iter().map(bulk).collect());
            match (cmd[0].as_str(), self.0.get(&cmd[1])) {
                ("SCAN", _) => {
                    let cursor: usize = cmd[1].parse().unwrap();
                    assert_eq!((cmd[2].as_str(), cmd[4].as_str()), ("MATCH", "COUNT"));
                    let head = cmd[3].strip_suffix('*').expect("a prefix pattern");
                    // `<head>[^@]*`: entity keys beside the `@` families.
                    let (head, not_at) = match head.strip_suffix("[^@]") {
                        Some(h) => (h, true),
                        None => (head, false),
                    };
                    let all: Vec<&str> = self
                        .0
                        .keys()
                        .filter(|k| {
                            k.strip_prefix(head)
                                .is_some_and(|r| !(not_at && (r.is_empty() || r.starts_with('@'))))
                        })
                        .map(String::as_str)
                        .collect();
                    let end = (cursor + 1).min(all.len());
                    let next = if end < all.len() { end } else { 0 };
                    Value::Array(vec![
                        bulk(&next.to_string()),
                        texts(all[cursor..end].to_vec()),
                    ])
                }
                ("HGETALL", Some(Stored::Hash(pairs))) => {
                    texts(pairs.iter().flat_map(|(k, v)| [*k, *v]).collect())
                }
                ("HGETALL", None) => Value::Array(vec![]),
                ("GET", Some(Stored::Text(t))) => bulk(t),
                ("GET", None) => Value::Nil,
                // RESP3 answers sets as sets.
                ("SMEMBERS", Some(Stored::Members(m))) => {
                    Value::Set(m.iter().map(|s| bulk(s)).collect())
                }
                ("SMEMBERS", None) => Value::Array(vec![]),
                // One member per page, to walk the cursor.
                ("SSCAN", stored) => {
                    let cursor: usize = cmd[2].parse().unwrap();
                    assert_eq!(cmd[3], "COUNT");
                    let all: Vec<&str> = match stored {
                        Some(Stored::Members(m)) => m.clone(),
                        _ => Vec::new(),
                    };
                    let end = (cursor + 1).min(all.len());
                    let next = if end < all.len() { end } else { 0 };
                    Value::Array(vec![
                        bulk(&next.to_string()),
                        texts(all[cursor.min(end)..end].to_vec()),
                    ])
                }
                ("SISMEMBER", Some(Stored::Members(m))) => {
                    Value::Int(m.contains(&cmd[2].as_str()) as i64)
                }
                ("SISMEMBER", None) => Value::Int(0),
                ("EXISTS", stored) => Value::Int(stored.is_some() as i64),
                ("LRANGE", Some(Stored::List(m))) => texts(m.clone()),
                ("LRANGE", None) => Value::Array(vec![]),
                _ => panic!("unexpected request {cmd:?}"),
            }
        }

        /// Runs the verifier to its end; returns the report and every request.
        fn verify(&self, ns: &Namespace) -> (Report, Vec<Vec<String>>) {
            let mut v = Verifier::new(&ACCOUNT, ns);
            let mut sent = Vec::new();
            while let Some(pipe) = v.next_request() {
                let cmds = commands(&pipe);
                assert!(sent.len() < 100, "the verifier does not finish");
                let replies = cmds.iter().map(|c| self.answer(c)).collect();
                sent.extend(cmds);
                v.feed(replies).unwrap();
            }
            assert!(v.feed(vec![]).is_err(), "fed after it finished");
            (v.report(), sent)
        }
    }

    fn account(email: &'static str, country: &'static str) -> Stored {
        Stored::Hash(vec![("email", email), ("country", country)])
    }

    fn members(m: &[&'static str]) -> Stored {
        Stored::Members(m.to_vec())
    }

    /// Two accounts and every entry they need.
    fn clean_store() -> Vec<(&'static str, Stored)> {
        vec![
            ("account:1", account("a@x", "DE")),
            ("account:2", account("b@x", "DE")),
            ("account:@email:a@x", Stored::Text("1")),
            ("account:@email:b@x", Stored::Text("2")),
            ("account:@country:DE", members(&["1", "2"])),
            ("account:@ids", members(&["1", "2"])),
        ]
    }

    fn with(mut store: Vec<(&'static str, Stored)>, key: &'static str, v: Stored) -> Fake {
        store.retain(|(k, _)| *k != key);
        store.push((key, v));
        Fake::new(store)
    }

    #[test]
    fn a_clean_store_gives_a_clean_report() {
        let (report, sent) = Fake::new(clean_store()).verify(&Namespace::none());
        assert_eq!(
            report,
            Report {
                entities: 2,
                index_entries: 4,
                violations: vec![],
            }
        );
        assert!(report.is_clean());
        let plan = repairs(&ACCOUNT, &Namespace::none(), &report);
        assert!(plan.writes.is_empty() && plan.removals.is_empty() && plan.manual.is_empty());
        // The steps: entities, their relation registers, each index, the ids.
        let names: Vec<(&str, &str)> = sent
            .iter()
            .map(|c| (c[0].as_str(), c.get(1).map_or("", String::as_str)))
            .collect();
        assert_eq!(
            names,
            [
                ("SCAN", "0"),
                ("SCAN", "1"),
                ("HGETALL", "account:1"),
                ("HGETALL", "account:2"),
                ("HGETALL", "account:1:@rel"),
                ("HGETALL", "account:2:@rel"),
                ("SCAN", "0"),
                ("SCAN", "1"),
                ("GET", "account:@email:a@x"),
                ("GET", "account:@email:b@x"),
                ("SCAN", "0"),
                // Index sets and the set of all ids in pages (of one member
                // here: the set's second page after every key's first).
                ("SSCAN", "account:@country:DE"),
                ("SSCAN", "account:@country:DE"),
                ("SSCAN", "account:@ids"),
                ("SSCAN", "account:@ids"),
            ]
        );
        assert_eq!(sent[0][3], "account:[^@]*");
        assert_eq!(sent[6][3], "account:@email:*");
        assert_eq!(sent[10][3], "account:@country:*");
    }

    #[test]
    fn the_namespace_prefixes_every_key_read() {
        let store = vec![
            ("t:account:1", account("a@x", "DE")),
            ("t:account:@email:a@x", Stored::Text("1")),
            ("t:account:@country:DE", members(&["1"])),
            ("t:account:@ids", members(&["1"])),
            // Another namespace's keys are not this one's.
            ("account:2", account("b@x", "DE")),
            ("account:@country:DE", members(&["2"])),
        ];
        let (report, sent) = Fake::new(store).verify(&Namespace::new("t"));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.entities, 1);
        assert!(sent
            .iter()
            .all(|c| c[0] == "SCAN" || c[1].starts_with("t:")));
    }

    #[test]
    fn an_entry_for_a_value_the_entity_does_not_hold_is_stale() {
        let mut store = clean_store();
        store.push(("account:@country:FR", members(&["1"])));
        let ns = Namespace::none();
        let (report, _) = Fake::new(store).verify(&ns);
        assert_eq!(
            report.violations,
            [Violation::StaleEntry {
                key: "account:@country:FR".into(),
                member: "1".into(),
            }]
        );
        let plans = writes(&ACCOUNT, &ns, &report);
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].op, WriteOp::Clean);
        assert_eq!(plans[0].keys.member, "1");
        assert_eq!(plans[0].stale, [(1, b("FR"))]);
    }

    #[test]
    fn an_entry_for_a_missing_entity_is_stale() {
        let store = with(clean_store(), "account:@email:c@x", Stored::Text("3"));
        let (report, _) = store.verify(&Namespace::none());
        assert_eq!(
            report.violations,
            [Violation::StaleEntry {
                key: "account:@email:c@x".into(),
                member: "3".into(),
            }]
        );
        let plans = writes(&ACCOUNT, &Namespace::none(), &report);
        assert_eq!(plans[0].op, WriteOp::Clean);
        assert_eq!(plans[0].stale, [(0, b("c@x"))]);
    }

    #[test]
    fn an_entity_absent_from_its_entry_is_missing() {
        let store = with(clean_store(), "account:@country:DE", members(&["1"]));
        let ns = Namespace::none();
        let (report, _) = store.verify(&ns);
        assert_eq!(
            report.violations,
            [Violation::MissingEntry {
                key: "account:@country:DE".into(),
                member: "2".into(),
            }]
        );
        let plans = writes(&ACCOUNT, &ns, &report);
        let got: Vec<(WriteOp, &str)> = plans
            .iter()
            .map(|p| (p.op, p.keys.member.as_str()))
            .collect();
        assert_eq!(got, [(WriteOp::Reindex, "2")]);
    }

    #[test]
    fn two_owners_of_one_unique_value_are_reported_and_left_alone() {
        let mut store = clean_store();
        store.retain(|(k, _)| *k != "account:2" && *k != "account:@email:b@x");
        store.push(("account:2", account("a@x", "DE")));
        let ns = Namespace::none();
        let (report, _) = Fake::new(store).verify(&ns);
        assert_eq!(
            report.violations,
            [Violation::DuplicateUnique {
                key: "account:@email:a@x".into(),
                members: vec!["1".into(), "2".into()],
            }]
        );
        let plan = repairs(&ACCOUNT, &ns, &report);
        assert!(plan.writes.is_empty());
        assert_eq!(plan.manual.len(), 1);
    }

    #[test]
    fn the_ids_set_lists_exactly_the_stored_entities() {
        let store = with(clean_store(), "account:@ids", members(&["1", "3"]));
        let ns = Namespace::none();
        let (report, _) = store.verify(&ns);
        assert_eq!(
            report.violations,
            [
                Violation::StaleId { member: "3".into() },
                Violation::MissingId { member: "2".into() },
            ]
        );
        let plans = writes(&ACCOUNT, &ns, &report);
        let got: Vec<(WriteOp, &str, usize)> = plans
            .iter()
            .map(|p| (p.op, p.keys.member.as_str(), p.stale.len()))
            .collect();
        assert_eq!(got, [(WriteOp::Clean, "3", 0), (WriteOp::Reindex, "2", 0)]);
    }

    /// The entity writes of a repair.
    fn writes(desc: &'static EntityDesc, ns: &Namespace, report: &Report) -> Vec<WritePlan> {
        repairs(desc, ns, report)
            .writes
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    #[test]
    fn keys_under_an_entity_without_the_entity_are_leftovers() {
        // An expired entity's shadow outlives it until swept; a request
        // record expires on its own.
        let mut store = clean_store();
        store.push(("account:5:@shadow", Stored::Hash(vec![("2", "DE")])));
        store.push(("account:5:@req:abc", Stored::Text("1")));
        store.push(("account:6:@req:abc", Stored::Text("1")));
        let ns = Namespace::none();
        let (report, _) = Fake::new(store).verify(&ns);
        assert_eq!(report.entities, 2);
        assert_eq!(
            report.violations,
            [Violation::Leftover {
                member: "5".into(),
                keys: vec!["account:5:@shadow".into()],
            }]
        );
        // Swept (indexes and relations, both sides), then the keys removed
        // while the entity is still gone.
        let plan = repairs(&ACCOUNT, &ns, &report);
        let got: Vec<(WriteOp, &str)> = plan
            .writes
            .iter()
            .map(|(p, _)| (p.op, p.keys.member.as_str()))
            .collect();
        assert_eq!(got, [(WriteOp::Sweep, "5")]);
        let removal = &plan.removals[0].0;
        let key = Repair::Key {
            entity_key: "account:5".into(),
            leftover: "account:5:@shadow".into(),
        };
        assert_eq!(removal, &key);
    }

    #[test]
    fn a_member_whose_entity_is_gone_dangles() {
        let mut store = clean_store();
        store.push((
            "account:1:@rel",
            Stored::Hash(vec![
                ("follows", "account:\n\nfollowers\n"),
                ("feed", "@list\npost:\n\n"),
            ]),
        ));
        store.push(("account:1:follows", members(&["2", "9"])));
        store.push((
            "account:2:@rel",
            Stored::Hash(vec![("followers", "account:\n\nfollows\n")]),
        ));
        store.push(("account:2:followers", members(&["1"])));
        // Entity 9 is gone but its reverse set lists 1 back.
        store.push(("account:9:followers", members(&["1"])));
        store.push(("account:1:feed", Stored::List(vec!["7", "8", "7"])));
        store.push(("post:8", Stored::Hash(vec![("text", "hi")])));
        let ns = Namespace::none();
        let (report, _) = Fake::new(store).verify(&ns);
        let dangling = |key: &str, member: &str, entity: &str| Violation::DanglingMember {
            key: key.into(),
            member: member.into(),
            entity: entity.into(),
            owner: "1".into(),
        };
        assert_eq!(
            report.violations,
            [
                Violation::Leftover {
                    member: "9".into(),
                    keys: vec!["account:9:followers".into()],
                },
                dangling("account:1:follows", "9", "account:9"),
                dangling("account:1:feed", "7", "post:7"),
            ],
            "{report}"
        );
        let plan = repairs(&ACCOUNT, &ns, &report);
        let removal = &plan.removals[1].0;
        let member = Repair::Member {
            entity_key: "account:9".into(),
            listing: "account:1:follows".into(),
            register: "account:1:@rel".into(),
            member: "9".into(),
            listing_name: "follows".into(),
        };
        assert_eq!(removal, &member);
        assert_eq!(plan.removals.len(), 3);
    }

    #[test]
    fn half_a_relation_is_one_sided() {
        let mut store = clean_store();
        store.push((
            "account:1:@rel",
            Stored::Hash(vec![("follows", "account:\n\nfollowers\n")]),
        ));
        store.push(("account:1:follows", members(&["2"])));
        // (2's reverse set is empty: Redis keeps no such key.)
        let (report, sent) = Fake::new(store).verify(&Namespace::none());
        assert!(sent.contains(&vec![
            "SISMEMBER".to_owned(),
            "account:2:followers".to_owned(),
            "1".to_owned()
        ]));
        let one_sided = Violation::OneSidedRelation {
            key: "account:1:follows".into(),
            member: "2".into(),
        };
        assert_eq!(report.violations, [one_sided]);
        let plan = repairs(&ACCOUNT, &Namespace::none(), &report);
        assert_eq!(
            plan.one_sided,
            [("account:1:follows".into(), "2".into(), 0)]
        );
    }

    #[test]
    fn a_report_reads_as_a_list_of_violations() {
        let report = Report {
            entities: 1,
            index_entries: 2,
            violations: vec![Violation::MissingId { member: "7".into() }],
        };
        assert_eq!(
            report.to_string(),
            "1 entities, 2 index entries, 1 violations\n  ids set misses entity `7`\n"
        );
    }
}
