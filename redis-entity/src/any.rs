//! [`AnyConnection`]: one server or a cluster, chosen when connecting.
//!
//! A [`Store`](crate::Store) is generic over its connection, so code written
//! for `Store` (one server) does not take a cluster store. A store over
//! `AnyConnection` is one type for both:
//! [`StoreBuilder::connect_any`](crate::StoreBuilder::connect_any) reads the
//! target and picks the key layout with the connection.

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
