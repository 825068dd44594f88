//! [`AnyConnection`]: one server or a cluster, chosen when connecting.
//!
//! A [`Store`](crate::Store) is generic over its connection, so code written
//! for `Store` (one server) does not take a cluster store. A store over
//! `AnyConnection` is one type for both: [`Store::connect_any`] reads the
//! target and picks the key layout with the connection.

use crate::error::{Error, Result};
use crate::store::{ConnectOptions, Store};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection to one server or to a Redis Cluster.
#[derive(Clone)]
pub enum AnyConnection {
    /// One server (or a primary with replicas).
    Server(ConnectionManager),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
}

impl ConnectionLike for AnyConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            AnyConnection::Server(c) => c.req_packed_command(cmd),
            AnyConnection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            AnyConnection::Server(c) => c.req_packed_commands(pipeline, offset, count),
            AnyConnection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            AnyConnection::Server(c) => c.get_db(),
            AnyConnection::Cluster(c) => c.get_db(),
        }
    }
}

impl Store<AnyConnection> {
    /// Connects to one server (`redis://host:port/`) or, given several
    /// URLs separated by commas, to the Redis Cluster they belong to, with
    /// the matching key layout (what [`Store::connect`] and
    /// [`Store::connect_cluster`] do, as one store type).
    ///
    /// ```no_run
    /// # async fn run() -> redis_entity::Result<()> {
    /// use redis_entity::Store;
    /// let target = std::env::var("REDIS_CLUSTER_URLS")
    ///     .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    /// let store = Store::connect_any(&target).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_any(target: &str) -> Result<Self> {
        let urls: Vec<&str> = target
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        let store = match urls.as_slice() {
            [] => {
                return Err(Error::InvalidKey {
                    segment: target.to_owned(),
                    reason: "no server URL given",
                })
            }
            [one] => {
                let conn = crate::store::connect::connect(one, &ConnectOptions::default()).await?;
                Store::new(AnyConnection::Server(conn))
            }
            many => {
                let conn = redis::cluster::ClusterClient::new(many.to_vec())
                    .map_err(|e| Error::redis(many[0], e))?
                    .get_async_connection()
                    .await
                    .map_err(|e| Error::redis(many[0], e))?;
                Store::new(AnyConnection::Cluster(conn))
                    .with_key_layout(crate::schema::escape::KeyLayout::Cluster)
            }
        };
        Ok(store.with_layout_check())
    }
}
