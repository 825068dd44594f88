//! The feature handles without async: one [`Handle`] type wraps each async
//! handle and runs its methods on the blocking store's runtime, from the
//! same kind of signature list as the store's (see `blocking!`).

use super::Store;
use crate::error::Result;
use crate::keyspace::EntityKeys;
use crate::plan::explain::Explain;
use crate::plan::verify::{Progress as VerifyProgress, Repaired, Report};
use crate::schema::entity::Entity;
use crate::schema::escape::{KeyLayout, Namespace};
use crate::schema::pk::IntoPk;
use crate::store::board::{BoardSource, Leaderboard, Rotating};
use crate::store::maintenance::Maintenance;
use crate::store::migrate::{Migration, Progress};
use crate::store::relation::{Relation, Relations};
use crate::store::relayout::RelayoutReport;
use crate::store::schema::{Applied, Schema, SchemaPlan, SchemaStatus};
use crate::store::timeline::{Timeline, Timelines};
use crate::store::{Expiry, Keys};
use redis::aio::ConnectionLike;
use std::time::{Duration, SystemTime};

/// A feature handle of the async store, run without async: on a blocking
/// store, `store.relation(&FOLLOWS)` is a `Handle` over the async
/// [`Relations`](crate::relation::Relations), and has its methods, each
/// blocking until done. One type for every feature (the impls below list
/// each one's methods), from the same kind of signature list as the store.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, relation::Relation, blocking::Store};
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
/// # fn run(store: Store) -> redis_entity::Result<()> {
/// store.relation(&FOLLOWS).relate(&8, &9)?;
/// assert_eq!(store.relation(&FOLLOWS).related(&8)?, vec![9]);
/// # Ok(()) }
/// ```
pub struct Handle<'s, H, C> {
    store: &'s Store<C>,
    inner: H,
}

impl<H: std::fmt::Debug, C> std::fmt::Debug for Handle<'_, H, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("blocking::Handle")
            .field(&self.inner)
            .finish()
    }
}

impl<H, C> Handle<'_, H, C> {
    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.store.run(f)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// See [`crate::Store::board`]: a sorted field's leaderboard, or a
    /// rotating board's buckets.
    pub fn board<B: BoardSource>(&self, board: B) -> Handle<'_, B::Handle<'_, C>, C> {
        Handle {
            store: self,
            inner: self.inner.board(board),
        }
    }

    /// See [`crate::Store::relation`].
    pub fn relation<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
    ) -> Handle<'_, Relations<'_, A, B, C>, C> {
        Handle {
            store: self,
            inner: self.inner.relation(rel),
        }
    }

    /// See [`crate::Store::timeline`].
    pub fn timeline<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
    ) -> Handle<'_, Timelines<'_, O, P, C>, C> {
        Handle {
            store: self,
            inner: self.inner.timeline(timeline),
        }
    }

    /// See [`crate::Store::maintenance`].
    pub fn maintenance<E: Entity>(&self) -> Handle<'_, Maintenance<'_, E, C>, C> {
        Handle {
            store: self,
            inner: self.inner.maintenance::<E>(),
        }
    }

    /// See [`crate::Store::schema`].
    pub fn schema(&self) -> Handle<'_, Schema<'_, C>, C> {
        Handle {
            store: self,
            inner: self.inner.schema(),
        }
    }

    /// See [`crate::Store::keys`].
    pub fn keys(&self) -> Handle<'_, Keys<'_, C>, C> {
        Handle {
            store: self,
            inner: self.inner.keys(),
        }
    }

    /// See [`crate::Store::expiry`].
    pub fn expiry<E: Entity>(&self) -> Handle<'_, Expiry<'_, E, C>, C> {
        Handle {
            store: self,
            inner: self.inner.expiry::<E>(),
        }
    }
}

impl<'s, C: ConnectionLike + Clone + Send + Sync> Handle<'s, Keys<'s, C>, C> {
    /// See [`crate::Keys::layout`].
    pub fn layout(&self) -> KeyLayout {
        self.inner.layout()
    }

    /// See [`crate::Keys::of`].
    pub fn of<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> EntityKeys {
        self.inner.of::<E>(pk)
    }

    /// See [`crate::Keys::families`].
    pub fn families(&self) -> Vec<crate::keyspace::layout::KeyPattern> {
        self.inner.families()
    }

    /// See [`crate::Keys::namespace`].
    pub fn namespace(&self) -> &'s Namespace {
        self.inner.namespace()
    }

    /// See [`crate::Keys::explain_save`].
    pub fn explain_save<E: Entity>(&self, entity: &E) -> Result<Explain> {
        self.inner.explain_save(entity)
    }

    /// See [`crate::Keys::scan_pages`].
    pub fn scan_pages(&self, pattern: &str) -> super::KeyScan<'s, C> {
        super::KeyScan {
            store: self.store,
            inner: self.inner.scan_pages(pattern),
            page: Vec::new().into_iter(),
            done: false,
        }
    }

    blocking! { "crate::Keys";
        check_layout[]() -> Result<()>;
        scan[](pattern: &str) -> Result<Vec<String>>;
    }
}

impl<'s, E: Entity, C: ConnectionLike + Clone + Send + Sync> Handle<'s, Leaderboard<'s, E, C>, C> {
    blocking! { "crate::board::Leaderboard";
        top[](n: usize) -> Result<Vec<(E, f64)>>;
        top_each[](n: usize) -> Result<Vec<Result<(E, f64)>>>;
        rank[](pk: impl IntoPk<E::Pk>) -> Result<Option<u64>>;
    }
}

impl<'s, E: Entity, C: ConnectionLike + Clone + Send + Sync> Handle<'s, Rotating<'s, E, C>, C> {
    blocking! { "crate::board::Rotating";
        incr[](pk: impl IntoPk<E::Pk>, delta: f64) -> Result<f64>;
        incr_at[](pk: impl IntoPk<E::Pk>, delta: f64, at: SystemTime) -> Result<f64>;
        top[](n: usize) -> Result<Vec<(E, f64)>>;
        top_at[](at: SystemTime, n: usize) -> Result<Vec<(E, f64)>>;
        rank[](pk: impl IntoPk<E::Pk>) -> Result<Option<u64>>;
    }
}

impl<'s, A: Entity, B: Entity, C: ConnectionLike + Clone + Send + Sync>
    Handle<'s, Relations<'s, A, B, C>, C>
{
    blocking! { "crate::relation::Relations";
        relate[](a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool>;
        unrelate[](a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool>;
        is_related[](a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool>;
        related_count[](a: impl IntoPk<A::Pk>) -> Result<u64>;
        related_back_count[](b: impl IntoPk<B::Pk>) -> Result<u64>;
        related[](a: impl IntoPk<A::Pk>) -> Result<Vec<B::Pk>>;
        related_back[](b: impl IntoPk<B::Pk>) -> Result<Vec<A::Pk>>;
        related_entities[](a: impl IntoPk<A::Pk>) -> Result<Vec<B>>;
        relayout[D: ConnectionLike + Clone + Send + Sync](to: &crate::store::Store<D>, count: usize)
            -> Result<Progress>;
    }
}

impl<'s, A: Entity, C: ConnectionLike + Clone + Send + Sync> Handle<'s, Relations<'s, A, A, C>, C> {
    blocking! { "crate::relation::Relations";
        mutual[](a: impl IntoPk<A::Pk>) -> Result<Vec<A::Pk>>;
    }
}

impl<'s, O: Entity, P: Entity, C: ConnectionLike + Clone + Send + Sync>
    Handle<'s, Timelines<'s, O, P, C>, C>
{
    blocking! { "crate::relation::Timelines";
        push[](post: impl IntoPk<P::Pk>, owners: impl IntoIterator<Item = impl IntoPk<O::Pk>>)
            -> Result<usize>;
        push_related[](post: impl IntoPk<P::Pk>, rel: &Relation<O, O>, author: impl IntoPk<O::Pk>)
            -> Result<usize>;
        len[](owner: impl IntoPk<O::Pk>) -> Result<u64>;
        ids[](owner: impl IntoPk<O::Pk>, offset: usize, n: usize) -> Result<Vec<P::Pk>>;
        page[](owner: impl IntoPk<O::Pk>, offset: usize, n: usize) -> Result<Vec<P>>;
        relayout[D: ConnectionLike + Clone + Send + Sync](to: &crate::store::Store<D>, count: usize)
            -> Result<Progress>;
    }
}

impl<'s, E: Entity, C: ConnectionLike + Clone + Send + Sync> Handle<'s, Maintenance<'s, E, C>, C> {
    blocking! { "crate::maintenance::Maintenance";
        verify[]() -> Result<Report>;
        verify_with[P: FnMut(&VerifyProgress) + Send](progress: P) -> Result<Report>;
        repair[](report: &Report) -> Result<Repaired>;
        repair_with[P: FnMut(&VerifyProgress) + Send](report: &Report, progress: P)
            -> Result<Repaired>;
        sweep[](budget: usize) -> Result<usize>;
        relayout_batch[D: ConnectionLike + Clone + Send + Sync](
            to: &crate::store::Store<D>,
            cursor: u64,
            count: usize,
        ) -> Result<Progress>;
        relayout_prune_batch[D: ConnectionLike + Clone + Send + Sync](
            to: &crate::store::Store<D>,
            cursor: u64,
            count: usize,
        ) -> Result<Progress>;
        relayout[D: ConnectionLike + Clone + Send + Sync, F: FnMut(&Progress) + Send](
            to: &crate::store::Store<D>,
            cursor: u64,
            count: usize,
            progress: F,
        ) -> Result<Progress>;
        relayout_compare[D: ConnectionLike + Clone + Send + Sync](to: &crate::store::Store<D>, count: usize)
            -> Result<RelayoutReport>;
        migrate_batch[F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>](
            migration: &Migration,
            cursor: u64,
            convert: F,
        ) -> Result<Progress>;
        migrate[
            F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
            P: FnMut(&Progress),
        ](migration: &Migration, cursor: u64, convert: F, on_progress: P) -> Result<Progress>;
    }
}

impl<'s, E: Entity, C: ConnectionLike + Clone + Send + Sync + 'static>
    Handle<'s, Maintenance<'s, E, C>, C>
{
    blocking! { "crate::maintenance::Maintenance";
        reindex[]() -> Result<usize>;
        reindex_with[P: FnMut(&VerifyProgress) + Send](progress: P) -> Result<usize>;
    }
}

impl<'s, C: ConnectionLike + Clone + Send + Sync + 'static> Handle<'s, Schema<'s, C>, C> {
    blocking! { "crate::evolution::Schema";
        plan[E: Entity]() -> Result<SchemaPlan> as plan::<E>;
        status[E: Entity]() -> Result<SchemaStatus> as status::<E>;
        apply[E: Entity]() -> Result<Applied> as apply::<E>;
        apply_with[E: Entity, P: FnMut(&VerifyProgress) + Send](progress: P) -> Result<Applied>
            as apply_with::<E>;
    }
}

impl<'s, E: Entity, C: ConnectionLike + Clone + Send + Sync> Handle<'s, Expiry<'s, E, C>, C> {
    blocking! { "crate::Expiry";
        save_with_ttl[](entity: &E, ttl: Duration) -> Result<bool>;
        save_without_ttl[](entity: &E) -> Result<bool>;
        expire[](pk: impl IntoPk<E::Pk>, ttl: Duration) -> Result<bool>;
        persist[](pk: impl IntoPk<E::Pk>) -> Result<bool>;
        ttl[](pk: impl IntoPk<E::Pk>) -> Result<Option<Duration>>;
    }
}
