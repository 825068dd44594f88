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
mod builder;
mod cache;
mod features;
mod scan;

pub use builder::StoreBuilder;
pub use cache::Cache;
pub use features::Handle;
pub use scan::{KeyScan, Scan};

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
    /// default settings (see [`crate::Store::connect`], and
    /// [`Store::builder`] for the others).
    pub fn connect(url: &str) -> Result<Self> {
        Self::builder().connect(url)
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

    /// The settings of a blocking store, then how it connects (see
    /// [`crate::Store::builder`]).
    pub fn builder() -> StoreBuilder<C> {
        StoreBuilder::default()
    }

    /// What the store has done (see [`crate::Store::metrics`]).
    pub fn metrics(&self) -> crate::store::observe::Metrics {
        self.inner.metrics()
    }

    /// The near cache [`StoreBuilder::near_cache`] connected, if the store
    /// has one (an async store's near cache is the one its builder was
    /// given, which its owner keeps).
    pub fn near_cache(&self) -> Option<&crate::near::NearCache> {
        self.inner.near()
    }

    /// A clone of the underlying connection.
    pub fn connection(&self) -> C {
        self.inner.connection()
    }

    /// The async store this one runs.
    pub fn as_async(&self) -> &crate::store::Store<C> {
        &self.inner
    }

    /// See [`crate::Store::update`].
    pub fn update<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Update<'_, E, Self> {
        Update::new(self, &pk.into_pk())
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
