//! A read-through cache for values that come from elsewhere (a SQL database,
//! a remote service), with three protections:
//!
//! - **penetration**: a miss is cached as a short-lived null marker, so a
//!   flood of lookups of a missing id reaches the loader once per marker TTL;
//! - **breakdown**: on a miss one caller, across all processes, runs the
//!   loader, guarded by `SET NX PX` with a random token; the others wait and
//!   read what it stored. A loader that dies holding the lock blocks nobody
//!   past the lock's expiry, a loader that hangs blocks nobody past
//!   [`CacheOptions::max_load`], and the lock is released by
//!   compare-and-delete, never someone else's;
//! - **fencing**: the lock's token fences the load's result. It is stored
//!   only while the lock still holds that token, checked in the same script
//!   as the write, so a load that outlived its lock (a hung loader past
//!   `max_load`, a process stalled past `lock_ttl`) and was taken over never
//!   writes its late result over the newer one;
//! - **avalanche**: TTLs get random jitter so that keys cached together do
//!   not expire together; with stale-while-revalidate, a value past its TTL
//!   is still served while one caller rebuilds it.
//!
//! A loader error is returned to the caller that ran it and is not cached.
//!
//! ```no_run
//! # use redis_entity::{Cache, Store};
//! # use std::time::Duration;
//! # async fn sql_price(id: u64) -> Result<Option<u64>, std::io::Error> { Ok(Some(id)) }
//! # async fn run() -> redis_entity::Result<()> {
//! let store = Store::connect("redis://127.0.0.1/").await?;
//! let cache = Cache::from_store(&store);
//! let price: Option<u64> = cache
//!     .get_or_load("price:42", Duration::from_secs(60), || sql_price(42))
//!     .await?;
//! # Ok(()) }
//! ```

use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::schema::entity::Entity;
use crate::schema::escape::Namespace;
use crate::schema::pk::IntoPk;
use crate::script::args::{CacheCall, CacheStep};
use crate::script::reply::{self, CacheLookup, CachePut};
use crate::store::Store;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::Value;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::time::{Duration, Instant};

/// How the cache protects the loader.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// How long a miss is remembered (penetration). Default 30 s.
    pub null_ttl: Duration,
    /// Relative TTL jitter: each TTL is multiplied by a random factor in
    /// `1 ± jitter` (avalanche). Default 0.1.
    pub jitter: f64,
    /// Expiry of the rebuild lock: a loader that dies holding it blocks the
    /// others at most this long (breakdown). A live loader renews it every
    /// third of this time, up to [`max_load`](Self::max_load). Default 5 s.
    pub lock_ttl: Duration,
    /// The longest one load may hold the rebuild lock. The loader's caller
    /// renews the lock while the loader runs, but no further than this time
    /// after it took it: a loader that hangs (never returns, or takes far
    /// longer than it should) lets the lock lapse then, one waiting caller
    /// takes it over and loads anew, and the hung loader's result, whenever
    /// it comes, is not stored (its lock token, the load's fencing token, is
    /// no longer the entry's; its own caller gets the newer cached value if
    /// there is one, else what it loaded). Keep it below [`wait`](Self::wait), so that callers that came
    /// during a hung load take over before they give up, and above the
    /// longest load you expect, or slow loads are duplicated.
    /// `Duration::MAX`: no limit (a hung loader then holds the lock for as
    /// long as its process lives). Default 8 s.
    pub max_load: Duration,
    /// How long a caller waits for another caller's load before giving up
    /// with [`Error::CacheTimeout`]. Default 10 s.
    pub wait: Duration,
    /// Keep serving a value this long after its TTL while one caller
    /// rebuilds it (stale-while-revalidate). Default: off.
    pub stale_while_revalidate: Option<Duration>,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            null_ttl: Duration::from_secs(30),
            jitter: 0.1,
            lock_ttl: Duration::from_secs(5),
            max_load: Duration::from_secs(8),
            wait: Duration::from_secs(10),
            stale_while_revalidate: None,
        }
    }
}

/// The read-through cache; see the module docs. Cheap to clone.
#[derive(Clone)]
pub struct Cache<C = ConnectionManager> {
    conn: C,
    ns: Namespace,
    /// `named`: the cache's own part of the keyspace ("" for the default).
    name: String,
    options: CacheOptions,
    sent: crate::script::Sent,
}

impl<C> std::fmt::Debug for Cache<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("namespace", &self.ns)
            .field("name", &self.name)
            .field("options", &self.options)
            .finish()
    }
}

/// A random token and random numbers for jitter, from the standard
/// library's randomly seeded hasher (not for cryptography; a lock token
/// only has to differ between callers).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

pub(crate) fn token() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

/// `ttl` times a random factor in `1 ± jitter`, at least 1 ms.
pub fn jittered(ttl: Duration, jitter: f64) -> Duration {
    let unit = (random_u64() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    let factor = 1.0 + jitter.clamp(0.0, 1.0) * (2.0 * unit - 1.0);
    // `as u64` saturates: a TTL too long for milliseconds stays the longest.
    Duration::from_millis(((ttl.as_millis() as f64) * factor).max(1.0) as u64)
}

/// A stored cache value: `None` for a cached miss.
fn decode_value<T: DeserializeOwned>(key: &str, raw: &[u8]) -> Result<Option<T>> {
    match raw.first() {
        Some(b'n') => Ok(None),
        Some(b'v') => {
            let sep = raw
                .iter()
                .position(|&b| b == b':')
                .ok_or_else(|| bad(key, raw))?;
            serde_json::from_slice(&raw[sep + 1..])
                .map(Some)
                .map_err(|e| Error::Decode {
                    key: key.to_owned(),
                    field: "(cached value)",
                    value: crate::error::shown(raw),
                    reason: e.to_string(),
                })
        }
        _ => Err(bad(key, raw)),
    }
}

fn bad(key: &str, raw: &[u8]) -> Error {
    Error::Decode {
        key: key.to_owned(),
        field: "(cached value)",
        value: crate::error::shown(raw),
        reason: "not a value written by redis-entity's cache".into(),
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Cache<C> {
    /// A cache on `conn` with default options.
    pub fn new(conn: C) -> Self {
        Cache {
            conn,
            ns: Namespace::none(),
            name: String::new(),
            options: CacheOptions::default(),
            sent: Default::default(),
        }
    }

    /// A cache sharing `store`'s connection and namespace.
    pub fn from_store(store: &Store<C>) -> Self {
        Cache {
            conn: store.connection(),
            ns: store.namespace().clone(),
            name: String::new(),
            options: CacheOptions::default(),
            sent: store.sent().clone(),
        }
    }

    /// The same cache under a name of its own (`<ns>cache:<name>:{key}`):
    /// caches with different names never share an entry, and
    /// [`clear`](Self::clear) of one leaves the others.
    ///
    /// ```no_run
    /// # use redis_entity::{Cache, Store};
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// let prices = Cache::from_store(&store).named("prices");
    /// let p: u64 = prices
    ///     .get_or_load("sku-1", std::time::Duration::from_secs(60), || async {
    ///         Ok::<_, std::io::Error>(Some(1299u64))
    ///     })
    ///     .await?
    ///     .unwrap_or(0);
    /// prices.clear().await?;
    /// # Ok(()) }
    /// ```
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Deletes every entry of this cache (and its locks): SCAN of its keys,
    /// `UNLINK` per batch of at most 1,000, so memory stays bounded.
    /// Returns how many keys were deleted. Other caches, named or not, are
    /// left alone.
    pub async fn clear(&self) -> Result<u64> {
        let pattern = crate::keyspace::cache_scan_pattern(self.ns.as_str(), &self.name);
        let mut deleted = 0;
        // On a cluster: every master's keys, and one UNLINK per slot (an
        // entry and its lock share one).
        let cluster = self.ns.layout() == crate::schema::escape::KeyLayout::Cluster;
        for hint in
            crate::keyspace::nodes::node_hints(&mut self.conn.clone(), self.ns.layout()).await?
        {
            let mut cursor: u64 = 0;
            loop {
                let mut pipe = redis::pipe();
                crate::keyspace::nodes::scan_page(&mut pipe, cursor, &pattern);
                crate::keyspace::nodes::route_to(&mut pipe, hint.as_deref());
                let ((next, keys),): ((u64, Vec<String>),) = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&pattern, e))?;
                let mut groups: std::collections::BTreeMap<&str, Vec<&String>> = Default::default();
                for k in &keys {
                    let tag = if cluster {
                        crate::keyspace::slot_tag(k)
                    } else {
                        ""
                    };
                    groups.entry(tag).or_default().push(k);
                }
                let counts = futures_util::future::try_join_all(groups.into_values().map(|g| {
                    let mut conn = self.conn.clone();
                    async move {
                        redis::cmd("UNLINK")
                            .arg(&g)
                            .query_async::<u64>(&mut conn)
                            .await
                            .map_err(|e| Error::redis(g[0], e))
                    }
                }))
                .await?;
                deleted += counts.into_iter().sum::<u64>();
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }

    /// The same cache with other options.
    pub fn with_options(mut self, options: CacheOptions) -> Self {
        self.options = options;
        self
    }

    /// The options in force.
    pub fn options(&self) -> &CacheOptions {
        &self.options
    }

    /// The Redis key of cache entry `key`: `<ns>cache:{<escaped key>}`, or
    /// `<ns>cache:<escaped name>:{<escaped key>}` for a named cache.
    pub fn key_of(&self, key: &str) -> String {
        crate::keyspace::cache_key(self.ns.as_str(), &self.name, key)
    }

    async fn script(&self, keys: [&str; 2], step: CacheStep<'_>) -> Result<Value> {
        let call = CacheCall {
            value_key: keys[0],
            lock_key: keys[1],
            step,
        }
        .call();
        crate::script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| Error::redis(keys[0], e))
    }

    /// The lock's expiry when taken: `lock_ttl`, or `max_load` if shorter.
    fn first_lock_ttl(&self) -> Duration {
        self.options.lock_ttl.min(self.options.max_load)
    }

    async fn get(&self, keys: [&str; 2], token: &str) -> Result<CacheLookup> {
        let get = CacheStep::Get {
            token,
            lock_ms: self.first_lock_ttl().as_millis().max(1),
            rebuild_stale: self.options.stale_while_revalidate.is_some(),
        };
        let reply = self.script(keys, get).await?;
        reply::cache_lookup(reply).ok_or_else(|| Error::UnexpectedReply {
            key: keys[0].to_owned(),
            detail: "cache script reply".into(),
        })
    }

    /// Stores a load's result if this caller still holds the lock (the
    /// fence); `Ok(CachePut::Fenced(now))` otherwise, with the entry cached now.
    async fn put(
        &self,
        keys: [&str; 2],
        token: &str,
        json: Option<&[u8]>,
        ttl: Duration,
    ) -> Result<CachePut> {
        let (soft, hard) = match json {
            Some(_) => {
                let soft = jittered(ttl, self.options.jitter);
                let hard =
                    soft.saturating_add(self.options.stale_while_revalidate.unwrap_or_default());
                (soft, hard)
            }
            None => {
                let t = jittered(self.options.null_ttl, self.options.jitter);
                (t, t)
            }
        };
        let put = CacheStep::Put {
            token,
            json,
            soft_ttl_ms: soft.as_millis().max(1),
            hard_ttl_ms: hard.as_millis().max(1),
        };
        let reply = self.script(keys, put).await?;
        reply::cache_put(reply).ok_or_else(|| Error::UnexpectedReply {
            key: keys[0].to_owned(),
            detail: "cache script reply to put".into(),
        })
    }

    /// Sets the expiry of the lock this caller holds to `ttl` while its
    /// loader runs; `false` if the lock is no longer this caller's.
    async fn renew(&self, keys: [&str; 2], token: &str, ttl: Duration) -> Result<bool> {
        let renew = CacheStep::Renew {
            token,
            lock_ms: ttl.as_millis().max(1),
        };
        let reply = self.script(keys, renew).await?;
        Ok(matches!(reply, Value::Int(1)))
    }

    /// Runs `load` while renewing the lock every third of its TTL, so that
    /// no other caller takes it over during a long load, but only until
    /// `max_load` after `taken` (when this caller asked for the lock): the
    /// last renewal is shortened so that the lock lapses then, and a hung
    /// load is taken over. The load itself is left to run; its result is
    /// fenced off when it comes (see [`Self::put`]).
    async fn load_holding_lock<Fut: Future>(
        &self,
        keys: [&str; 2],
        token: &str,
        taken: Instant,
        load: Fut,
    ) -> Result<Fut::Output> {
        let every = (self.options.lock_ttl / 3).max(Duration::from_millis(1));
        // A limit too far to add (Duration::MAX: none) renews for ever.
        let until = taken.checked_add(self.options.max_load);
        let mut renewal = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let mut renewing = true;
        tokio::pin!(load);
        loop {
            tokio::select! {
                out = &mut load => return Ok(out),
                _ = renewal.tick(), if renewing => {
                    let ttl = match until {
                        Some(u) => u.saturating_duration_since(Instant::now()),
                        None => self.options.lock_ttl,
                    }
                    .min(self.options.lock_ttl);
                    // Past max_load (or the lock lost): no more renewals.
                    renewing = ttl.as_millis() > 0 && self.renew(keys, token, ttl).await?;
                }
            }
        }
    }

    async fn release(&self, keys: [&str; 2], token: &str) -> Result<()> {
        self.script(keys, CacheStep::Release { token })
            .await
            .map(drop)
    }

    /// The value cached under `key`, or the loader's, cached for `ttl`
    /// (jittered). `Ok(None)`: the loader found nothing, which is cached for
    /// `null_ttl`. One caller across all processes runs the loader per miss;
    /// the others wait for its result. A loader error is returned to the
    /// caller that ran it, and nothing is cached.
    pub async fn get_or_load<T, F, Fut, LE>(
        &self,
        key: &str,
        ttl: Duration,
        loader: F,
    ) -> Result<Option<T>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = std::result::Result<Option<T>, LE>>,
        LE: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let value_key = self.key_of(key);
        let lock_key = crate::keyspace::cache_lock_key(&value_key);
        let keys = [value_key.as_str(), lock_key.as_str()];
        let token = token();
        // A wait too long to add (Duration::MAX: wait for ever) has no deadline.
        let deadline = Instant::now().checked_add(self.options.wait);
        let mut pause = Duration::from_millis(2);
        let mut loader = Some(loader);
        loop {
            let asked = Instant::now();
            let stale = match self.get(keys, &token).await? {
                CacheLookup::Hit(raw) => return decode_value(&value_key, &raw),
                CacheLookup::StaleMine(raw) => Some(raw),
                CacheLookup::MissMine => None,
                CacheLookup::MissOther => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(Error::CacheTimeout { key: value_key });
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                    continue;
                }
            };
            // This caller holds the lock: load, store, release.
            let Some(load) = loader.take() else {
                self.release(keys, &token).await?;
                return Err(Error::CacheTimeout { key: value_key });
            };
            let loaded = match self.load_holding_lock(keys, &token, asked, load()).await? {
                Ok(v) => v,
                Err(e) => {
                    self.release(keys, &token).await?;
                    if let Some(raw) = stale {
                        // Rebuilding failed: the stale value is still the best answer.
                        return decode_value(&value_key, &raw);
                    }
                    return Err(Error::Loader {
                        key: value_key,
                        source: e.into(),
                    });
                }
            };
            let json = match &loaded {
                Some(v) => Some(serde_json::to_vec(v).map_err(|e| Error::Encode {
                    field: "(cached value)",
                    reason: e.to_string(),
                })?),
                None => None,
            };
            return match self.put(keys, &token, json.as_deref(), ttl).await? {
                // Taken over and stored since (not the stale value this
                // caller was rebuilding): the newer value, not ours.
                CachePut::Fenced(Some(now)) if stale.as_deref() != Some(&now[..]) => {
                    decode_value(&value_key, &now)
                }
                _ => Ok(loaded),
            };
        }
    }

    /// Forgets `key` (after the source changed), so the next call loads.
    pub async fn invalidate(&self, key: &str) -> Result<()> {
        let k = self.key_of(key);
        redis::cmd("DEL")
            .arg(&k)
            .query_async::<()>(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&k, e))
    }

    /// The entity with `pk`, read through: from Redis if stored, otherwise
    /// from `loader` (one caller per miss across processes), then saved with
    /// a jittered `ttl` so that queries and indexes see it too. A miss is
    /// remembered for `null_ttl` under the cache key `<entity key>`.
    pub async fn get_entity_or_load<E, F, Fut, LE>(
        &self,
        store: &Store<C>,
        pk: impl IntoPk<E::Pk>,
        ttl: Duration,
        loader: F,
    ) -> Result<Option<E>>
    where
        E: Entity,
        F: FnOnce() -> Fut,
        Fut: Future<Output = std::result::Result<Option<E>, LE>>,
        LE: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let pk = &pk.into_pk();
        if let Some(e) = store.get::<E>(pk).await? {
            return Ok(Some(e));
        }
        let entity_key = EntityKeys::of::<E>(store.namespace(), pk).base;
        let value_key = self.key_of(&entity_key);
        let lock_key = crate::keyspace::cache_lock_key(&value_key);
        let keys = [value_key.as_str(), lock_key.as_str()];
        let token = token();
        // A wait too long to add (Duration::MAX: wait for ever) has no deadline.
        let deadline = Instant::now().checked_add(self.options.wait);
        let mut pause = Duration::from_millis(2);
        loop {
            let asked = Instant::now();
            match self.get(keys, &token).await? {
                CacheLookup::Hit(_) | CacheLookup::StaleMine(_) => {
                    // Only null markers are stored here for entities.
                    self.release(keys, &token).await?;
                    return Ok(None);
                }
                CacheLookup::MissOther => {
                    if let Some(e) = store.get::<E>(pk).await? {
                        return Ok(Some(e));
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(Error::CacheTimeout { key: entity_key });
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                CacheLookup::MissMine => {
                    if let Some(e) = store.get::<E>(pk).await? {
                        self.release(keys, &token).await?;
                        return Ok(Some(e));
                    }
                    let loaded = match self
                        .load_holding_lock(keys, &token, asked, loader())
                        .await?
                    {
                        Ok(v) => v,
                        Err(e) => {
                            self.release(keys, &token).await?;
                            return Err(Error::Loader {
                                key: entity_key,
                                source: e.into(),
                            });
                        }
                    };
                    let Some(e) = loaded else {
                        return match self.put(keys, &token, None, ttl).await? {
                            CachePut::Stored => Ok(None),
                            // Taken over: whatever the newer load stored.
                            CachePut::Fenced(_) => store.get::<E>(pk).await,
                        };
                    };
                    return self.save_loaded(store, pk, (keys, &token), e, ttl).await;
                }
            }
        }
    }

    /// Saves the entity the loader returned while this caller holds the
    /// lock (`keys`, `token`), then releases it; the entity stored since,
    /// if another got there first.
    async fn save_loaded<E: Entity>(
        &self,
        store: &Store<C>,
        pk: &E::Pk,
        (keys, token): ([&str; 2], &str),
        e: E,
        ttl: Duration,
    ) -> Result<Option<E>> {
        // The fence, for a save that cannot run in the cache's
        // script: the lock must still be this caller's (and is
        // renewed for the save), and the save is an insert, so
        // that a late load never overwrites an entity stored
        // since (by a caller that took over, or the application).
        if !self.renew(keys, token, self.options.lock_ttl).await? {
            return Ok(Some(store.get::<E>(pk).await?.unwrap_or(e)));
        }
        let saved = store
            .insert_with_ttl(&e, jittered(ttl, self.options.jitter))
            .await;
        self.release(keys, token).await?;
        match saved {
            Ok(()) => Ok(Some(e)),
            Err(Error::AlreadyExists { .. }) => Ok(Some(store.get::<E>(pk).await?.unwrap_or(e))),
            Err(err) => Err(err),
        }
    }
}
