//! The proof that a relayout is complete: the source and the destination
//! compared entity by entity, in their stored forms, both ways.

use super::{decoded, error_key, member};
use crate::error::Result;
use crate::schema::entity::{Entity, IndexKind, Row};
use crate::store::{checked_row, Store};
use redis::aio::ConnectionLike;
use std::fmt;
use std::time::Duration;

/// How many examples a report keeps.
const EXAMPLES: usize = 10;

/// What [`Maintenance::relayout_compare`](crate::maintenance::Maintenance::relayout_compare) found: the entities of one type in the
/// source and in the destination, and those that are not the same in both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelayoutReport {
    /// Entities read in the source.
    pub source: u64,
    /// Entities read in the destination.
    pub destination: u64,
    /// In the source, not in the destination.
    pub missing: u64,
    /// In the destination, not in the source.
    pub extra: u64,
    /// In both, with another stored form (a column, a map entry), or a TTL
    /// on one side only; a destination record that does not decode too.
    pub differing: u64,
    /// The first few of those, each with its key: `missing user:9`.
    pub examples: Vec<String>,
    /// Records that do not decode in the source, or in the destination
    /// where the source has none, with the reason: not compared.
    pub failed: Vec<(String, String)>,
}

impl RelayoutReport {
    /// True when both sides hold the same entities, each the same: the
    /// destination may replace the source.
    pub fn is_clean(&self) -> bool {
        self.missing == 0 && self.extra == 0 && self.differing == 0 && self.failed.is_empty()
    }

    fn example(&mut self, what: &str, key: &str) {
        if self.examples.len() < EXAMPLES {
            self.examples.push(format!("{what} {key}"));
        }
    }
}

impl fmt::Display for RelayoutReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in the source, {} in the destination: {} missing, {} extra, {} differing, {} unreadable",
            self.source,
            self.destination,
            self.missing,
            self.extra,
            self.differing,
            self.failed.len()
        )?;
        if !self.examples.is_empty() {
            write!(f, " (e.g. {})", self.examples.join(", "))?;
        }
        Ok(())
    }
}

/// An entity as one keyspace holds it: its stored form (map entries in
/// order, whatever the map type) and its remaining TTL.
pub(super) struct Held {
    pub(super) row: Row,
    pub(super) ttl: Option<Duration>,
}

/// Whether two keyspaces hold an entity the same: the same stored form,
/// expiring on both sides or on neither (the TTL left is not compared: it
/// runs down while the pass does).
pub(super) fn same(a: &Held, b: &Held) -> bool {
    a.row == b.row && a.ttl.is_some() == b.ttl.is_some()
}

/// Whether `there` holds a unique value `here` does not (the destination's
/// copy of a renamed entity), which must be released before another entity
/// takes it. An entity whose form cannot be built counts as differing.
pub(super) fn unique_values_differ<E: Entity>(here: &E, there: &E) -> bool {
    let (Ok(here), Ok(there)) = (here.to_row(), there.to_row()) else {
        return true;
    };
    E::DESC
        .indexes
        .iter()
        .filter(|i| i.kind == IndexKind::Unique)
        .filter_map(|i| i.column())
        .any(|c| here.columns.get(c) != there.columns.get(c))
}

/// `row` with each map's entries in order: a `HashMap` lists them in any.
fn ordered(mut row: Row) -> Row {
    for entries in &mut row.maps {
        entries.sort();
    }
    row
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Compares the stored `E`s here with those in `to`, entity by entity:
    /// a walk of this store (each page read in `to` too, with the TTLs of
    /// both sides) finds the missing and differing ones, a walk of `to`
    /// the extra ones. Exact when nothing writes either side meanwhile (the
    /// end of the procedure in the module docs); under writes it reports
    /// what the walks met.
    pub(crate) async fn relayout_compare<E: Entity, D>(
        &self,
        to: &Store<D>,
        count: usize,
    ) -> Result<RelayoutReport>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut report = RelayoutReport::default();
        let mut walk = self.scan::<E>(count);
        while let Some(page) = walk.next_page().await? {
            let found = decoded(page, &mut report.failed);
            report.source += found.len() as u64;
            self.compare_page(to, found, &mut report).await?;
        }
        let mut walk = to.scan::<E>(count);
        while let Some(page) = walk.next_page().await? {
            let found = decoded(page, &mut report.failed);
            report.destination += found.len() as u64;
            let pks: Vec<E::Pk> = found.into_iter().map(|(pk, _)| pk).collect();
            let here = self.get_many_each::<E>(&pks).await?;
            for (pk, here) in pks.iter().zip(here) {
                if matches!(here, Ok(None)) {
                    report.extra += 1;
                    report.example("extra", &to.keys().of::<E>(pk).base);
                }
            }
        }
        Ok(report)
    }

    /// Compares one page of this store's walk with `to`.
    async fn compare_page<E: Entity, D>(
        &self,
        to: &Store<D>,
        found: Vec<(E::Pk, E)>,
        report: &mut RelayoutReport,
    ) -> Result<()>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let here = self.held_entities(&found).await?;
        let pks: Vec<E::Pk> = found.into_iter().map(|(pk, _)| pk).collect();
        let there = to.held::<E>(&pks).await?;
        for ((pk, here), there) in pks.iter().zip(here).zip(there) {
            let key = to.keys().of::<E>(pk).base;
            match (here, there) {
                (Err(e), _) => report.failed.push((error_key(&e), e.to_string())),
                (Ok(_), Ok(None)) => {
                    report.missing += 1;
                    report.example("missing", &key);
                }
                (Ok(here), Ok(Some(there))) if same(&here, &there) => {}
                (Ok(_), _) => {
                    report.differing += 1;
                    report.example("differing", &key);
                }
            }
        }
        Ok(())
    }

    /// How this store holds `entities` (just read from it): their stored
    /// forms and TTLs.
    pub(super) async fn held_entities<E: Entity>(
        &self,
        entities: &[(E::Pk, E)],
    ) -> Result<Vec<Result<Held>>> {
        let members: Vec<String> = entities.iter().map(|(pk, _)| member::<E>(pk)).collect();
        let ttls = self.remaining_ttls::<E>(&members).await?;
        Ok(entities
            .iter()
            .zip(ttls)
            .map(|((_, e), ttl)| {
                Ok(Held {
                    row: ordered(checked_row(e)?),
                    ttl,
                })
            })
            .collect())
    }

    /// How this store holds the entities with `pks`: `None` for one it
    /// does not hold, an error for a record that does not decode.
    pub(super) async fn held<E: Entity>(&self, pks: &[E::Pk]) -> Result<Vec<Result<Option<Held>>>> {
        let stored = self.get_many_each::<E>(pks).await?;
        let members: Vec<String> = pks.iter().map(member::<E>).collect();
        let ttls = self.remaining_ttls::<E>(&members).await?;
        Ok(stored
            .into_iter()
            .zip(ttls)
            .map(|(e, ttl)| {
                let Some(e) = e? else {
                    return Ok(None);
                };
                Ok(Some(Held {
                    row: ordered(checked_row(&e)?),
                    ttl,
                }))
            })
            .collect())
    }
}
