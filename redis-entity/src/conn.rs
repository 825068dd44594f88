//! [`CountingConnection`]: a connection wrapper that counts round trips.
//!
//! The round-trip budget (save 1, get 1, get_many 1, save_all 1 per batch...)
//! is part of the contract; this wrapper is how the tests prove it, and how an
//! application can watch it in production.

use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Wraps a connection (async or blocking) and counts every request sent:
/// one command or one whole pipeline is one round trip.
///
/// ```no_run
/// # use redis_entity::{CountingConnection, RedisEntity, Store};
/// #[derive(RedisEntity)]
/// struct User {
///     #[pk]
///     id: u64,
///     name: String,
/// }
/// # async fn run() -> redis_entity::Result<()> {
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// let conn = CountingConnection::new(client.get_multiplexed_async_connection().await.unwrap());
/// let trips = conn.counter();
/// let store = Store::new(conn);
/// store.get::<User>(&9).await?;
/// assert_eq!(trips.take(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CountingConnection<C> {
    inner: C,
    trips: RoundTrips,
}

/// A shared round-trip counter.
#[derive(Clone, Debug, Default)]
pub struct RoundTrips(Arc<AtomicU64>);

impl RoundTrips {
    /// Round trips so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Round trips since the last call (and resets the count).
    pub fn take(&self) -> u64 {
        self.0.swap(0, Ordering::SeqCst)
    }

    pub(crate) fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl<C> CountingConnection<C> {
    /// Wraps `inner`.
    pub fn new(inner: C) -> Self {
        CountingConnection {
            inner,
            trips: RoundTrips::default(),
        }
    }

    /// The counter (shared with clones of this connection).
    pub fn counter(&self) -> RoundTrips {
        self.trips.clone()
    }

    /// The wrapped connection and its counter, for a request sent to the
    /// wrapped connection by other means than `ConnectionLike` (a pipeline
    /// routed to one cluster node), which must count it.
    pub(crate) fn parts(&self) -> (&C, &RoundTrips) {
        (&self.inner, &self.trips)
    }
}

impl<C: redis::aio::ConnectionLike + Send> redis::aio::ConnectionLike for CountingConnection<C> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.trips.add();
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.trips.add();
        self.inner.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

impl<C: redis::ConnectionLike> redis::ConnectionLike for CountingConnection<C> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.trips.add();
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.trips.add();
        self.inner.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.inner.check_connection()
    }

    fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}
