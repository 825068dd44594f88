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
//! - the set of all members lists exactly the stored entities.

use crate::entity::{EntityDesc, EntityKeys, IndexKind};
use crate::key::Namespace;
use crate::plan::{self, WritePlan};
use crate::query;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
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
            Violation::DuplicateUnique { key, members } => {
                write!(f, "duplicate unique value `{key}` held by {members:?}")
            }
            Violation::StaleId { member } => write!(f, "ids set lists missing entity `{member}`"),
            Violation::MissingId { member } => write!(f, "ids set misses entity `{member}`"),
        }
    }
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// The SCAN pattern of every key of the entity type (literals in layouts
/// and namespaces never contain glob characters).
pub(crate) fn entity_pattern(desc: &EntityDesc, ns: &Namespace) -> String {
    format!("{}{}{{*", ns.as_str(), desc.key_head)
}

/// The member inside an entity key, if the key is one.
pub(crate) fn member_of(desc: &EntityDesc, ns: &Namespace, key: &str) -> Option<String> {
    let rest = key
        .strip_prefix(ns.as_str())?
        .strip_prefix(desc.key_head)?
        .strip_prefix('{')?;
    let end = rest.find('}')?;
    Some(rest[..end].to_owned())
}

/// The SCAN pattern of the keys of index `i`.
pub(crate) fn index_pattern(desc: &EntityDesc, ns: &Namespace, i: usize) -> String {
    format!("{}*", desc.index_prefix(ns, &desc.indexes[i]))
}

/// Expected entries: index key -> (index position, members that need it).
#[derive(Default)]
pub(crate) struct Expected {
    pub entries: BTreeMap<Vec<u8>, (usize, BTreeSet<String>)>,
    pub members: BTreeSet<String>,
}

impl Expected {
    pub fn add_row(&mut self, desc: &EntityDesc, ns: &Namespace, member: &str, row: &crate::Row) {
        self.members.insert(member.to_owned());
        for i in 0..desc.indexes.len() {
            let prefix = desc.index_prefix(ns, &desc.indexes[i]);
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
    desc: &EntityDesc,
    ns: &Namespace,
    index: usize,
    entries: Vec<Vec<u8>>,
    actual: &mut Actual,
) {
    let prefix = desc.index_prefix(ns, &desc.indexes[index]);
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

/// Compares expected and actual entries.
pub(crate) fn compare(desc: &EntityDesc, expected: &Expected, actual: &Actual) -> Report {
    let mut report = Report {
        entities: expected.members.len(),
        index_entries: actual.entries.values().map(|(_, m)| m.len()).sum(),
        violations: Vec::new(),
    };
    let text = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
    let empty = BTreeSet::new();
    for (key, (_, listed)) in &actual.entries {
        let want = expected.entries.get(key).map(|(_, m)| m).unwrap_or(&empty);
        for m in listed.difference(want) {
            report.violations.push(Violation::StaleEntry {
                key: text(key),
                member: m.clone(),
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
        for m in want.difference(listed) {
            report.violations.push(Violation::MissingEntry {
                key: text(key),
                member: m.clone(),
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

/// The writes that fix a report: stale entries are removed only if still
/// stale, missing ones re-added from the stored values; both atomically per
/// entity. Duplicate unique values need a decision and are left alone.
pub(crate) fn repairs(desc: &EntityDesc, ns: &Namespace, report: &Report) -> Vec<WritePlan> {
    let mut stale: BTreeMap<String, Vec<(usize, Vec<u8>)>> = BTreeMap::new();
    let mut reindex: BTreeSet<String> = BTreeSet::new();
    for v in &report.violations {
        match v {
            Violation::StaleEntry { key, member } => {
                let found = desc.indexes.iter().enumerate().find_map(|(i, idx)| {
                    let prefix = desc.index_prefix(ns, idx);
                    key.strip_prefix(&prefix)
                        .map(|e| (i, e.as_bytes().to_vec()))
                });
                if let Some(entry) = found {
                    stale.entry(member.clone()).or_default().push(entry);
                }
            }
            Violation::StaleId { member } => {
                stale.entry(member.clone()).or_default();
            }
            Violation::MissingEntry { member, .. } | Violation::MissingId { member } => {
                reindex.insert(member.clone());
            }
            Violation::DuplicateUnique { .. } => {}
        }
    }
    let mut plans: Vec<WritePlan> = stale
        .into_iter()
        .map(|(m, entries)| {
            let keys = EntityKeys::new(desc, ns, m);
            plan::clean(desc, ns, &keys, &entries)
        })
        .collect();
    plans.extend(reindex.into_iter().map(|m| {
        let keys = EntityKeys::new(desc, ns, m);
        plan::reindex(desc, ns, &keys)
    }));
    plans
}
