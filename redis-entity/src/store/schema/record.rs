//! A type's schema record as read back: the definitions it met, the state
//! of each index and the walk of `schema apply` (the fields are described
//! in `script/lua/schema.lua`).

use crate::error::{Error, Result};
use crate::schema::definition::{kind_name, kind_named, Definition};
use crate::schema::entity::{EntityDesc, IndexKind};
use std::collections::BTreeMap;

/// The state of one index of a type, as its schema record keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexState {
    /// It holds every stored entity: queries use it.
    Ready,
    /// Writes keep it, and stored entities are not all in it yet:
    /// `schema apply` walks them. Queries on it are refused.
    Building,
    /// The current definition no longer has it: `schema apply` deletes its
    /// keys.
    Dropping,
}

impl IndexState {
    fn named(s: &str) -> Option<IndexState> {
        Some(match s {
            "ready" => IndexState::Ready,
            "building" => IndexState::Building,
            "dropping" => IndexState::Dropping,
            _ => return None,
        })
    }

    /// The state's name in the record.
    pub fn name(self) -> &'static str {
        match self {
            IndexState::Ready => "ready",
            IndexState::Building => "building",
            IndexState::Dropping => "dropping",
        }
    }
}

/// The progress of a walk of `schema apply`, as recorded after each page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Walk {
    /// When it started, server ms: a definition that wrote since then and
    /// does not keep the indexes built makes it start again.
    pub started_ms: u64,
    /// Entities indexed so far.
    pub walked: u64,
    /// True once the keys of dropped indexes (and of indexes whose kind
    /// changed) were deleted in this walk.
    pub deleted: bool,
    /// Per space: the SCAN cursor (`None`: done) and the run id of the
    /// server it is valid on (a restarted server starts its space again).
    pub cursors: Vec<(Option<u64>, String)>,
}

impl Walk {
    pub(crate) fn new(started_ms: u64, spaces: usize) -> Walk {
        Walk {
            started_ms,
            walked: 0,
            deleted: false,
            cursors: vec![(Some(0), String::new()); spaces],
        }
    }

    /// `<started> <walked> <deleted> <cursor>@<run id>,...` (`end` for a
    /// finished space).
    pub(crate) fn text(&self) -> String {
        let cursors: Vec<String> = self
            .cursors
            .iter()
            .map(|(c, run)| match c {
                Some(c) => format!("{c}@{run}"),
                None => format!("end@{run}"),
            })
            .collect();
        format!(
            "{} {} {} {}",
            self.started_ms,
            self.walked,
            u8::from(self.deleted),
            cursors.join(",")
        )
    }

    pub(crate) fn parse(text: &str) -> Option<Walk> {
        let mut parts = text.split(' ');
        let started_ms = parts.next()?.parse().ok()?;
        let walked = parts.next()?.parse().ok()?;
        let deleted = parts.next()? == "1";
        let cursors = parts
            .next()?
            .split(',')
            .map(|c| {
                let (c, run) = c.split_once('@')?;
                let c = if c == "end" {
                    None
                } else {
                    Some(c.parse().ok()?)
                };
                Some((c, run.to_owned()))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Walk {
            started_ms,
            walked,
            deleted,
            cursors,
        })
    }
}

/// A schema record with the server's time when it was read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Record {
    /// The script's status (`known`, `new`, ...); empty for a plain read.
    pub status: String,
    /// Server time, ms.
    pub now_ms: u64,
    /// The server's `maxmemory-policy`, read by an announcement (empty
    /// otherwise, or when the user may not run `INFO`).
    pub policy: String,
    /// The record's fields.
    pub fields: BTreeMap<String, String>,
}

impl Record {
    /// From a script's reply: status, server ms, then field, value pairs.
    pub(crate) fn from_reply(key: &str, reply: Vec<String>) -> Result<Record> {
        let bad = || Error::UnexpectedReply {
            key: key.to_owned(),
            detail: "not a schema record".into(),
        };
        let mut it = reply.into_iter();
        let status = it.next().ok_or_else(bad)?;
        let now_ms = it.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let policy = it.next().ok_or_else(bad)?;
        let rest: Vec<String> = it.collect();
        Ok(Record {
            status,
            now_ms,
            policy,
            fields: pairs(rest),
        })
    }

    /// From `HGETALL` (no status, no time).
    pub(crate) fn from_fields(fields: BTreeMap<String, String>) -> Record {
        Record {
            fields,
            ..Record::default()
        }
    }

    /// True when nothing was ever recorded.
    pub(crate) fn is_empty(&self) -> bool {
        !self.fields.contains_key("current")
    }

    pub(crate) fn current(&self) -> Option<&str> {
        self.fields.get("current").map(String::as_str)
    }

    /// The text of definition `fp`, read back.
    pub(crate) fn definition(&self, fp: &str) -> Option<Definition> {
        Definition::parse(self.fields.get(&format!("def:{fp}"))?)
    }

    /// Every definition met, with its generation and until when it may
    /// write (server ms), oldest first.
    pub(crate) fn definitions(&self) -> Vec<(String, u64, u64)> {
        let mut out: Vec<(String, u64, u64)> = self
            .fields
            .iter()
            .filter_map(|(f, v)| {
                let fp = f.strip_prefix("gen:")?;
                let seen = self
                    .fields
                    .get(&format!("seen:{fp}"))
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                Some((fp.to_owned(), v.parse().unwrap_or(0), seen))
            })
            .collect();
        out.sort_by_key(|&(_, gen, _)| gen);
        out
    }

    /// Every index the record names: field, kind, state.
    pub(crate) fn indexes(&self) -> Vec<(String, IndexKind, IndexState)> {
        self.fields
            .iter()
            .filter_map(|(f, v)| {
                let field = f.strip_prefix("index:")?;
                let (kind, state) = v.split_once(' ')?;
                Some((
                    field.to_owned(),
                    kind_named(kind)?,
                    IndexState::named(state)?,
                ))
            })
            .collect()
    }

    /// The state of index `field` of kind `kind`: `None` when the record
    /// keeps that field with another kind, or not at all.
    pub(crate) fn state(&self, field: &str, kind: IndexKind) -> Option<IndexState> {
        let v = self.fields.get(&format!("index:{field}"))?;
        let (k, state) = v.split_once(' ')?;
        (k == kind_name(kind)).then(|| IndexState::named(state))?
    }

    /// The old kinds of indexes whose kind changed, keys still to delete.
    pub(crate) fn stale_kinds(&self) -> Vec<(String, IndexKind)> {
        self.fields
            .iter()
            .filter_map(|(f, v)| Some((f.strip_prefix("drop:")?.to_owned(), kind_named(v)?)))
            .collect()
    }

    /// Fields renamed by the current definition, not yet rewritten: (old
    /// name, new name).
    pub(crate) fn renames(&self) -> Vec<(String, String)> {
        self.fields
            .iter()
            .filter_map(|(f, v)| Some((f.strip_prefix("rename:")?.to_owned(), v.clone())))
            .collect()
    }

    pub(crate) fn walk(&self) -> Option<Walk> {
        Walk::parse(self.fields.get("walk")?)
    }

    /// Which of `desc`'s indexes (by position) are ready for a definition
    /// that finds this record: every one when nothing is recorded.
    pub(crate) fn ready(&self, desc: &EntityDesc) -> Vec<bool> {
        desc.indexes
            .iter()
            .map(|i| self.is_empty() || self.state(i.field, i.kind) == Some(IndexState::Ready))
            .collect()
    }
}

/// `[f1, v1, f2, v2, ...]` as a map.
fn pairs(flat: Vec<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut it = flat.into_iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        out.insert(f, v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_reads_back_what_it_writes() {
        let mut w = Walk::new(1700, 3);
        w.walked = 42;
        w.deleted = true;
        w.cursors[1] = (None, "abc".into());
        w.cursors[2] = (Some(991), "def".into());
        assert_eq!(w.text(), "1700 42 1 0@,end@abc,991@def");
        assert_eq!(Walk::parse(&w.text()), Some(w));
        assert_eq!(Walk::parse("1 2"), None);
    }

    #[test]
    fn index_states_are_read_per_kind() {
        let r = Record::from_reply(
            "k",
            [
                "known",
                "5",
                "noeviction",
                "current",
                "ab",
                "index:color",
                "equality building",
                "index:name",
                "unique ready",
                "gen:ab",
                "2",
                "seen:ab",
                "90",
                "gen:cd",
                "1",
            ]
            .map(String::from)
            .to_vec(),
        )
        .unwrap();
        assert_eq!(r.now_ms, 5);
        assert_eq!(r.policy, "noeviction");
        assert_eq!(
            r.state("color", IndexKind::Equality),
            Some(IndexState::Building)
        );
        assert_eq!(r.state("color", IndexKind::Tags), None);
        assert_eq!(r.state("name", IndexKind::Unique), Some(IndexState::Ready));
        assert_eq!(
            r.definitions(),
            [("cd".to_owned(), 1, 0), ("ab".to_owned(), 2, 90)]
        );
        assert_eq!(r.indexes().len(), 2);
    }
}
