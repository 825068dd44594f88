//! Building a store: its settings (namespace, key layout, layout and
//! schema checks, a read replica, a near cache, write retries) and how it
//! connects, all set before the store exists, as sqlx's `PoolOptions` and
//! reqwest's `ClientBuilder` do it. A store's settings do not change after.

use super::connect::{self, ConnectOptions};
use super::Store;
use crate::any::AnyConnection;
use crate::error::{Error, Result};
use crate::near::NearCache;
use crate::schema::escape::{KeyLayout, Namespace};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use std::time::Duration;

/// The settings of a store, then how it connects: `Store::builder()`.
///
/// ```no_run
/// # use redis_entity::{Namespace, Store};
/// # use std::time::Duration;
/// # async fn run() -> redis_entity::Result<()> {
/// let store = Store::builder()
///     .namespace(Namespace::tenant(42))                // every key under tenant:42:
///     .write_retries(3)                                 // retry writes of unknown outcome
///     .response_timeout(Some(Duration::from_secs(2)))  // then a call's outcome is unknown
///     .connect("redis://app:secret@127.0.0.1:6379/0")
///     .await?;
/// # Ok(()) }
/// ```
///
/// The terminal calls: [`connect`](Self::connect) (one server),
/// [`connect_cluster`](Self::connect_cluster) (a Redis Cluster, with the
/// cluster key layout), [`connect_any`](Self::connect_any) (either, from
/// the URLs given) and [`build`](Self::build) (over a connection of one's
/// own).
#[derive(Clone)]
pub struct StoreBuilder<C = ConnectionManager> {
    namespace: Namespace,
    layout: Option<KeyLayout>,
    layout_check: bool,
    replica: Option<C>,
    near: Option<NearCache>,
    write_retries: usize,
    members_per_call: Option<usize>,
    partial_indexes: bool,
    schema_heartbeat: Option<Duration>,
    allow_eviction: bool,
    options: ConnectOptions,
}

impl<C> Default for StoreBuilder<C> {
    fn default() -> Self {
        StoreBuilder {
            namespace: Namespace::none(),
            layout: None,
            layout_check: true,
            replica: None,
            near: None,
            write_retries: 0,
            members_per_call: None,
            partial_indexes: false,
            schema_heartbeat: None,
            allow_eviction: false,
            options: ConnectOptions::default(),
        }
    }
}

impl<C> std::fmt::Debug for StoreBuilder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBuilder")
            .field("namespace", &self.namespace)
            .field("layout", &self.layout)
            .field("layout_check", &self.layout_check)
            .field("read_replica", &self.replica.is_some())
            .field("near_cache", &self.near.is_some())
            .field("write_retries", &self.write_retries)
            .field("members_per_call", &self.members_per_call)
            .field("partial_indexes", &self.partial_indexes)
            .field("schema_heartbeat", &self.schema_heartbeat)
            .field("allow_eviction", &self.allow_eviction)
            .field("connect", &self.options)
            .finish()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> StoreBuilder<C> {
    /// Every key under `ns` (a tenant prefix). Default: none.
    pub fn namespace(mut self, ns: Namespace) -> Self {
        self.namespace = ns;
        self
    }

    /// The key layout the store writes, for [`build`](Self::build) and
    /// [`connect`](Self::connect): [`KeyLayout::Standalone`] (the default)
    /// or [`KeyLayout::Cluster`], which a store built over a cluster
    /// connection needs. `connect_cluster` always writes the cluster layout
    /// and `connect_any` the one its URLs call for.
    pub fn key_layout(mut self, layout: KeyLayout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Whether the store records its key layout in its namespace's marker
    /// (`<namespace>@redis-entity:layout`) with its first write and refuses
    /// with [`Error::LayoutMismatch`] a namespace marked with the other
    /// layout (see [`Keys::check_layout`](crate::Keys::check_layout)), and
    /// tracks each type's recorded schema (see
    /// [`Schema`](crate::evolution::Schema): its definition announced
    /// before its writes, queries on indexes still building refused).
    /// Default: on. [`Store::new`] is a store without it.
    pub fn layout_check(mut self, on: bool) -> Self {
        self.layout_check = on;
        self
    }

    /// Reads from a replica: gets, queries, unique lookups, leaderboards,
    /// relations and timelines go to `replica` (queries and ranks as
    /// read-only scripts, which replicas run); writes, the cleanup of
    /// expired entries they meet, `verify` and the json layout's
    /// compare-and-set stay on the primary. A replica lags behind its
    /// primary: a read right after a write may not see it yet.
    pub fn read_replica(mut self, replica: C) -> Self {
        self.replica = Some(replica);
        self
    }

    /// Answers `get`, `get_many` and the reading of records by queries and
    /// `top` from `near` when it holds them (for the types it caches); see
    /// [`NearCache`]. Misses are read over the near cache's own connection,
    /// from the primary (not from a replica), so that Redis tracks them.
    /// Keep a clone of `near` for its statistics and `clear`.
    pub fn near_cache(mut self, near: NearCache) -> Self {
        self.near = Some(near);
        self
    }

    /// Retries a write whose outcome is unknown (a lost connection, a
    /// timeout, a refused reconnection) up to `n` times. Each write then
    /// carries a request token, so that a retry of a write the server did
    /// apply returns that outcome instead of applying it twice: an `incr`
    /// counts once, an `insert` does not find itself. The server keeps each
    /// token's outcome for 60 s (`<entity key>:@req:<token>`). Default: 0
    /// (no retries, no tokens).
    pub fn write_retries(mut self, n: usize) -> Self {
        self.write_retries = n;
        self
    }

    /// About how many members one call of a paged operation reads or
    /// writes (default 1,000, a few milliseconds of server time). Redis
    /// runs one call at a time, so a call that reads a million members
    /// stalls every other client for its whole run:
    /// - a query whose whole answer would read more than four times this
    ///   many goes in pages of about this many each (one call per page, the
    ///   answer gathered by the store), and a type with more than 48 times
    ///   this many entities is never answered by one native set command;
    /// - `related`, `related_back` and `mutual` read a set this many at a
    ///   time;
    /// - a delete takes the entity out of the other sides of a relation set
    ///   of more than 250 members a quarter of this many at a time.
    ///
    /// Smaller keeps every call shorter and takes more round trips for
    /// large answers; see "Bounded calls" in docs/consistency.md.
    pub fn members_per_call(mut self, n: usize) -> Self {
        self.members_per_call = Some(n.max(1));
        self
    }

    /// Whether queries on indexes that are still building (added to a
    /// deployed type, not yet built by
    /// [`Schema::apply`](crate::evolution::Schema::apply)) are answered from
    /// what they hold, instead of refused with [`Error::IndexBuilding`]:
    /// entities stored before the index came are missing from the answers
    /// until the build is done. Default: refused. Needs the layout check.
    pub fn partial_indexes(mut self, on: bool) -> Self {
        self.partial_indexes = on;
        self
    }

    /// How long the store's announcement of its definitions lasts (default
    /// 10 s):
    /// it announces again after half of it while it writes, and `schema
    /// apply` waits up to that long for the processes of an older
    /// definition to be gone. Shorter makes an apply after a deploy start
    /// sooner and costs a round trip more often. Needs the layout check.
    pub fn schema_heartbeat(mut self, heartbeat: Duration) -> Self {
        self.schema_heartbeat = Some(heartbeat);
        self
    }

    /// Whether the store writes to a server whose `maxmemory-policy` evicts
    /// any key (`allkeys-lru`, `allkeys-lfu`, `allkeys-random`). Such a
    /// server deletes keys at its memory limit without an error: index
    /// entries, unique values and schema records can go while their
    /// entities stay, so queries miss entities and a unique value can be
    /// given twice. Default: refused, with [`Error::EvictingPolicy`] before
    /// anything is written. Turn it on only for data that may be lost and
    /// rebuilt (a cache), and run `verify`/`repair` to find what went. The
    /// policy is read with the layout marker and each schema announcement
    /// (needs the layout check); see "Memory and eviction" in
    /// docs/consistency.md.
    pub fn allow_eviction(mut self, on: bool) -> Self {
        self.allow_eviction = on;
        self
    }

    /// How long the first connection may take in all, retries included,
    /// and each reconnection attempt. Default 1 s. The timeouts and
    /// reconnection settings apply to [`connect`](Self::connect) and the
    /// one-server side of [`connect_any`](Self::connect_any).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.options.connect_timeout = t;
        self
    }

    /// How long a call waits for its reply (`None`: forever). A write
    /// whose reply does not come in time has an unknown outcome: the server
    /// may still run it ([`Error::is_timeout`]). Default 5 s, long enough
    /// for a `save_all` of thousands of entities.
    pub fn response_timeout(mut self, t: Option<Duration>) -> Self {
        self.options.response_timeout = t;
        self
    }

    /// The first and the longest wait between reconnection attempts after
    /// the connection was lost (doubling in between). A server back after
    /// a restart is used again within about the longest wait. Default
    /// 50 ms and 250 ms.
    pub fn reconnect_delays(mut self, first: Duration, longest: Duration) -> Self {
        self.options.reconnect_delays = (first, longest.max(first));
        self
    }

    /// How many reconnection attempts one call makes before it fails; the
    /// next call starts again. Default 4 (with the delays above, a call
    /// gives up after about half a second while the server is down).
    pub fn reconnect_attempts(mut self, n: usize) -> Self {
        self.options.reconnect_attempts = n;
        self
    }

    /// The store over `conn`, a connection of one's own (a
    /// `ConnectionManager`, a `MultiplexedConnection`, a cluster
    /// connection with [`key_layout`](Self::key_layout) set to the cluster
    /// layout, or a wrapper such as [`crate::CountingConnection`]).
    pub fn build(self, conn: C) -> Store<C> {
        let layout = self.layout.unwrap_or(KeyLayout::Standalone);
        self.build_in(conn, layout)
    }

    fn build_in(self, conn: C, layout: KeyLayout) -> Store<C> {
        let mut store = Store::new(conn);
        store.ns = self.namespace.in_layout(layout);
        if self.layout_check {
            store.track_layout_and_schema();
        }
        store.set_partial_indexes(self.partial_indexes);
        store.set_eviction_allowed(self.allow_eviction);
        if let Some(heartbeat) = self.schema_heartbeat {
            store.set_schema_heartbeat(heartbeat);
        }
        store.replica = self.replica.map(|r| (r, crate::script::Sent::default()));
        store.near = self.near;
        store.write_retries = self.write_retries;
        if let Some(n) = self.members_per_call {
            store.budget = crate::plan::query::CallBudget::new(n);
        }
        store
    }
}

impl StoreBuilder<ConnectionManager> {
    /// Connects to one server at `url` (`redis://[user:password@]host:port/db`,
    /// `rediss://` with the TLS feature) with the builder's timeouts and
    /// reconnection settings: an unreachable server, a
    /// wrong password or an unknown database is an error within about a
    /// second by default, and the connection is re-established by itself
    /// after it was lost.
    pub async fn connect(self, url: &str) -> Result<Store<ConnectionManager>> {
        let conn = connect::connect(url, &self.options).await?;
        Ok(self.build(conn))
    }
}

impl StoreBuilder<ClusterConnection> {
    /// Connects to a Redis Cluster given some of its nodes' URLs; the store
    /// writes the cluster key layout (see [`KeyLayout`]). MOVED and ASK
    /// redirections and topology changes are followed by the connection.
    pub async fn connect_cluster<S: AsRef<str>>(
        self,
        urls: &[S],
    ) -> Result<Store<ClusterConnection>> {
        let urls: Vec<&str> = urls.iter().map(AsRef::as_ref).collect();
        let conn = connect::connect_cluster(&urls).await?;
        Ok(self.build_in(conn, KeyLayout::Cluster))
    }
}

impl StoreBuilder<AnyConnection> {
    /// Connects to one server (`redis://host:port/`) or, given several
    /// URLs separated by commas, to the Redis Cluster they belong to, with
    /// the matching key layout (what [`connect`](StoreBuilder::connect) and
    /// [`connect_cluster`](StoreBuilder::connect_cluster) do, as one store
    /// type: [`AnyConnection`]).
    ///
    /// ```no_run
    /// # async fn run() -> redis_entity::Result<()> {
    /// use redis_entity::Store;
    /// let target = std::env::var("REDIS_CLUSTER_URLS")
    ///     .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    /// let store = Store::builder().connect_any(&target).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_any(self, target: &str) -> Result<Store<AnyConnection>> {
        let urls: Vec<&str> = target
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        match urls.as_slice() {
            [] => Err(Error::InvalidKey {
                segment: target.to_owned(),
                reason: "no server URL given",
            }),
            [one] => {
                let conn = connect::connect(one, &self.options).await?;
                let layout = self.layout.unwrap_or(KeyLayout::Standalone);
                Ok(self.build_in(AnyConnection::Server(conn), layout))
            }
            many => {
                let conn = connect::connect_cluster(many).await?;
                Ok(self.build_in(AnyConnection::Cluster(conn), KeyLayout::Cluster))
            }
        }
    }
}
