//! The synchronous [`Store`]: the same methods as [`crate::Store`], without
//! async. Each call runs the async store's method to completion on a small
//! runtime the blocking store owns, so the two can never drift apart: one
//! implementation, two ways to call it.
//!
//! Like other blocking clients built on an async core (`reqwest::blocking`),
//! it must not be called from inside an async runtime; use [`crate::Store`]
//! there.

use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::plan::verify::Report;
use crate::schema::codec::{MapField, Scalar};
use crate::schema::entity::Entity;
use crate::schema::escape::Namespace;
use crate::schema::field::{Field, HashField, SetIndex, SortedIndex, Unique};
use crate::store::board::Board;
use crate::store::migrate::{Migration, Progress};
use crate::store::query::Query;
use crate::store::relation::Relation;
use crate::store::timeline::Timeline;
use crate::store::Update;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use std::time::Duration;

/// Saves, loads and deletes entities without async.
///
/// Shareable between threads (`&Store` is enough for every call).
///
/// ```no_run
/// # use redis_entity::{RedisEntity, blocking::Store};
/// #[derive(RedisEntity)]
/// struct Profile {
///     #[pk]
///     id: u64,
///     name: String,
/// }
/// # fn run() -> redis_entity::Result<()> {
/// let store = Store::connect("redis://127.0.0.1/")?;
/// store.save(&Profile { id: 1001, name: "Ada".into() })?;
/// assert_eq!(store.get::<Profile>(&1001)?.unwrap().name, "Ada");
/// # Ok(()) }
/// ```
pub struct Store<C = MultiplexedConnection> {
    rt: tokio::runtime::Runtime,
    inner: crate::Store<C>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::redis("", redis::RedisError::from(e)))
}

impl Store<MultiplexedConnection> {
    /// Connects to `url` (`redis://host:port/db`).
    pub fn connect(url: &str) -> Result<Self> {
        let rt = runtime()?;
        let conn = rt.block_on(async {
            let client = redis::Client::open(url).map_err(|e| Error::redis("", e))?;
            client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| Error::redis("", e))
        })?;
        Ok(Store {
            rt,
            inner: crate::Store::new(conn),
        })
    }
}

impl<C> std::fmt::Debug for Store<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Store")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// A blocking store running `store` (its connection must be driven by a
    /// runtime that outlives this store, or be created by [`Store::connect`]).
    pub fn from_async(store: crate::Store<C>) -> Result<Self> {
        Ok(Store {
            rt: runtime()?,
            inner: store,
        })
    }

    /// The async store this one runs.
    pub fn as_async(&self) -> &crate::Store<C> {
        &self.inner
    }

    /// The same store with every key under `ns` (a tenant prefix).
    pub fn with_namespace(mut self, ns: Namespace) -> Self {
        self.inner = self.inner.with_namespace(ns);
        self
    }

    /// The namespace applied to every key.
    pub fn namespace(&self) -> &Namespace {
        self.inner.namespace()
    }

    /// Every key of the entity with `pk`, namespaced.
    pub fn keys_of<E: Entity>(&self, pk: &E::Pk) -> EntityKeys {
        self.inner.keys_of::<E>(pk)
    }

    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.rt.block_on(f)
    }

    /// See [`crate::Store::save`].
    pub fn save<E: Entity>(&self, entity: &E) -> Result<bool> {
        self.run(self.inner.save(entity))
    }

    /// See [`crate::Store::save_with_ttl`].
    pub fn save_with_ttl<E: Entity>(&self, entity: &E, ttl: Duration) -> Result<bool> {
        self.run(self.inner.save_with_ttl(entity, ttl))
    }

    /// See [`crate::Store::insert`].
    pub fn insert<E: Entity>(&self, entity: &E) -> Result<()> {
        self.run(self.inner.insert(entity))
    }

    /// See [`crate::Store::save_all`].
    pub fn save_all<E: Entity>(&self, entities: &[E]) -> Result<()> {
        self.run(self.inner.save_all(entities))
    }

    /// See [`crate::Store::get`].
    pub fn get<E: Entity>(&self, pk: &E::Pk) -> Result<Option<E>> {
        self.run(self.inner.get::<E>(pk))
    }

    /// See [`crate::Store::get_many`].
    pub fn get_many<E: Entity>(&self, pks: &[E::Pk]) -> Result<Vec<Option<E>>> {
        self.run(self.inner.get_many::<E>(pks))
    }

    /// See [`crate::Store::exists`].
    pub fn exists<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        self.run(self.inner.exists::<E>(pk))
    }

    /// See [`crate::Store::delete`].
    pub fn delete<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        self.run(self.inner.delete::<E>(pk))
    }

    /// See [`crate::Store::update`].
    pub fn update<E: Entity>(&self, pk: &E::Pk) -> Update<'_, E, Self> {
        Update::new(self, pk)
    }

    /// See [`crate::Store::expire`].
    pub fn expire<E: Entity>(&self, pk: &E::Pk, ttl: Duration) -> Result<bool> {
        self.run(self.inner.expire::<E>(pk, ttl))
    }

    /// See [`crate::Store::persist`].
    pub fn persist<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        self.run(self.inner.persist::<E>(pk))
    }

    /// See [`crate::Store::ttl`].
    pub fn ttl<E: Entity>(&self, pk: &E::Pk) -> Result<Option<Duration>> {
        self.run(self.inner.ttl::<E>(pk))
    }

    /// See [`crate::Store::hget`].
    pub fn hget<E: Entity, M: MapField>(
        &self,
        field: HashField<E, M>,
        pk: &E::Pk,
        key: impl Into<M::Key>,
    ) -> Result<Option<M::Value>> {
        self.run(self.inner.hget(field, pk, key))
    }

    /// See [`crate::Store::query`].
    pub fn query<E: Entity>(&self) -> Query<'_, E, Self> {
        Query::new(self)
    }

    /// See [`crate::Store::find`].
    pub fn find<E: Entity, T, Co, K: SetIndex>(
        &self,
        field: Field<E, T, Co, K>,
        value: impl Into<K::Value>,
    ) -> Result<Vec<E>> {
        self.run(self.inner.find(field, value))
    }

    /// See [`crate::Store::find_unique`].
    pub fn find_unique<E: Entity, T, Co, X: Scalar>(
        &self,
        field: Field<E, T, Co, Unique<X>>,
        value: impl Into<X>,
    ) -> Result<Option<E>> {
        self.run(self.inner.find_unique(field, value))
    }

    /// See [`crate::Store::top`].
    pub fn top<E: Entity, T, Co, K: SortedIndex>(
        &self,
        field: Field<E, T, Co, K>,
        n: usize,
    ) -> Result<Vec<(E, f64)>> {
        self.run(self.inner.top(field, n))
    }

    /// See [`crate::Store::rank`].
    pub fn rank<E: Entity, T, Co, K: SortedIndex>(
        &self,
        field: Field<E, T, Co, K>,
        pk: &E::Pk,
    ) -> Result<Option<u64>> {
        self.run(self.inner.rank(field, pk))
    }

    /// See [`crate::Store::board_incr`].
    pub fn board_incr<E: Entity>(&self, board: &Board<E>, pk: &E::Pk, delta: f64) -> Result<f64> {
        self.run(self.inner.board_incr(board, pk, delta))
    }

    /// See [`crate::Store::board_incr_at`].
    pub fn board_incr_at<E: Entity>(
        &self,
        board: &Board<E>,
        pk: &E::Pk,
        delta: f64,
        at: std::time::SystemTime,
    ) -> Result<f64> {
        self.run(self.inner.board_incr_at(board, pk, delta, at))
    }

    /// See [`crate::Store::board_top_at`].
    pub fn board_top_at<E: Entity>(
        &self,
        board: &Board<E>,
        at: std::time::SystemTime,
        n: usize,
    ) -> Result<Vec<(E, f64)>> {
        self.run(self.inner.board_top_at(board, at, n))
    }

    /// See [`crate::Store::board_top`].
    pub fn board_top<E: Entity>(&self, board: &Board<E>, n: usize) -> Result<Vec<(E, f64)>> {
        self.run(self.inner.board_top(board, n))
    }

    /// See [`crate::Store::board_rank`].
    pub fn board_rank<E: Entity>(&self, board: &Board<E>, pk: &E::Pk) -> Result<Option<u64>> {
        self.run(self.inner.board_rank(board, pk))
    }

    /// See [`crate::Store::relate`].
    pub fn relate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
    ) -> Result<bool> {
        self.run(self.inner.relate(rel, a, b))
    }

    /// See [`crate::Store::unrelate`].
    pub fn unrelate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
    ) -> Result<bool> {
        self.run(self.inner.unrelate(rel, a, b))
    }

    /// See [`crate::Store::related`].
    pub fn related<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
    ) -> Result<Vec<B::Pk>> {
        self.run(self.inner.related(rel, a))
    }

    /// See [`crate::Store::related_back`].
    pub fn related_back<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        b: &B::Pk,
    ) -> Result<Vec<A::Pk>> {
        self.run(self.inner.related_back(rel, b))
    }

    /// See [`crate::Store::mutual`].
    pub fn mutual<A: Entity>(&self, rel: &Relation<A, A>, a: &A::Pk) -> Result<Vec<A::Pk>> {
        self.run(self.inner.mutual(rel, a))
    }

    /// See [`crate::Store::related_entities`].
    pub fn related_entities<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
    ) -> Result<Vec<B>> {
        self.run(self.inner.related_entities(rel, a))
    }

    /// See [`crate::Store::timeline_push_related`].
    pub fn timeline_push_related<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: &P::Pk,
        rel: &Relation<O, O>,
        author: &O::Pk,
    ) -> Result<usize> {
        self.run(
            self.inner
                .timeline_push_related(timeline, post, rel, author),
        )
    }

    /// See [`crate::Store::timeline_push`].
    pub fn timeline_push<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: &P::Pk,
        owners: &[O::Pk],
    ) -> Result<()> {
        self.run(self.inner.timeline_push(timeline, post, owners))
    }

    /// See [`crate::Store::timeline`].
    pub fn timeline<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        owner: &O::Pk,
        offset: usize,
        n: usize,
    ) -> Result<Vec<P>> {
        self.run(self.inner.timeline(timeline, owner, offset, n))
    }

    /// See [`crate::Store::migrate_batch`].
    pub fn migrate_batch<E, F>(
        &self,
        migration: &Migration,
        cursor: u64,
        convert: F,
    ) -> Result<Progress>
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
    {
        self.run(self.inner.migrate_batch(migration, cursor, convert))
    }

    /// See [`crate::Store::migrate`].
    pub fn migrate<E, F, P>(
        &self,
        migration: &Migration,
        cursor: u64,
        convert: F,
        on_progress: P,
    ) -> Result<Progress>
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
        P: FnMut(&Progress),
    {
        self.run(self.inner.migrate(migration, cursor, convert, on_progress))
    }

    /// See [`crate::Store::verify`].
    pub fn verify<E: Entity>(&self) -> Result<Report> {
        self.run(self.inner.verify::<E>())
    }

    /// See [`crate::Store::repair`].
    pub fn repair<E: Entity>(&self, report: &Report) -> Result<usize> {
        self.run(self.inner.repair::<E>(report))
    }

    /// See [`crate::Store::sweep`].
    pub fn sweep<E: Entity>(&self, budget: usize) -> Result<usize> {
        self.run(self.inner.sweep::<E>(budget))
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Store<C> {
    /// See [`crate::Store::reindex`].
    pub fn reindex<E: Entity>(&self) -> Result<usize> {
        self.run(self.inner.reindex::<E>())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync, E: Entity> Query<'_, E, Store<C>> {
    /// See the async `fetch`.
    pub fn fetch(self) -> Result<Vec<E>> {
        let store = self.store;
        store.run(self.rebind(&store.inner).fetch())
    }

    /// See the async `ids`.
    pub fn ids(self) -> Result<Vec<E::Pk>> {
        let store = self.store;
        store.run(self.rebind(&store.inner).ids())
    }

    /// See the async `count`.
    pub fn count(self) -> Result<u64> {
        let store = self.store;
        store.run(self.rebind(&store.inner).count())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync, E: Entity> Update<'_, E, Store<C>> {
    /// See the async `exec`.
    pub fn exec(self) -> Result<()> {
        let store = self.store;
        store.run(self.rebind(&store.inner).exec())
    }
}

/// The read-through [`crate::Cache`] without async: the loader is a plain
/// closure (a SQL query on a blocking driver, say).
///
/// ```no_run
/// # use redis_entity::blocking::{Cache, Store};
/// # use std::time::Duration;
/// # fn run() -> redis_entity::Result<()> {
/// let store = Store::connect("redis://127.0.0.1/")?;
/// let cache = Cache::from_store(&store);
/// let price: Option<u64> = cache.get_or_load(&store, "price:42", Duration::from_secs(60), || {
///     Ok::<_, std::io::Error>(Some(42))
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cache<C = MultiplexedConnection> {
    inner: crate::Cache<C>,
}

impl<C: ConnectionLike + Clone + Send + Sync> Cache<C> {
    /// A cache sharing `store`'s connection and namespace.
    pub fn from_store(store: &Store<C>) -> Self {
        Cache {
            inner: crate::Cache::from_store(&store.inner),
        }
    }

    /// The same cache with other options.
    pub fn with_options(self, options: crate::CacheOptions) -> Self {
        Cache {
            inner: self.inner.with_options(options),
        }
    }

    /// See [`crate::Cache::get_or_load`]; runs on `store`'s runtime.
    pub fn get_or_load<T, F, LE>(
        &self,
        store: &Store<C>,
        key: &str,
        ttl: Duration,
        loader: F,
    ) -> Result<Option<T>>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        F: FnOnce() -> std::result::Result<Option<T>, LE>,
        LE: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        store.run(self.inner.get_or_load(key, ttl, || async { loader() }))
    }

    /// See [`crate::Cache::get_entity_or_load`].
    pub fn get_entity_or_load<E, F, LE>(
        &self,
        store: &Store<C>,
        pk: &E::Pk,
        ttl: Duration,
        loader: F,
    ) -> Result<Option<E>>
    where
        E: Entity,
        F: FnOnce() -> std::result::Result<Option<E>, LE>,
        LE: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        store.run(
            self.inner
                .get_entity_or_load(&store.inner, pk, ttl, || async { loader() }),
        )
    }

    /// See [`crate::Cache::invalidate`].
    pub fn invalidate(&self, store: &Store<C>, key: &str) -> Result<()> {
        store.run(self.inner.invalidate(key))
    }
}
