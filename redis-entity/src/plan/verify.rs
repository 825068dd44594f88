//! `verify`: checks every index invariant of an entity type against what is
//! stored, and `repair` fixes what it found.
//!
//! The checker (`pages`) walks the ground truth (the entity keys, found with
//! SCAN) and every index (SCAN over each index's key family, or its sorted
//! set), a page at a time, and checks both ways:
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

mod pages;

pub(crate) use pages::{member_check, row_check, Verifier};

use crate::keyspace::EntityKeys;
use crate::plan::write::{self as plan, WritePlan};
use crate::schema::entity::EntityDesc;
use crate::schema::escape::Namespace;
use crate::script::args::Repair;
use crate::script::write::WriteOp;
use std::collections::BTreeMap;
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
    /// A bucket of the set of all members (an integer pk's ids are kept in
    /// buckets of 100, `user:@ids:12xx`) lists a member of another bucket:
    /// written around the library, it would outlive its entity's delete.
    MisplacedId {
        /// The bucket.
        key: String,
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
            Violation::MisplacedId { .. } => "MisplacedId",
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
            Violation::MisplacedId { key, member } => write!(f, "misplaced id `{member}` in `{key}`"),
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
    /// The server's `maxmemory-policy` (`None`: the user may not run
    /// `INFO`). Anything but `noeviction` can delete index entries or
    /// entities at the memory limit: see "Memory and eviction" in
    /// docs/consistency.md.
    pub memory_policy: Option<String>,
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
        if let Some(policy) = &self.memory_policy {
            let note = match policy.as_str() {
                "noeviction" => "",
                p if p.starts_with("allkeys-") => {
                    " (evicts any key at the memory limit: indexes can be lost)"
                }
                _ => " (evicts keys with a TTL at the memory limit, before they expire)",
            };
            writeln!(f, "  server maxmemory-policy: {policy}{note}")?;
        }
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
            // Both are a plain SREM of the member from the set listing it
            // (a misplaced id's own bucket is put right by its MissingId).
            Violation::OneSidedRelation { key, member }
            | Violation::MisplacedId { key, member } => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::{b, bulk, commands, ACCOUNT};
    use redis::Value;

    /// What the fake server holds under one key.
    enum Stored {
        Hash(Vec<(&'static str, &'static str)>),
        Text(&'static str),
        Members(Vec<&'static str>),
        List(Vec<&'static str>),
    }

    /// A keyspace that answers the verifier's requests; SCAN and SSCAN pages
    /// hold one item (unless made `paged`) so that cursors are followed.
    struct Fake(BTreeMap<String, Stored>, usize);

    impl Fake {
        fn new(entries: Vec<(&str, Stored)>) -> Self {
            Self::paged(entries, 1)
        }

        /// A keyspace whose SCAN and SSCAN pages hold `page` items.
        fn paged(entries: Vec<(&str, Stored)>, page: usize) -> Self {
            Fake(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
                page,
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
                    let end = (cursor + self.1).min(all.len());
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
                ("HMGET", stored) => Value::Array(
                    cmd[2..]
                        .iter()
                        .map(|f| match stored {
                            Some(Stored::Hash(pairs)) => pairs
                                .iter()
                                .find(|(k, _)| k == f)
                                .map_or(Value::Nil, |(_, v)| bulk(v)),
                            _ => Value::Nil,
                        })
                        .collect(),
                ),
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
                    let end = (cursor + self.1).min(all.len());
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
                // `BUCKETED_ID_PROBE`: bucket, one set, directory; member, bucket.
                // `BUCKETED_ID_PROBE`.
                ("EVAL", _) => self.id_probe(cmd),
                ("LRANGE", Some(Stored::List(m))) => texts(m.clone()),
                ("LRANGE", None) => Value::Array(vec![]),
                _ => panic!("unexpected request {cmd:?}"),
            }
        }

        /// `BUCKETED_ID_PROBE`: keys bucket, one set, directory; arguments
        /// member, bucket.
        fn id_probe(&self, cmd: &[String]) -> Value {
            let has = |k: &String, m: &String| matches!(self.0.get(k), Some(Stored::Members(ms)) if ms.contains(&m.as_str()));
            assert_eq!(cmd[2], "3");
            Value::Int(
                has(&cmd[3], &cmd[6]) as i64
                    + 2 * has(&cmd[4], &cmd[6]) as i64
                    + 4 * has(&cmd[5], &cmd[7]) as i64,
            )
        }

        /// Runs the verifier to its end; returns the report and every request.
        fn verify(&self, ns: &Namespace) -> (Report, Vec<Vec<String>>) {
            self.verify_holding(ns, usize::MAX)
        }

        /// [`verify`](Self::verify), checking after every round trip that
        /// the verifier holds at most `most` keys, members and entries.
        fn verify_holding(&self, ns: &Namespace, most: usize) -> (Report, Vec<Vec<String>>) {
            let mut v = Verifier::new(&ACCOUNT, ns);
            let mut sent = Vec::new();
            let mut trips = 0;
            while let Some(pipe) = v.next_request() {
                let cmds = commands(&pipe);
                trips += 1;
                assert!(trips < 10_000, "the verifier does not finish");
                let replies = cmds.iter().map(|c| self.answer(c)).collect();
                sent.extend(cmds);
                v.feed(replies).unwrap();
                assert!(v.held() <= most, "holds {} after {trips} trips", v.held());
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

    /// A request's command and the key it reads (an `EVAL`'s first key).
    fn name(c: &[String]) -> (&str, &str) {
        let key = if c[0] == "EVAL" { 3 } else { 1 };
        (c[0].as_str(), c.get(key).map_or("", String::as_str))
    }

    /// Two accounts and every entry they need.
    fn clean_store() -> Vec<(&'static str, Stored)> {
        vec![
            ("account:1", account("a@x", "DE")),
            ("account:2", account("b@x", "DE")),
            ("account:@email:a@x", Stored::Text("1")),
            ("account:@email:b@x", Stored::Text("2")),
            ("account:@country:DE", members(&["1", "2"])),
            // An integer pk's ids, in their bucket (0-99) and its directory.
            ("account:@ids:xx", members(&["1", "2"])),
            ("account:@ids:@buckets", members(&["xx"])),
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
                memory_policy: None,
            }
        );
        assert!(report.is_clean());
        let plan = repairs(&ACCOUNT, &Namespace::none(), &report);
        assert!(plan.writes.is_empty() && plan.removals.is_empty() && plan.manual.is_empty());
        // Page by page (a SCAN page holds one key here): each entity read,
        // its entries probed, its register read; then each index's keys
        // and the entities they list, and the ids with each one's presence.
        let names: Vec<(&str, &str)> = sent.iter().map(|c| name(c)).collect();
        let entity = |n: &'static str, email: &'static str| {
            [
                ("HGETALL", n),
                ("GET", email),
                ("SISMEMBER", "account:@country:DE"),
                ("EVAL", "account:@ids:xx"),
            ]
        };
        let mut want = vec![("SCAN", "0")];
        want.extend(entity("account:1", "account:@email:a@x"));
        want.extend([("HGETALL", "account:1:@rel"), ("SCAN", "1")]);
        want.extend(entity("account:2", "account:@email:b@x"));
        want.extend([
            ("HGETALL", "account:2:@rel"),
            ("SCAN", "0"),
            ("GET", "account:@email:a@x"),
            ("HMGET", "account:1"),
            ("SCAN", "1"),
            ("GET", "account:@email:b@x"),
            ("HMGET", "account:2"),
            ("SCAN", "0"),
            // Index sets and the set of all ids in pages (of one member
            // here: the set's second page after every key's first).
            ("SSCAN", "account:@country:DE"),
            ("HMGET", "account:1"),
            ("SSCAN", "account:@country:DE"),
            ("HMGET", "account:2"),
            // The one set a store written before buckets keeps (none
            // here), then the directory, and its buckets whole.
            ("SSCAN", "account:@ids"),
            ("SSCAN", "account:@ids:@buckets"),
            ("SMEMBERS", "account:@ids:xx"),
            ("EXISTS", "account:1"),
            ("EXISTS", "account:2"),
        ]);
        assert_eq!(names, want);
        // The hash layout reads back only the indexed field.
        assert_eq!(sent[14], ["HMGET", "account:1", "email"]);
        assert_eq!(sent[0][3], "account:[^@]*");
        assert_eq!(sent[12][3], "account:@email:*");
        assert_eq!(sent[18][3], "account:@country:*");
    }

    /// What the verifier holds does not grow with the data: with pages of
    /// 100 keys, it checks 3,000 accounts (9,000 keys and entries) holding
    /// at most 1,200 between round trips, and finds the one stale entry.
    #[test]
    fn the_verifier_holds_a_page_not_the_data() {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let store = |n: usize| {
            let mut store = Vec::new();
            let mut by_country: BTreeMap<&str, Vec<&'static str>> = BTreeMap::new();
            let mut ids = Vec::new();
            for i in 0..n {
                let (id, email) = (leak(i.to_string()), leak(format!("{i}@x")));
                let country = ["DE", "CN", "FR"][i % 3];
                store.push((leak(format!("account:{i}")), account(email, country)));
                store.push((leak(format!("account:@email:{email}")), Stored::Text(id)));
                by_country.entry(country).or_default().push(id);
                ids.push(id);
            }
            for (c, m) in by_country {
                store.push((leak(format!("account:@country:{c}")), Stored::Members(m)));
            }
            store.push(("account:@ids", Stored::Members(ids)));
            // One stale entry, found among the others.
            store.push(("account:@country:XX", members(&["7"])));
            Fake::paged(store, 100)
        };
        let ns = Namespace::none();
        let (small, _) = store(300).verify(&ns);
        let most = 1_200;
        let (big, _) = store(3_000).verify_holding(&ns, most);
        for (report, n) in [(small, 300), (big, 3_000)] {
            assert_eq!((report.entities, report.index_entries), (n, 2 * n + 1));
            assert_eq!(
                report.violations,
                [Violation::StaleEntry {
                    key: "account:@country:XX".into(),
                    member: "7".into()
                }]
            );
        }
    }

    #[test]
    fn the_namespace_prefixes_every_key_read() {
        let store = vec![
            ("t:account:1", account("a@x", "DE")),
            ("t:account:@email:a@x", Stored::Text("1")),
            ("t:account:@country:DE", members(&["1"])),
            ("t:account:@ids:xx", members(&["1"])),
            ("t:account:@ids:@buckets", members(&["xx"])),
            // Another namespace's keys are not this one's.
            ("account:2", account("b@x", "DE")),
            ("account:@country:DE", members(&["2"])),
        ];
        let (report, sent) = Fake::new(store).verify(&Namespace::new("t"));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.entities, 1);
        assert!(sent
            .iter()
            .all(|c| c[0] == "SCAN" || name(c).1.starts_with("t:")));
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
        let store = with(clean_store(), "account:@ids:xx", members(&["1", "3"]));
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

    /// A store written before buckets keeps its one set: read beside the
    /// buckets, an id in either is listed, a stale one in it is found; a
    /// bucket the directory lost hides its ids from every walk.
    #[test]
    fn the_one_set_is_read_beside_the_buckets_and_the_directory_checked() {
        let ids = |one, bucket, listed| {
            let mut store = clean_store();
            store.retain(|(k, _)| !k.starts_with("account:@ids"));
            store.push(("account:@ids", members(one)));
            store.push(("account:@ids:xx", members(bucket)));
            store.push(("account:@ids:@buckets", members(listed)));
            Fake::new(store)
        };
        let ns = Namespace::none();
        let (report, _) = ids(&["1"], &["2"], &["xx"]).verify(&ns);
        assert!(report.is_clean(), "{report}");
        let (report, _) = ids(&["1", "7"], &["2"], &["xx"]).verify(&ns);
        assert_eq!(
            report.violations,
            [Violation::StaleId { member: "7".into() }]
        );
        let (report, _) = ids(&["1"], &["2"], &[]).verify(&ns);
        assert_eq!(
            report.violations,
            [Violation::MissingId { member: "2".into() }]
        );
        // An id in a bucket not its own (150's is `1xx`), of no entity.
        let (report, _) = ids(&["1"], &["2", "150"], &["xx"]).verify(&ns);
        assert_eq!(
            report.violations,
            [
                Violation::MisplacedId {
                    key: "account:@ids:xx".into(),
                    member: "150".into()
                },
                Violation::StaleId {
                    member: "150".into()
                },
            ]
        );
        let plan = repairs(&ACCOUNT, &ns, &report);
        assert_eq!(
            plan.one_sided,
            [("account:@ids:xx".into(), "150".into(), 0)]
        );
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

    /// SCAN pages of one key here: an entity's keys fall in separate pages.
    /// A stored entity is checked and counted once (in the page of its
    /// entity key); a gone one's keys from two pages are one leftover.
    #[test]
    fn keys_of_one_entity_in_two_pages_are_checked_once() {
        let mut store = clean_store();
        store.push(("account:1:@shadow", Stored::Hash(vec![("2", "DE")])));
        store.push(("account:5:@shadow", Stored::Hash(vec![("2", "DE")])));
        store.push(("account:5:feed", Stored::List(vec!["7"])));
        let (report, sent) = Fake::new(store).verify(&Namespace::none());
        assert_eq!(report.entities, 2);
        assert_eq!(
            report.violations,
            [Violation::Leftover {
                member: "5".into(),
                keys: vec!["account:5:@shadow".into(), "account:5:feed".into()],
            }]
        );
        // Account 1's entries are looked up once, in its entity key's page.
        let probes = sent
            .iter()
            .filter(|c| c[0] == "GET" && c[1] == "account:@email:a@x")
            .count();
        assert_eq!(probes, 2, "once from the entity, once from the index walk");
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
            memory_policy: None,
        };
        assert_eq!(
            report.to_string(),
            "1 entities, 2 index entries, 1 violations\n  ids set misses entity `7`\n"
        );
        let evicting = Report {
            memory_policy: Some("allkeys-lru".into()),
            ..report
        };
        assert_eq!(
            evicting.to_string(),
            "1 entities, 2 index entries, 1 violations\n  server maxmemory-policy: allkeys-lru (evicts any key at the memory limit: indexes can be lost)\n  ids set misses entity `7`\n"
        );
    }
}
