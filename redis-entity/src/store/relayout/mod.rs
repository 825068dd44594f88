//! Moving a keyspace to the other key layout: from one server to a Redis
//! Cluster (or back), the entities of each type copied into a store of the
//! other layout, which writes every key and index entry in its own form.
//!
//! A pass makes the destination's entities of a type equal to the source's
//! as the pass reads them, and can be run again and again:
//!
//! 1. **prune** ([`Maintenance::relayout_prune_batch`](crate::maintenance::Maintenance::relayout_prune_batch)): a walk of the
//!    destination deletes there every entity the source no longer has, and
//!    every one whose unique values the source's no longer holds (a rename),
//!    so that the values it held are free before anything claims them (a
//!    rename chain A->B while B->C, or a swap, never collides);
//! 2. **copy** ([`Maintenance::relayout_batch`](crate::maintenance::Maintenance::relayout_batch)): a walk of the source (SCAN or
//!    SSCAN, never KEYS; shard after shard on a cluster) reads each page's
//!    entities here and there, with their TTLs, and writes in the
//!    destination each one it does not hold as the source does (the stored
//!    form as it is, `#[version]` included, its TTL kept or removed; each
//!    entity atomic with its indexes). Equal ones are left alone.
//!
//! [`Maintenance::relayout`](crate::maintenance::Maintenance::relayout) runs both.
//! [`Maintenance::relayout_compare`](crate::maintenance::Maintenance::relayout_compare) then proves
//! the two keyspaces equal entity by entity (a [`RelayoutReport`] of the
//! missing, extra and differing ones).
//!
//! **Writes during the move.** A pass run while the application writes to
//! the source copies what it reads, so it ends close to the source but not
//! equal to it: entities written after the walk passed them, and some
//! unique values taken in between, are left for the next pass (reported
//! in `failed`). The procedure that converges: relayout while writing (as
//! often as wanted, each pass leaves less to do), stop the writers (or pause
//! the source's writes), run a final pass, which then fails nothing, and
//! `relayout_compare`, which then reports 0 missing, 0 extra and 0
//! differing; point the application at the destination, and only then drop
//! the source. Relations and timelines are typed, so they move with
//! [`Relations::relayout`](crate::relation::Relations::relayout) and
//! [`Timelines::relayout`](crate::relation::Timelines::relayout) after the
//! final pass of their entities.
//!
//! ```no_run
//! # use redis_entity::{RedisEntity, Store};
//! # #[derive(RedisEntity)] struct User { #[pk] id: u64, #[index] country: String }
//! # async fn run() -> redis_entity::Result<()> {
//! let old = Store::connect("redis://10.0.0.1:6379/").await?;
//! let new = Store::builder().connect_cluster(&["redis://10.0.0.2:7000/", "redis://10.0.0.3:7000/"]).await?;
//! // While the application still writes to `old`:
//! old.maintenance::<User>().relayout(&new, 0, 500, |p| eprintln!("{} copied", p.migrated)).await?;
//! // Writers stopped: the final pass, then the proof.
//! let last = old.maintenance::<User>().relayout(&new, 0, 500, |_| {}).await?;
//! assert!(last.failed.is_empty());
//! let report = old.maintenance::<User>().relayout_compare(&new, 500).await?;
//! assert!(report.is_clean(), "{report}");
//! // Cut over to `new`; `old` may go now.
//! # Ok(()) }
//! ```

mod compare;
mod typed;

pub use compare::RelayoutReport;

use super::migrate::Progress;
use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::write;
use crate::schema::entity::Entity;
use crate::script::write::WriteOp;
use compare::same;
use redis::aio::ConnectionLike;
use std::time::Duration;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Copies one page of `E` into `to`, from `cursor` (0 starts; a page
    /// holds about `count` entities): each entity `to` does not hold as
    /// this store does is written there (counted in `migrated`), the others
    /// are left alone (`skipped`). Records that do not decode, and writes
    /// refused there (a unique value `to` still gives another entity: run
    /// [`relayout_prune_batch`](Self::relayout_prune_batch) first), are
    /// reported in `failed` with their key.
    pub(crate) async fn relayout_batch<E: Entity, D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let (mut out, found) = page_of::<E, C>(self, cursor, count).await?;
        if found.is_empty() {
            return Ok(out);
        }
        let here = self.held_entities(&found).await?;
        let pks: Vec<E::Pk> = found.into_iter().map(|(pk, _)| pk).collect();
        let there = to.held::<E>(&pks).await?;
        let mut plans = Vec::new();
        let mut persist = Vec::new();
        for ((pk, here), there) in pks.iter().zip(here).zip(there) {
            let here = match here {
                Ok(h) => h,
                Err(e) => {
                    out.failed.push((error_key(&e), e.to_string()));
                    continue;
                }
            };
            if let Ok(Some(there)) = &there {
                if same(&here, there) {
                    out.skipped += 1;
                    continue;
                }
                // A save without a TTL keeps the one stored there.
                if here.ttl.is_none() && there.ttl.is_some() {
                    persist.push(pk.clone());
                }
            }
            let keys = EntityKeys::of::<E>(&to.ns, pk);
            plans.push(write::copy(E::DESC, &to.ns, keys, here.row, here.ttl));
        }
        for (plan, r) in plans.iter().zip(to.write_many(&plans).await?) {
            tally(r, Some(plan.key()), &mut out.migrated, &mut out.failed);
        }
        for pk in &persist {
            if let Err(e) = to.expiry::<E>().persist(pk).await {
                out.failed.push((error_key(&e), e.to_string()));
            }
        }
        Ok(out)
    }

    /// Prunes one page of `to`'s walk of `E` (from `cursor`, about `count`
    /// entities): deletes there each entity this store no longer has, and
    /// each one whose unique values differ from this store's (its values
    /// are released; the copy walk writes it again). Counted in `deleted`;
    /// `scanned` counts `to`'s records.
    pub(crate) async fn relayout_prune_batch<E: Entity, D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let (mut out, found) = page_of::<E, D>(to, cursor, count).await?;
        if found.is_empty() {
            return Ok(out);
        }
        let here = self
            .get_many_each::<E>(found.iter().map(|(pk, _)| pk))
            .await?;
        let plans: Vec<_> = found
            .iter()
            .zip(here)
            .filter(|((_, there), here)| match here {
                Ok(None) => true,
                Ok(Some(here)) => compare::unique_values_differ(here, there),
                // Unreadable here: the copy walk reports it.
                Err(_) => false,
            })
            .map(|((pk, _), _)| {
                let keys = EntityKeys::of::<E>(&to.ns, pk);
                write::lifecycle(E::DESC, &to.ns, keys, WriteOp::Delete, None)
            })
            .collect();
        for (plan, r) in plans.iter().zip(to.write_many(&plans).await?) {
            tally(r, Some(plan.key()), &mut out.deleted, &mut out.failed);
        }
        Ok(out)
    }

    /// One pass over `E`: from cursor 0, prunes `to` (a whole walk of it,
    /// see [`relayout_prune_batch`](Self::relayout_prune_batch)) and then
    /// copies every stored `E` into it, batch after batch; from another
    /// cursor (a pass cut short), resumes the copy there. Calls `progress`
    /// after each batch with the totals so far (`scanned` counts this
    /// store's records).
    pub(crate) async fn relayout<E: Entity, D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
        mut progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut total = Progress {
            cursor,
            ..Progress::default()
        };
        if cursor == 0 {
            self.prune_all::<E, D>(to, count, &mut total, &mut progress)
                .await?;
        }
        loop {
            let batch = self.relayout_batch::<E, D>(to, total.cursor, count).await?;
            total.add(batch);
            progress(&total);
            if total.done {
                return Ok(total);
            }
        }
    }

    /// The prune walk of a whole pass, its counts added to `total`.
    async fn prune_all<E: Entity, D>(
        &self,
        to: &Store<D>,
        count: usize,
        total: &mut Progress,
        progress: &mut (impl FnMut(&Progress) + Send),
    ) -> Result<()>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut cursor = 0;
        loop {
            let batch = self.relayout_prune_batch::<E, D>(to, cursor, count).await?;
            total.deleted += batch.deleted;
            total.failed.extend(batch.failed);
            progress(total);
            if batch.done {
                return Ok(());
            }
            cursor = batch.cursor;
        }
    }

    /// The remaining TTL of the entities with `members` (`None`: none, or
    /// not stored), one pipeline per slot.
    async fn remaining_ttls<E: Entity>(&self, members: &[String]) -> Result<Vec<Option<Duration>>> {
        if members.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = members
            .iter()
            .map(|m| keyspace::ttl_key(E::DESC, &self.ns, m))
            .collect();
        self.per_slot(
            &keys,
            |k| k.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for k in &group {
                    pipe.cmd("PTTL").arg(k);
                }
                let ms: Vec<i64> = pipe
                    .query_async(&mut self.reader())
                    .await
                    .map_err(|e| Error::redis(&group[0], e))?;
                Ok(ms
                    .into_iter()
                    .map(|ms| (ms > 0).then(|| Duration::from_millis(ms as u64)))
                    .collect())
            },
        )
        .await
    }
}

/// One page of `store`'s walk of `E` from `cursor` (about `count`
/// entities): the progress it starts (cursor, done, scanned) and the pks
/// and entities that decode (the others are in its `failed`).
async fn page_of<E: Entity, S: ConnectionLike + Clone + Send + Sync>(
    store: &Store<S>,
    cursor: u64,
    count: usize,
) -> Result<(Progress, Vec<(E::Pk, E)>)> {
    let mut walk = store.scan::<E>(count).resume_at(cursor);
    let page = walk.next_page().await?.unwrap_or_default();
    let mut out = Progress {
        cursor: walk.cursor(),
        done: walk.cursor() == 0,
        scanned: page.len() as u64,
        ..Progress::default()
    };
    let found = decoded(page, &mut out.failed);
    Ok((out, found))
}

/// Counts one write's outcome: a success in `counter`, a failure in
/// `failed` under `key` (the error's own key when `None`).
pub(super) fn tally<T>(
    r: Result<T>,
    key: Option<&str>,
    counter: &mut u64,
    failed: &mut Vec<(String, String)>,
) {
    match r {
        Ok(_) => *counter += 1,
        Err(e) => failed.push((
            key.map_or_else(|| error_key(&e), str::to_owned),
            e.to_string(),
        )),
    }
}

/// The pks and entities of a page of a walk; a record that does not decode
/// is reported in `failed` with its key.
fn decoded<E: Entity>(page: Vec<Result<E>>, failed: &mut Vec<(String, String)>) -> Vec<(E::Pk, E)> {
    let mut found = Vec::with_capacity(page.len());
    for record in page {
        match record {
            Ok(e) => {
                let mut m = String::new();
                e.write_own_member(&mut m);
                if let Some(pk) = E::read_member(&m) {
                    found.push((pk, e));
                }
            }
            Err(e) => failed.push((error_key(&e), e.to_string())),
        }
    }
    found
}

/// The member of `pk`.
fn member<E: Entity>(pk: &E::Pk) -> String {
    let mut m = String::new();
    E::write_member(pk, &mut m);
    m
}

/// The key an error names, for a progress report.
fn error_key(e: &Error) -> String {
    match e {
        Error::NotFound { key }
        | Error::Redis { key, .. }
        | Error::WrongType { key, .. }
        | Error::Decode { key, .. }
        | Error::MissingField { key, .. }
        | Error::UnexpectedReply { key, .. } => key.clone(),
        _ => String::new(),
    }
}
