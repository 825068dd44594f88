//! The synchronous [`Store`]: the same methods as [`crate::Store`], without
//! async. Each call runs the async store's method to completion on a small
//! runtime the blocking store owns, so the two can never drift apart: one
//! implementation, two ways to call it.
//!
//! Like other blocking clients built on an async core (`reqwest::blocking`),
//! it must not be called from inside an async runtime; use [`crate::Store`]
//! there.

use crate::error::{Error, Result};
use crate::schema::codec::MapField;
use crate::schema::entity::Entity;
use crate::schema::escape::Namespace;
use crate::schema::field::{Field, HashField, SetIndex, UniqueIndex};
use crate::schema::pk::IntoPk;
use crate::store::query::Query;
use crate::store::Update;
use redis::aio::{ConnectionLike, ConnectionManager};

/// The blocking form of async methods, from one list of signatures per
/// type (the store and each feature handle): each runs the async method of
/// the same name on `self.inner` to completion with `self.run`. `$path` is
/// the async type, for the docs. Generics go in brackets; `as name::<..>`
/// gives the turbofish the call needs.
macro_rules! blocking {
    ($path:literal; $(
        $name:ident [$($gen:tt)*] ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty
            $(as $call:ident::<$($turbofish:ty),*>)?;
    )*) => {$(
        #[doc = concat!("See [`", $path, "::", stringify!($name), "`].")]
        pub fn $name<$($gen)*>(&self, $($arg: $ty),*) -> $ret {
            self.run(blocking!(@call self.inner, ($($arg),*), $name $(, $call::<$($turbofish),*>)?))
        }
    )*};
    (@call $inner:expr, ($($arg:ident),*), $name:ident) => { $inner.$name($($arg),*) };
    (@call $inner:expr, ($($arg:ident),*), $name:ident, $call:ident::<$($turbofish:ty),*>) => {
        $inner.$call::<$($turbofish),*>($($arg),*)
    };
}

// After the macro: the modules use it.
mod cache;
mod features;
mod scan;

pub use cache::Cache;
pub use features::Handle;
pub use scan::Scan;

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
    inner: crate::store::Store<C>,
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
        Self::connect_with(url, crate::store::ConnectOptions::default())
    }

    /// Connects to `url` with `options` (timeouts, reconnection).
    pub fn connect_with(url: &str, options: crate::store::ConnectOptions) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::store::Store::connect_with(url, options))?;
        Ok(Store { rt, inner })
    }
}

impl Store<redis::cluster_async::ClusterConnection> {
    /// Connects to a Redis Cluster given some of its nodes' URLs (see
    /// [`crate::Store::connect_cluster`]).
    pub fn connect_cluster<S: AsRef<str>>(urls: &[S]) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::store::Store::connect_cluster(urls))?;
        Ok(Store { rt, inner })
    }
}

impl Store<crate::any::AnyConnection> {
    /// Connects to one server, or given several URLs separated by commas to
    /// the Redis Cluster they belong to, as one store type (see
    /// [`crate::Store::connect_any`]).
    pub fn connect_any(target: &str) -> Result<Self> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::store::Store::connect_any(target))?;
        Ok(Store { rt, inner })
    }
}

impl<C> Store<C> {
    /// Runs `f` (a call of the async store or of one of its handles) to
    /// completion on this store's runtime.
    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.rt.block_on(f)
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
    pub fn from_async(store: crate::store::Store<C>) -> Result<Self> {
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
        let near = if self.inner.keys().layout() == crate::schema::escape::KeyLayout::Cluster {
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

    /// The same store with `n` retries of a write whose outcome is unknown
    /// (see [`crate::Store::with_write_retries`]).
    pub fn with_write_retries(mut self, n: usize) -> Self {
        self.inner = self.inner.with_write_retries(n);
        self
    }

    /// The same store writing `layout` (see [`crate::Store::with_key_layout`]).
    pub fn with_key_layout(mut self, layout: crate::schema::escape::KeyLayout) -> Self {
        self.inner = self.inner.with_key_layout(layout);
        self
    }

    /// The same store checking its namespace's layout marker (see
    /// [`crate::Store::with_layout_check`]).
    pub fn with_layout_check(mut self) -> Self {
        self.inner = self.inner.with_layout_check();
        self
    }

    /// The same store answering queries on building indexes from what they
    /// hold (see [`crate::Store::with_partial_indexes`]).
    pub fn with_partial_indexes(mut self) -> Self {
        self.inner = self.inner.with_partial_indexes();
        self
    }

    /// The same store announcing its definitions for `heartbeat` at a time
    /// (see [`crate::Store::with_schema_heartbeat`]).
    pub fn with_schema_heartbeat(mut self, heartbeat: std::time::Duration) -> Self {
        self.inner = self.inner.with_schema_heartbeat(heartbeat);
        self
    }

    /// What the store has done (see [`crate::Store::metrics`]).
    pub fn metrics(&self) -> crate::store::observe::Metrics {
        self.inner.metrics()
    }

    /// The near cache, if the store has one.
    pub fn near_cache(&self) -> Option<&crate::near::NearCache> {
        self.inner.near_cache()
    }

    /// A clone of the underlying connection.
    pub fn connection(&self) -> C {
        self.inner.connection()
    }

    /// The async store this one runs.
    pub fn as_async(&self) -> &crate::store::Store<C> {
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

    /// See [`crate::Store::update`].
    pub fn update<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Update<'_, E, Self> {
        Update::new(self, &pk.into_pk())
    }

    /// See [`crate::Store::scan`].
    pub fn scan<E: Entity>(&self, count: usize) -> Scan<'_, E, C> {
        Scan {
            store: self,
            inner: self.inner.scan(count),
            page: Vec::new().into_iter(),
        }
    }

    /// See [`crate::Store::transaction`].
    pub fn transaction(&self) -> crate::store::Transaction<'_, Self> {
        crate::store::Transaction::new(self)
    }

    /// See [`crate::Store::query`].
    pub fn query<E: Entity>(&self) -> Query<'_, E, Self> {
        Query::new(self)
    }

    blocking! { "crate::Store";
        save[E: Entity](entity: &E) -> Result<bool>;
        insert[E: Entity](entity: &E) -> Result<()>;
        save_all[E: Entity](entities: &[E]) -> Result<()>;
        get[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<Option<E>> as get::<E>;
        get_many[E: Entity](pks: impl IntoIterator<Item = impl IntoPk<E::Pk>>) -> Result<Vec<Option<E>>> as get_many::<E>;
        get_many_each[E: Entity](pks: impl IntoIterator<Item = impl IntoPk<E::Pk>>) -> Result<Vec<Result<Option<E>>>>
            as get_many_each::<E>;
        exists[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<bool> as exists::<E>;
        delete[E: Entity](pk: impl IntoPk<E::Pk>) -> Result<bool> as delete::<E>;
        delete_if[E: Entity](
            pk: impl IntoPk<E::Pk>,
            conditions: impl IntoIterator<Item = crate::schema::condition::Condition<E>>,
        ) -> Result<bool> as delete_if::<E>;
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
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> crate::store::Transaction<'_, Store<C>> {
    /// See the async [`exec`](crate::Transaction::exec).
    pub fn exec(self) -> Result<()> {
        let store = self.store;
        store.run(self.rebind(&store.inner).exec())
    }

    /// See the async [`explain`](crate::Transaction::explain).
    pub fn explain(self) -> Result<crate::plan::explain::Explain> {
        let store = self.store;
        self.rebind(&store.inner).explain()
    }
}

impl<'s, C: ConnectionLike + Clone + Send + Sync, E: Entity> Query<'s, E, Store<C>> {
    /// See the async [`scan`](crate::Query::scan).
    pub fn scan(self, count: usize) -> Scan<'s, E, C> {
        let store = self.store;
        Scan {
            store,
            inner: self.rebind(&store.inner).scan(count),
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
