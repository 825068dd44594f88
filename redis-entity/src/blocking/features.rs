//! The feature handles without async: each wraps the async handle of the
//! same name and runs its methods on the blocking store's runtime, from the
//! same kind of signature list as the store's (see `blocking!`).

use super::Store;
use crate::error::Result;
use crate::plan::verify::{Progress as VerifyProgress, Repaired, Report};
use crate::schema::entity::Entity;
use crate::schema::field::{Field, SortedIndex};
use crate::schema::pk::IntoPk;
use crate::store::board::Board;
use crate::store::migrate::{Migration, Progress};
use crate::store::relation::Relation;
use crate::store::relayout::RelayoutReport;
use crate::store::timeline::Timeline;
use redis::aio::ConnectionLike;
use std::time::{Duration, SystemTime};

/// A blocking handle: the blocking store it runs on, and the async handle.
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident<$($p:ident),*> = $inner:ty) => {
        $(#[$doc])*
        pub struct $name<'s, $($p,)* C> {
            store: &'s Store<C>,
            inner: $inner,
        }

        impl<'s, $($p,)* C> std::fmt::Debug for $name<'s, $($p,)* C>
        where
            $inner: std::fmt::Debug,
        {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(concat!("blocking::", stringify!($name)))
                    .field(&self.inner)
                    .finish()
            }
        }

        impl<'s, $($p,)* C> $name<'s, $($p,)* C> {
            fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
                self.store.run(f)
            }
        }
    };
}

handle!(
    /// A sorted index as a leaderboard (see [`crate::board::Leaderboard`]).
    Leaderboard<E> = crate::store::board::Leaderboard<'s, E, C>
);
handle!(
    /// The buckets of a rotating board (see [`crate::board::Rotating`]).
    Rotating<E> = crate::store::board::Rotating<'s, E, C>
);
handle!(
    /// The pairs of one relation (see [`crate::relation::Relations`]).
    Relations<A, B> = crate::store::relation::Relations<'s, A, B, C>
);
handle!(
    /// The lists of one timeline (see [`crate::relation::Timelines`]).
    Timelines<O, P> = crate::store::timeline::Timelines<'s, O, P, C>
);
handle!(
    /// The maintenance of one entity type (see
    /// [`crate::maintenance::Maintenance`]).
    Maintenance<E> = crate::store::maintenance::Maintenance<'s, E, C>
);
handle!(
    /// The TTLs of one entity type (see [`crate::Expiry`]).
    Expiry<E> = crate::store::Expiry<'s, E, C>
);

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// See [`crate::Store::board`].
    pub fn board<E: Entity, T, Co, K: SortedIndex<N>, N>(
        &self,
        field: Field<E, T, Co, K, N>,
    ) -> Leaderboard<'_, E, C> {
        Leaderboard {
            store: self,
            inner: self.inner.board(field),
        }
    }

    /// See [`crate::Store::rotating`].
    pub fn rotating<E: Entity>(&self, board: &Board<E>) -> Rotating<'_, E, C> {
        Rotating {
            store: self,
            inner: self.inner.rotating(board),
        }
    }

    /// See [`crate::Store::relation`].
    pub fn relation<A: Entity, B: Entity>(&self, rel: &Relation<A, B>) -> Relations<'_, A, B, C> {
        Relations {
            store: self,
            inner: self.inner.relation(rel),
        }
    }

    /// See [`crate::Store::timeline`].
    pub fn timeline<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
    ) -> Timelines<'_, O, P, C> {
        Timelines {
            store: self,
            inner: self.inner.timeline(timeline),
        }
    }

    /// See [`crate::Store::maintenance`].
    pub fn maintenance<E: Entity>(&self) -> Maintenance<'_, E, C> {
        Maintenance {
            store: self,
            inner: self.inner.maintenance::<E>(),
        }
    }

    /// See [`crate::Store::expiry`].
    pub fn expiry<E: Entity>(&self) -> Expiry<'_, E, C> {
        Expiry {
            store: self,
            inner: self.inner.expiry::<E>(),
        }
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Leaderboard<'_, E, C> {
    blocking! { "crate::board::Leaderboard";
        top[](n: usize) -> Result<Vec<(E, f64)>>;
        top_each[](n: usize) -> Result<Vec<Result<(E, f64)>>>;
        rank[](pk: impl IntoPk<E::Pk>) -> Result<Option<u64>>;
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Rotating<'_, E, C> {
    blocking! { "crate::board::Rotating";
        incr[](pk: impl IntoPk<E::Pk>, delta: f64) -> Result<f64>;
        incr_at[](pk: impl IntoPk<E::Pk>, delta: f64, at: SystemTime) -> Result<f64>;
        top[](n: usize) -> Result<Vec<(E, f64)>>;
        top_at[](at: SystemTime, n: usize) -> Result<Vec<(E, f64)>>;
        rank[](pk: impl IntoPk<E::Pk>) -> Result<Option<u64>>;
    }
}

impl<A: Entity, B: Entity, C: ConnectionLike + Clone + Send + Sync> Relations<'_, A, B, C> {
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

impl<A: Entity, C: ConnectionLike + Clone + Send + Sync> Relations<'_, A, A, C> {
    blocking! { "crate::relation::Relations";
        mutual[](a: impl IntoPk<A::Pk>) -> Result<Vec<A::Pk>>;
    }
}

impl<O: Entity, P: Entity, C: ConnectionLike + Clone + Send + Sync> Timelines<'_, O, P, C> {
    blocking! { "crate::relation::Timelines";
        push[](post: impl IntoPk<P::Pk>, owners: impl IntoIterator<Item = impl IntoPk<O::Pk>>)
            -> Result<()>;
        push_related[](post: impl IntoPk<P::Pk>, rel: &Relation<O, O>, author: impl IntoPk<O::Pk>)
            -> Result<usize>;
        len[](owner: impl IntoPk<O::Pk>) -> Result<u64>;
        ids[](owner: impl IntoPk<O::Pk>, offset: usize, n: usize) -> Result<Vec<P::Pk>>;
        page[](owner: impl IntoPk<O::Pk>, offset: usize, n: usize) -> Result<Vec<P>>;
        relayout[D: ConnectionLike + Clone + Send + Sync](to: &crate::store::Store<D>, count: usize)
            -> Result<Progress>;
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Maintenance<'_, E, C> {
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

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync + 'static> Maintenance<'_, E, C> {
    blocking! { "crate::maintenance::Maintenance";
        reindex[]() -> Result<usize>;
        reindex_with[P: FnMut(&VerifyProgress) + Send](progress: P) -> Result<usize>;
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Expiry<'_, E, C> {
    blocking! { "crate::Expiry";
        save_with_ttl[](entity: &E, ttl: Duration) -> Result<bool>;
        save_without_ttl[](entity: &E) -> Result<bool>;
        expire[](pk: impl IntoPk<E::Pk>, ttl: Duration) -> Result<bool>;
        persist[](pk: impl IntoPk<E::Pk>) -> Result<bool>;
        ttl[](pk: impl IntoPk<E::Pk>) -> Result<Option<Duration>>;
    }
}
