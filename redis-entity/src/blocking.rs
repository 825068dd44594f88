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
use crate::plan::verify::{Progress as VerifyProgress, Repaired, Report};
use crate::schema::codec::MapField;
use crate::schema::entity::Entity;
use crate::schema::escape::Namespace;
use crate::schema::field::{Field, HashField, SetIndex, SortedIndex, UniqueIndex};
use crate::schema::pk::IntoPk;
use crate::store::board::Board;
use crate::store::migrate::{Migration, Progress};
use crate::store::query::Query;
use crate::store::relation::Relation;
use crate::store::timeline::Timeline;
use crate::store::Update;
use redis::aio::{ConnectionLike, ConnectionManager};
use std::time::Duration;

/// The blocking form of async store methods, from one list of signatures:
/// each runs the async method of the same name to completion. Generics go
/// in brackets; `as name::<..>` gives the turbofish the call needs.
macro_rules! blocking {
    ($(
        $name:ident [$($gen:tt)*] ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty
            $(as $call:ident::<$($turbofish:ty),*>)?;
    )*) => {$(
        #[doc = concat!("See [`crate::Store::", stringify!($name), "`].")]
        pub fn $name<$($gen)*>(&self, $($arg: $ty),*) -> $ret {
            self.run(blocking!(@call self.inner, ($($arg),*), $name $(, $call::<$($turbofish),*>)?))
        }
    )*};
    (@call $inner:expr, ($($arg:ident),*), $name:ident) => { $inner.$name($($arg),*) };
    (@call $inner:expr, ($($arg:ident),*), $name:ident, $call:ident::<$($turbofish:ty),*>) => {
        $inner.$call::<$($turbofish),*>($($arg),*)
    };
}

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
pub struct Store<C = ConnectionManager> {
    rt: tokio::runtime::Runtime,
    inner: crate::Store<C>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::redis("", redis::RedisError::from(e)))
}

impl Store<ConnectionManager> {
    /// Connects to `url` (`redis://[user:password@]host:port/db`) with the
    /// default [`crate::ConnectOptions`] (see [`crate::Store::connect`]).
    pub fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, crate::ConnectOptions::default())
    }

    /// Connects to `url` with `options` (timeouts, reconnection).
    pub fn connect_with(url: &str, options: crate::ConnectOptions) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::Store::connect_with(url, options))?;
        Ok(Store { rt, inner })
    }
}

impl Store<redis::cluster_async::ClusterConnection> {
    /// Connects to a Redis Cluster given some of its nodes' URLs (see
    /// [`crate::Store::connect_cluster`]).
    pub fn connect_cluster<S: AsRef<str>>(urls: &[S]) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::Store::connect_cluster(urls))?;
        Ok(Store { rt, inner })
    }
}

impl Store<crate::AnyConnection> {
    /// Connects to one server, or given several URLs separated by commas to
    /// the Redis Cluster they belong to, as one store type (see
    /// [`crate::Store::connect_any`]).
    pub fn connect_any(target: &str) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::Store::connect_any(target))?;
        Ok(Store { rt, inner })
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

    /// The same store reading from a replica (see
    /// [`crate::Store::with_read_replica`]).
    pub fn with_read_replica(mut self, replica: C) -> Self {
        self.inner = self.inner.with_read_replica(replica);
        self
    }

    /// The same store with a near cache connected to `url` (see
    /// [`crate::near::NearCache`]; for a store of a cluster, some of its
    /// nodes' URLs separated by commas); its connections are driven by this
    /// store's runtime, so invalidations are taken in at each call.
    pub fn with_near_cache(
        mut self,
        url: &str,
        options: crate::near::NearCacheOptions,
    ) -> Result<Self> {
        let near = if self.inner.key_layout() == crate::KeyLayout::Cluster {
            let urls: Vec<&str> = url.split(',').map(str::trim).collect();
            self.rt
                .block_on(crate::near::NearCache::connect_cluster(&urls, options))?
        } else {
            self.rt
                .block_on(crate::near::NearCache::connect(url, options))?
        };
        self.inner = self.inner.with_near_cache(near);
        Ok(self)
    }

    /// See [`crate::Store::explain_save`].
    pub fn explain_save<E: Entity>(&self, entity: &E) -> Result<crate::plan::explain::Explain> {
        self.inner.explain_save(entity)
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
    pub fn keys_of<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> EntityKeys {
        self.inner.keys_of::<E>(pk)
    }

    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.rt.block_on(f)
    }

    /// See [`crate::Store::update`].
    pub fn update<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Update<'_, E, Self> {
        Update::new(self, &pk.into_pk())
    }

    /// See [`crate::Store::scan`].
    pub fn scan<E: Entity>(&self, count: usize) -> Scan<'_, E, C> {
        self.scan_from(0, count)
    }

    /// See [`crate::Store::scan_from`].
    pub fn scan_from<E: Entity>(&self, cursor: u64, count: usize) -> Scan<'_, E, C> {
        Scan {
            store: self,
            inner: self.inner.scan_from(cursor, count),
            page: Vec::new().into_iter(),
        }
    }

    /// See [`crate::Store::query`].
    pub fn query<E: Entity>(&self) -> Query<'_, E, Self> {
        Query::new(self)
    }

    blocking! {
        save[E: Entity](entity: &E) -> Result<bool>;
        save_with_ttl[E: Entity](entity: &E, ttl: Duration) -> Result<bool>;
        save_without_ttl[E: Entity](entity: &E) -> Result<bool>;
        insert[E: Entity](entity: &E) -> Result<()>;
        save_all[E: Entity](entities: &[E]) -> Result<()>;
        get[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<Option<E>> as get::<E>;
        get_many[E: Entity](pks: impl IntoIterator<Item = impl IntoPk<E::Pk>>) -> Result<Vec<Option<E>>> as get_many::<E>;
        get_many_each[E: Entity](pks: impl IntoIterator<Item = impl IntoPk<E::Pk>>) -> Result<Vec<Result<Option<E>>>>
            as get_many_each::<E>;
        exists[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<bool> as exists::<E>;
        delete[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<bool> as delete::<E>;
        expire[E: Entity](pk: impl IntoPk<E::Pk>, ttl: Duration) -> Result<bool> as expire::<E>;
        persist[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<bool> as persist::<E>;
        ttl[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<Option<Duration>> as ttl::<E>;
        hget[E: Entity, M: MapField](
            field: HashField<E, M>,
            pk: impl IntoPk<E::Pk>,
            key: impl Into<M::Key>,
        ) -> Result<Option<M::Value>>;
        find[E: Entity, T, Co, K: SetIndex<N>, N](
            field: Field<E, T, Co, K, N>,
            value: impl Into<K::Value>,
        ) -> Result<Vec<E>>;
        find_unique[E: Entity, T, Co, K: UniqueIndex<N>, N](
            field: Field<E, T, Co, K, N>,
            value: impl Into<K::Value>,
        ) -> Result<Option<E>>;
        top[E: Entity, T, Co, K: SortedIndex<N>, N](field: Field<E, T, Co, K, N>, n: usize)
            -> Result<Vec<(E, f64)>>;
        top_each[E: Entity, T, Co, K: SortedIndex<N>, N](field: Field<E, T, Co, K, N>, n: usize)
            -> Result<Vec<Result<(E, f64)>>>;
        rank[E: Entity, T, Co, K: SortedIndex<N>, N](field: Field<E, T, Co, K, N>, pk: impl IntoPk<E::Pk>)
            -> Result<Option<u64>>;
        board_incr[E: Entity](board: &Board<E>, pk: impl IntoPk<E::Pk>, delta: f64) -> Result<f64>;
        board_incr_at[E: Entity](
            board: &Board<E>,
            pk: impl IntoPk<E::Pk>,
            delta: f64,
            at: std::time::SystemTime,
        ) -> Result<f64>;
        board_top[E: Entity](board: &Board<E>, n: usize) -> Result<Vec<(E, f64)>>;
        board_top_at[E: Entity](board: &Board<E>, at: std::time::SystemTime, n: usize)
            -> Result<Vec<(E, f64)>>;
        board_rank[E: Entity](board: &Board<E>, pk: impl IntoPk<E::Pk>) -> Result<Option<u64>>;
        relate[A: Entity, B: Entity](rel: &Relation<A, B>, a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool>;
        unrelate[A: Entity, B: Entity](rel: &Relation<A, B>, a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>)
            -> Result<bool>;
        related[A: Entity, B: Entity](rel: &Relation<A, B>, a: impl IntoPk<A::Pk>) -> Result<Vec<B::Pk>>;
        related_back[A: Entity, B: Entity](rel: &Relation<A, B>, b: impl IntoPk<B::Pk>)
            -> Result<Vec<A::Pk>>;
        mutual[A: Entity](rel: &Relation<A, A>, a: impl IntoPk<A::Pk>) -> Result<Vec<A::Pk>>;
        is_related[A: Entity, B: Entity](rel: &Relation<A, B>, a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>)
            -> Result<bool>;
        related_count[A: Entity, B: Entity](rel: &Relation<A, B>, a: impl IntoPk<A::Pk>) -> Result<u64>;
        related_back_count[A: Entity, B: Entity](rel: &Relation<A, B>, b: impl IntoPk<B::Pk>)
            -> Result<u64>;
        related_entities[A: Entity, B: Entity](rel: &Relation<A, B>, a: impl IntoPk<A::Pk>)
            -> Result<Vec<B>>;
        timeline_push[O: Entity, P: Entity](
            timeline: &Timeline<O, P>,
            post: impl IntoPk<P::Pk>,
            owners: impl IntoIterator<Item = impl IntoPk<O::Pk>>,
        ) -> Result<()>;
        timeline_push_related[O: Entity, P: Entity](
            timeline: &Timeline<O, P>,
            post: impl IntoPk<P::Pk>,
            rel: &Relation<O, O>,
            author: impl IntoPk<O::Pk>,
        ) -> Result<usize>;
        timeline_len[O: Entity, P: Entity](timeline: &Timeline<O, P>, owner: impl IntoPk<O::Pk>)
            -> Result<u64>;
        timeline_ids[O: Entity, P: Entity](
            timeline: &Timeline<O, P>,
            owner: impl IntoPk<O::Pk>,
            offset: usize,
            n: usize,
        ) -> Result<Vec<P::Pk>>;
        timeline[O: Entity, P: Entity](
            timeline: &Timeline<O, P>,
            owner: impl IntoPk<O::Pk>,
            offset: usize,
            n: usize,
        ) -> Result<Vec<P>>;
        migrate_batch[E: Entity, F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>](
            migration: &Migration,
            cursor: u64,
            convert: F,
        ) -> Result<Progress>;
        migrate[
            E: Entity,
            F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
            P: FnMut(&Progress),
        ](migration: &Migration, cursor: u64, convert: F, on_progress: P) -> Result<Progress>;
        verify[E: Entity]() -> Result<Report> as verify::<E>;
        verify_with[E: Entity, P: FnMut(&VerifyProgress) + Send](progress: P) -> Result<Report>
            as verify_with::<E>;
        repair[E: Entity](report: &Report) -> Result<Repaired> as repair::<E>;
        repair_with[E: Entity, P: FnMut(&VerifyProgress) + Send](report: &Report, progress: P)
            -> Result<Repaired> as repair_with::<E>;
        sweep[E: Entity](budget: usize) -> Result<usize> as sweep::<E>;
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Store<C> {
    blocking! {
        reindex[E: Entity]() -> Result<usize> as reindex::<E>;
        reindex_with[E: Entity, P: FnMut(&VerifyProgress) + Send](progress: P) -> Result<usize>
            as reindex_with::<E>;
    }
}

impl<'s, C: ConnectionLike + Clone + Send + Sync, E: Entity> Query<'s, E, Store<C>> {
    /// See the async [`scan`](crate::Query::scan).
    pub fn scan(self, count: usize) -> Scan<'s, E, C> {
        self.scan_from(0, count)
    }

    /// See the async [`scan_from`](crate::Query::scan_from).
    pub fn scan_from(self, cursor: u64, count: usize) -> Scan<'s, E, C> {
        let store = self.store;
        Scan {
            store,
            inner: self.rebind(&store.inner).scan_from(cursor, count),
            page: Vec::new().into_iter(),
        }
    }

    /// See the async `fetch`.
    pub fn fetch(self) -> Result<Vec<E>> {
        let store = self.store;
        store.run(self.rebind(&store.inner).fetch())
    }

    /// See the async `fetch_each`.
    pub fn fetch_each(self) -> Result<Vec<Result<E>>> {
        let store = self.store;
        store.run(self.rebind(&store.inner).fetch_each())
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

    /// See the async `explain`.
    pub fn explain(self) -> Result<crate::plan::explain::Explain> {
        let store = self.store;
        self.rebind(&store.inner).explain()
    }

    /// See the async `delete`.
    pub fn delete(self) -> Result<u64> {
        let store = self.store;
        store.run(self.rebind(&store.inner).delete())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync, E: Entity> Update<'_, E, Store<C>> {
    /// See the async `exec`.
    pub fn exec(self) -> Result<()> {
        let store = self.store;
        store.run(self.rebind(&store.inner).exec())
    }

    /// See the async `explain`.
    pub fn explain(self) -> Result<crate::plan::explain::Explain> {
        let store = self.store;
        self.rebind(&store.inner).explain()
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
pub struct Cache<C = ConnectionManager> {
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
        pk: impl IntoPk<E::Pk>,
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

/// A walk over every stored `E`, or every `E` a query matches (see
/// [`crate::Scan`]): page by page with [`next_page`](Self::next_page), or
/// entity by entity as an iterator, which reads a page when it needs one.
///
/// ```no_run
/// # use redis_entity::RedisEntity;
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # fn run(store: redis_entity::blocking::Store) -> redis_entity::Result<()> {
/// for user in store.scan::<User>(500) {
///     println!("{}", user?.name);
/// }
/// # Ok(()) }
/// ```
pub struct Scan<'s, E, C> {
    store: &'s Store<C>,
    inner: crate::Scan<'s, E, C>,
    /// What is left of the page the iterator is on.
    page: std::vec::IntoIter<Result<E>>,
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Scan<'_, E, C> {
    /// See [`crate::Scan::cursor`]. While iterating, entities of the page
    /// already read may be left: resume from a page boundary.
    pub fn cursor(&self) -> u64 {
        self.inner.cursor()
    }

    /// See [`crate::Scan::next_page`].
    pub fn next_page(&mut self) -> Result<Option<Vec<Result<E>>>> {
        self.store.run(self.inner.next_page())
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Iterator for Scan<'_, E, C> {
    type Item = Result<E>;

    /// The next entity; a failed page read is one error, after which the
    /// walk ends.
    fn next(&mut self) -> Option<Result<E>> {
        loop {
            if let Some(e) = self.page.next() {
                return Some(e);
            }
            match self.next_page() {
                Ok(Some(page)) => self.page = page.into_iter(),
                Ok(None) => return None,
                Err(e) => {
                    self.inner.stop();
                    return Some(Err(e));
                }
            }
        }
    }
}
