//! Connecting: timeouts, reconnection and the first connection, with
//! defaults that fail fast.
//!
//! The store runs over redis-rs' `ConnectionManager`, which reconnects by
//! itself after a connection loss. The first connection is made here, once,
//! before the manager takes over: an unreachable server is retried for at
//! most the connect timeout in all (`StoreBuilder::connect_timeout`), and an error that no
//! retry can fix (a wrong password, an unknown database, a URL that does not
//! parse) is returned at once.

use crate::error::{Error, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::AsyncConnectionConfig;
use std::time::{Duration, Instant};

/// How a store connects and reconnects: set on its builder, whose setters
/// of the same names (`StoreBuilder::connect_timeout` and the three after
/// it) say what each field does; the defaults are below.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConnectOptions {
    pub(crate) connect_timeout: Duration,
    pub(crate) response_timeout: Option<Duration>,
    /// The first and the longest wait between reconnection attempts.
    pub(crate) reconnect_delays: (Duration, Duration),
    pub(crate) reconnect_attempts: usize,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(1),
            response_timeout: Some(Duration::from_secs(5)),
            reconnect_delays: (Duration::from_millis(50), Duration::from_millis(250)),
            reconnect_attempts: 4,
        }
    }
}

impl ConnectOptions {
    fn manager_config(&self) -> ConnectionManagerConfig {
        let (first, longest) = self.reconnect_delays;
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(self.response_timeout)
            .set_min_delay(first)
            .set_max_delay(longest)
            .set_exponent_base(2.0)
            .set_number_of_retries(self.reconnect_attempts)
    }
}

/// True for an error a new attempt can fix: the server is not (yet)
/// reachable, or is still starting.
fn retryable(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.code() == Some("LOADING")
}

/// The first connection to `url`, then a reconnecting manager.
pub(crate) async fn connect(url: &str, options: &ConnectOptions) -> Result<ConnectionManager> {
    let client = redis::Client::open(url).map_err(|e| Error::redis("", e))?;
    let started = Instant::now();
    let mut delay = options.reconnect_delays.0;
    loop {
        let left = options.connect_timeout.saturating_sub(started.elapsed());
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(left.max(Duration::from_millis(1))))
            .set_response_timeout(Some(left.max(Duration::from_millis(1))));
        match first_command(&client, &config).await {
            // Reachable, and the password and database are right: from now
            // on the manager keeps the connection.
            Ok(()) => break,
            Err(e) if retryable(&e) && started.elapsed() + delay < options.connect_timeout => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(options.reconnect_delays.1);
            }
            Err(e) => return Err(Error::redis("", e)),
        }
    }
    ConnectionManager::new_with_config(client, options.manager_config())
        .await
        .map_err(|e| Error::redis("", e))
}

/// Opens a connection and proves it can run a command. A server that
/// requires a password accepts a connection made without one (there is no
/// handshake to refuse), and only its first command fails `NOAUTH`: the
/// `PING` makes that a connect error instead of every later call's. Any
/// other refusal of the `PING` (an ACL user without it: `NOPERM`; a server
/// still loading its data: `LOADING`, which Redis checks after the
/// password) still proves the connection is authenticated.
async fn first_command(
    client: &redis::Client,
    config: &AsyncConnectionConfig,
) -> std::result::Result<(), redis::RedisError> {
    let mut conn = client
        .get_multiplexed_async_connection_with_config(config)
        .await?;
    match redis::cmd("PING").query_async::<()>(&mut conn).await {
        // No reply (the connection failed: retried as such) or NOAUTH.
        Err(e) if e.code().is_none() || e.code() == Some("NOAUTH") => Err(e),
        _ => Ok(()),
    }
}

/// A connection to the Redis Cluster `urls` (some of its nodes) belong to.
pub(crate) async fn connect_cluster(
    urls: &[&str],
) -> Result<redis::cluster_async::ClusterConnection> {
    let first = urls.first().copied().unwrap_or_default();
    redis::cluster::ClusterClient::new(urls.to_vec())
        .map_err(|e| Error::redis(first, e))?
        .get_async_connection()
        .await
        .map_err(|e| Error::redis(first, e))
}
