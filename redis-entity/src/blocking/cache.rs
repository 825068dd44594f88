//! The read-through cache without async.

use super::Store;
use crate::error::Result;
use crate::schema::entity::Entity;
use crate::schema::pk::IntoPk;
use redis::aio::{ConnectionLike, ConnectionManager};
use std::time::Duration;

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
    inner: crate::store::cache::Cache<C>,
}

impl<C: ConnectionLike + Clone + Send + Sync> Cache<C> {
    /// A cache sharing `store`'s connection and namespace.
    pub fn from_store(store: &Store<C>) -> Self {
        Cache {
            inner: crate::store::cache::Cache::from_store(&store.inner),
        }
    }

    /// The same cache with other options.
    pub fn with_options(self, options: crate::store::cache::CacheOptions) -> Self {
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
