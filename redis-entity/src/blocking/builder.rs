//! Building a blocking store: the same settings as the async
//! [`crate::StoreBuilder`], and terminal calls that connect on the blocking
//! store's own runtime.

use super::{runtime, Store};
use crate::error::Result;
use crate::near::{NearCache, NearCacheOptions};
use crate::schema::escape::{KeyLayout, Namespace};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use std::time::Duration;

/// The settings of a blocking store, then how it connects:
/// `blocking::Store::builder()`. See [`crate::StoreBuilder`] for each
/// setting.
///
/// ```no_run
/// # use redis_entity::{blocking::Store, Namespace};
/// # fn run() -> redis_entity::Result<()> {
/// let store = Store::builder()
///     .namespace(Namespace::new("shop"))
///     .write_retries(3)
///     .connect("redis://127.0.0.1/")?;
/// # Ok(()) }
/// ```
pub struct StoreBuilder<C = ConnectionManager> {
    inner: crate::store::StoreBuilder<C>,
    /// The near cache to connect on the store's runtime once the store is.
    near: Option<(String, NearCacheOptions)>,
}

impl<C> Default for StoreBuilder<C> {
    fn default() -> Self {
        StoreBuilder {
            inner: Default::default(),
            near: None,
        }
    }
}

impl<C> std::fmt::Debug for StoreBuilder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::StoreBuilder")
            .field("inner", &self.inner)
            .field("near_cache", &self.near.as_ref().map(|n| &n.0))
            .finish()
    }
}

/// Setters that pass their value to the async builder's setter of the same
/// name.
macro_rules! settings {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("See [`crate::StoreBuilder::", stringify!($name), "`].")]
        pub fn $name(mut self, $($arg: $ty),*) -> Self {
            self.inner = self.inner.$name($($arg),*);
            self
        }
    )*};
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> StoreBuilder<C> {
    settings! {
        namespace(ns: Namespace);
        key_layout(layout: KeyLayout);
        layout_check(on: bool);
        read_replica(replica: C);
        write_retries(n: usize);
        members_per_call(n: usize);
        partial_indexes(on: bool);
        schema_heartbeat(heartbeat: Duration);
        allow_eviction(on: bool);
        connect_timeout(t: Duration);
        response_timeout(t: Option<Duration>);
        reconnect_delays(first: Duration, longest: Duration);
        reconnect_attempts(n: usize);
    }

    /// A near cache connected to `url` (see [`crate::near::NearCache`]; for
    /// a store of a cluster, some of its nodes' URLs separated by commas)
    /// when the store connects; its connections are driven by the store's
    /// runtime, so invalidations are taken in at each call. The store's
    /// [`near_cache`](Store::near_cache) gives it.
    pub fn near_cache(mut self, url: &str, options: NearCacheOptions) -> Self {
        self.near = Some((url.to_owned(), options));
        self
    }

    /// The store over `conn` (its connection must be driven by a runtime
    /// that outlives the store; [`connect`](Self::connect) makes one that
    /// is).
    pub fn build(self, conn: C) -> Result<Store<C>> {
        self.run(|b| async move { Ok(b.build(conn)) })
    }

    /// Runs `connect` (an async terminal call of the builder) on a new
    /// runtime, then connects the near cache, if one was asked for, the
    /// way the store's layout calls for.
    fn run<F, Fut>(self, connect: F) -> Result<Store<C>>
    where
        F: FnOnce(crate::store::StoreBuilder<C>) -> Fut,
        Fut: std::future::Future<Output = Result<crate::store::Store<C>>>,
    {
        let rt = runtime()?;
        let near = self.near;
        let inner = rt.block_on(async move {
            let mut store = connect(self.inner).await?;
            if let Some((url, options)) = near {
                let near = if store.keys().layout() == KeyLayout::Cluster {
                    let urls: Vec<&str> = url.split(',').map(str::trim).collect();
                    NearCache::connect_cluster(&urls, options).await?
                } else {
                    NearCache::connect(&url, options).await?
                };
                store.set_near_cache(near);
            }
            Ok::<_, crate::error::Error>(store)
        })?;
        Ok(Store { rt, inner })
    }
}

impl StoreBuilder<ConnectionManager> {
    /// See [`crate::StoreBuilder::connect`].
    pub fn connect(self, url: &str) -> Result<Store<ConnectionManager>> {
        self.run(|b| b.connect(url))
    }
}

impl StoreBuilder<ClusterConnection> {
    /// See [`crate::StoreBuilder::connect_cluster`].
    pub fn connect_cluster<S: AsRef<str>>(self, urls: &[S]) -> Result<Store<ClusterConnection>> {
        self.run(|b| b.connect_cluster(urls))
    }
}

impl StoreBuilder<crate::any::AnyConnection> {
    /// See [`crate::StoreBuilder::connect_any`].
    pub fn connect_any(self, target: &str) -> Result<Store<crate::any::AnyConnection>> {
        self.run(|b| b.connect_any(target))
    }
}
