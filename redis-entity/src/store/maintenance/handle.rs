//! The maintenance of one entity type as a handle,
//! `store.maintenance::<User>()`: checking and fixing its indexes, sweeping
//! its expired entities, moving it to the other key layout, and migrating
//! legacy keys into it. The work itself is in the modules of each step.

use crate::error::Result;
use crate::plan::verify::{Progress, Repaired, Report};
use crate::schema::entity::Entity;
use crate::store::migrate::{self, Migration};
use crate::store::relayout::RelayoutReport;
use crate::store::Store;
use redis::aio::{ConnectionLike, ConnectionManager};
use std::marker::PhantomData;

/// Verify, repair, reindex, sweep, relayout and migrate for the entities of
/// type `E`: `store.maintenance::<User>()`.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// # #[derive(RedisEntity)] struct Book { #[pk] id: u64, #[index] author: String }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let books = store.maintenance::<Book>();
/// let report = books.verify().await?;
/// if !report.is_clean() {
///     let repaired = books.repair(&report).await?;
///     assert!(repaired.left.is_empty());
/// }
/// books.sweep(10_000).await?; // index entries of expired books
/// # Ok(()) }
/// ```
pub struct Maintenance<'s, E, C = ConnectionManager> {
    store: &'s Store<C>,
    _e: PhantomData<fn() -> E>,
}

impl<E, C> Clone for Maintenance<'_, E, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, C> Copy for Maintenance<'_, E, C> {}

impl<E: Entity, C> std::fmt::Debug for Maintenance<'_, E, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Maintenance({})", E::DESC.prefix)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The maintenance of the entities of type `E`: verify, repair,
    /// reindex, sweep, relayout, migrate.
    pub fn maintenance<E: Entity>(&self) -> Maintenance<'_, E, C> {
        Maintenance {
            store: self,
            _e: PhantomData,
        }
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Maintenance<'_, E, C> {
    /// Checks every index invariant of `E` against what is stored (SCAN,
    /// never KEYS; reads every entity and index key, so its time is
    /// proportional to the data, while what it holds is one page and the
    /// violations it finds). See [`crate::verify::Violation`] for what it
    /// finds.
    pub async fn verify(&self) -> Result<Report> {
        self.store.verify::<E>().await
    }

    /// [`verify`](Self::verify), calling `progress` after every round trip.
    pub async fn verify_with(&self, progress: impl FnMut(&Progress) + Send) -> Result<Report> {
        self.store.verify_with::<E>(progress).await
    }

    /// Fixes what `verify` reported, each fix conditional on the state it
    /// repairs still being there (see [`Repaired`]); what needs a person
    /// (duplicate unique values, undecodable records, foreign keys) is
    /// returned in [`Repaired::left`] with the reason.
    pub async fn repair(&self, report: &Report) -> Result<Repaired> {
        self.store.repair::<E>(report).await
    }

    /// [`repair`](Self::repair), calling `progress` after every round trip
    /// (each carries at most 500 fixes).
    pub async fn repair_with(
        &self,
        report: &Report,
        progress: impl FnMut(&Progress) + Send,
    ) -> Result<Repaired> {
        self.store.repair_with::<E>(report, progress).await
    }

    /// Removes the index entries of entities of `E` that have expired,
    /// looking at no more than `budget` members whose TTL has passed (oldest
    /// first). Returns how many expired entities were unindexed. Reads skip
    /// expired entities and remove a bounded number of what they meet; a
    /// periodic sweep removes the rest, with no keyspace notifications and
    /// no `CONFIG`.
    pub async fn sweep(&self, budget: usize) -> Result<usize> {
        self.store.sweep::<E>(budget).await
    }

    /// Copies one page of `E` into `to` from `cursor` (0 starts); see
    /// [`crate::relayout`] for the whole procedure.
    pub async fn relayout_batch<D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
    ) -> Result<migrate::Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        self.store.relayout_batch::<E, D>(to, cursor, count).await
    }

    /// Prunes one page of `to`'s walk of `E` from `cursor`: deletes there
    /// each entity this store no longer has, or whose unique values differ.
    pub async fn relayout_prune_batch<D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
    ) -> Result<migrate::Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        self.store
            .relayout_prune_batch::<E, D>(to, cursor, count)
            .await
    }

    /// One pass of the relayout of `E` into `to` (from cursor 0: the prune,
    /// then the copy; from another cursor, resumes the copy), calling
    /// `progress` after each batch. See [`crate::relayout`].
    pub async fn relayout<D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
        progress: impl FnMut(&migrate::Progress) + Send,
    ) -> Result<migrate::Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        self.store
            .relayout::<E, D>(to, cursor, count, progress)
            .await
    }

    /// Compares the stored `E`s here with those in `to`, entity by entity:
    /// the proof that a relayout is complete (0 missing, 0 extra, 0
    /// differing) before the source goes.
    pub async fn relayout_compare<D>(&self, to: &Store<D>, count: usize) -> Result<RelayoutReport>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        self.store.relayout_compare::<E, D>(to, count).await
    }

    /// Runs one batch of `migration` from `cursor`: SCAN, read, convert,
    /// save (each entity atomic), and delete the sources if asked. `convert`
    /// gets each legacy key and its value; `Ok(None)` skips the key.
    pub async fn migrate_batch<F>(
        &self,
        migration: &Migration,
        cursor: u64,
        convert: F,
    ) -> Result<migrate::Progress>
    where
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
    {
        self.store.migrate_batch(migration, cursor, convert).await
    }

    /// Runs `migration` from `cursor` to the end, batch after batch,
    /// calling `on_progress` after each (persist `progress.cursor` to
    /// resume after an interruption).
    pub async fn migrate<F, P>(
        &self,
        migration: &Migration,
        cursor: u64,
        convert: F,
        on_progress: P,
    ) -> Result<migrate::Progress>
    where
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
        P: FnMut(&migrate::Progress),
    {
        self.store
            .migrate(migration, cursor, convert, on_progress)
            .await
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync + 'static> Maintenance<'_, E, C> {
    /// Indexes every stored `E` again from its stored values (after an
    /// index was added to the type, or to rebuild lost index keys): SCAN of
    /// the entity keys, one pipelined write per 500 entities. Returns how
    /// many entities were indexed.
    pub async fn reindex(&self) -> Result<usize> {
        self.store.reindex::<E>().await
    }

    /// [`reindex`](Self::reindex), calling `progress` after every round
    /// trip.
    pub async fn reindex_with(&self, progress: impl FnMut(&Progress) + Send) -> Result<usize> {
        self.store.reindex_with::<E>(progress).await
    }
}
