//! The near cache's own connection: RESP3 with `CLIENT TRACKING ON` in the
//! default mode, so the server remembers the keys this connection read and
//! pushes an `invalidate` message when one of them changes, expires or is
//! evicted. Every read of a record the cache may keep goes over it.
//!
//! Why the default mode and not `BCAST`: the server tracks exactly the
//! keys this connection read (a hot set of thousands among millions), so
//! invalidations arrive for those alone; `BCAST` with the entity prefixes
//! would send one for every write to every entity of the type. The cost is
//! the server's tracking table (`tracking-table-max-keys`, one entry per
//! key read); when it is full the server invalidates the oldest keys, which
//! is a miss here, never a stale read.
//!
//! The pushes are handled in the connection's reader task, as they arrive,
//! in order with the replies: a record is dropped before any reply that
//! follows its invalidation is seen. When the connection is lost (redis-rs
//! pushes a `Disconnection`), or a read on it fails for the connection's
//! sake, the whole cache is dropped and the next read connects again and
//! turns tracking on before it reads.

use super::{NearCacheOptions, Shared};
use crate::error::{Error, Result};
use redis::aio::MultiplexedConnection;
use redis::{IntoConnectionInfo, ProtocolVersion, PushInfo, PushKind, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub(crate) struct Tracking {
    client: redis::Client,
    connect_timeout: Duration,
    response_timeout: Duration,
    shared: Arc<Shared>,
    /// The connection in use and its generation.
    current: RwLock<Option<MultiplexedConnection>>,
    generation: Arc<AtomicU64>,
    /// One reconnection at a time.
    connecting: tokio::sync::Mutex<()>,
    /// Set when the connection is lost: the next read reconnects.
    broken: Arc<AtomicBool>,
}

/// Applies the pushes of one connection (one generation) to the cache.
struct Pushes {
    shared: Arc<Shared>,
    generation: u64,
    current: Arc<AtomicU64>,
    broken: Arc<AtomicBool>,
}

impl redis::aio::AsyncPushSender for Pushes {
    fn send(&self, info: PushInfo) -> std::result::Result<(), redis::aio::SendError> {
        match info.kind {
            PushKind::Invalidate => match info.data.first() {
                Some(Value::Array(keys)) | Some(Value::Set(keys)) => {
                    for k in keys {
                        if let Value::BulkString(k) = k {
                            self.shared.invalidate(k);
                        }
                    }
                }
                // `FLUSHALL` / `FLUSHDB`: every key changed.
                _ => self.shared.drop_all(),
            },
            PushKind::Disconnection => self.lost(),
            _ => {}
        }
        Ok(())
    }
}

impl Pushes {
    fn lost(&self) {
        self.shared.drop_all();
        if self.current.load(SeqCst) == self.generation {
            self.broken.store(true, SeqCst);
        }
    }
}

impl Tracking {
    pub fn new(url: &str, options: &NearCacheOptions, shared: Arc<Shared>) -> Result<Self> {
        let info = url
            .into_connection_info()
            .map_err(|e| Error::redis("", e))?;
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3);
        let client = redis::Client::open(info.set_redis_settings(settings))
            .map_err(|e| Error::redis("", e))?;
        Ok(Tracking {
            client,
            connect_timeout: options.connect_timeout,
            response_timeout: options.response_timeout,
            shared,
            current: RwLock::new(None),
            generation: Arc::new(AtomicU64::new(0)),
            connecting: tokio::sync::Mutex::new(()),
            broken: Arc::new(AtomicBool::new(true)),
        })
    }

    fn in_use(&self) -> Option<MultiplexedConnection> {
        if self.broken.load(SeqCst) {
            return None;
        }
        self.current.read().ok()?.clone()
    }

    /// The tracking connection, connected (and tracking turned on) first if
    /// it is not.
    pub async fn connection(&self) -> Result<MultiplexedConnection> {
        if let Some(c) = self.in_use() {
            return Ok(c);
        }
        // Boxed: connecting is rare, and its future (kilobytes, redis-rs's
        // connect) would otherwise be part of every read's and write's.
        Box::pin(self.connect()).await
    }

    /// [`connection`](Self::connection) when there is none in use.
    async fn connect(&self) -> Result<MultiplexedConnection> {
        let _one = self.connecting.lock().await;
        if let Some(c) = self.in_use() {
            return Ok(c);
        }
        let generation = self.generation.fetch_add(1, SeqCst) + 1;
        let pushes = Pushes {
            shared: self.shared.clone(),
            generation,
            current: self.generation.clone(),
            broken: self.broken.clone(),
        };
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout))
            .set_push_sender(pushes);
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| Error::redis("", e))?;
        // NOLOOP: a write sent over this connection (a write-through, see
        // `Store::write_through`) does not invalidate what it reads back.
        let () = redis::cmd("CLIENT")
            .arg("TRACKING")
            .arg("ON")
            .arg("NOLOOP")
            .query_async(&mut conn)
            .await
            .map_err(|e| Error::redis("", e))?;
        // Records kept before were tracked by a connection that is gone.
        self.shared.drop_all();
        if let Ok(mut slot) = self.current.write() {
            *slot = Some(conn.clone());
        }
        self.broken.store(false, SeqCst);
        Ok(conn)
    }

    /// Sends `pipe` over the tracking connection; a failure of the
    /// connection drops the cache and makes the next read reconnect.
    pub async fn query(&self, pipe: &redis::Pipeline, key: &str) -> Result<Vec<Value>> {
        let mut conn = self.connection().await?;
        let generation = self.generation.load(SeqCst);
        self.shared.round_trip();
        let reply = pipe.query_async(&mut conn).await;
        self.check(generation, reply)
            .map_err(|e| Error::redis(key, e))
    }

    /// Sends a script call and, after it in the same pipeline, the commands
    /// `then` adds, over the tracking connection (see `query`).
    pub async fn invoke_then(
        &self,
        sent: &crate::script::Sent,
        call: &crate::script::Call<'_>,
        key: &str,
        then: impl Fn(&mut redis::Pipeline),
    ) -> Result<(Value, Vec<Value>)> {
        let mut conn = self.connection().await?;
        let generation = self.generation.load(SeqCst);
        self.shared.round_trip();
        let reply = crate::script::invoke_then(&mut conn, sent, call, then).await;
        self.check(generation, reply)
            .map_err(|e| Error::redis(key, e))
    }

    /// A reply as it is; a connection failure also drops the cache.
    fn check<T>(&self, generation: u64, reply: redis::RedisResult<T>) -> redis::RedisResult<T> {
        if let Err(e) = &reply {
            if e.is_connection_dropped() || e.is_io_error() || e.is_timeout() {
                Pushes {
                    shared: self.shared.clone(),
                    generation,
                    current: self.generation.clone(),
                    broken: self.broken.clone(),
                }
                .lost();
            }
        }
        reply
    }

    /// `CLIENT ID` of the tracking connection.
    pub async fn client_id(&self) -> Result<i64> {
        let mut conn = self.connection().await?;
        redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut conn)
            .await
            .map_err(|e| Error::redis("", e))
    }
}
