//! The near cache: entity records kept in the application's memory and
//! dropped as soon as Redis says they changed (server-assisted client-side
//! caching, `CLIENT TRACKING` over RESP3).
//!
//! This module holds the in-memory half, without I/O: the bounded cache
//! (quick_cache, weighed by entries or by bytes), the invalidation of a key
//! and of everything when the connection is lost, and the tickets that keep
//! a read that raced with an invalidation out of the cache. The tracking
//! connection that feeds it lives in `near/tracking.rs`.
//!
//! **The read/invalidate race.** A miss is read from Redis and then put in
//! the cache; an invalidation of that key may be processed between the two.
//! Before sending the read the caller takes a ticket: the counter of the
//! key's stripe (4,096 stripes, bumped by every invalidation of a key that
//! hashes there) and the cache's epoch (bumped when the cache is dropped).
//! The record is inserted, then the ticket checked again; if either counter
//! moved, the entry is removed. Whatever the interleaving, an invalidation
//! processed after the ticket was taken leaves no entry behind.
//!
//! **Reads and writes of one entity over the cache's connection are taken
//! one at a time.** That connection tracks with `NOLOOP` (a write-through
//! does not invalidate what it reads back), so its own operations send it
//! no invalidations: two of them on one entity could be answered in one
//! order and kept in the other. Each miss read and each write-through
//! holds the lock of its key's stripe from before it is sent until its
//! record is kept; the connection runs them in the order they are sent.

pub(crate) mod route;
pub(crate) mod tracking;

use crate::schema::entity::{Entity, Row};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many invalidation counters the keys share.
const STRIPES: usize = 4096;

/// Settings of a [`NearCache`].
///
/// ```
/// use redis_entity::near::NearCacheOptions;
/// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
/// let options = NearCacheOptions::default()
///     .max_entries(100_000) // or .max_bytes(64 << 20)
///     .only::<User>();      // without `only`: every entity type
/// assert_eq!(options.capacity(), (100_000, false));
/// ```
#[derive(Debug, Clone)]
pub struct NearCacheOptions {
    capacity: u64,
    by_bytes: bool,
    only: Vec<&'static str>,
    connect_timeout: Duration,
    response_timeout: Duration,
}

impl Default for NearCacheOptions {
    /// 10,000 entities of every type; the tracking connection fails within
    /// a second when the server cannot be reached, a reply within 5 s.
    fn default() -> Self {
        NearCacheOptions {
            capacity: 10_000,
            by_bytes: false,
            only: Vec::new(),
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_secs(5),
        }
    }
}

impl NearCacheOptions {
    /// Keeps at most `n` entities (the least recently useful go first).
    pub fn max_entries(mut self, n: u64) -> Self {
        self.capacity = n.max(1);
        self.by_bytes = false;
        self
    }

    /// Keeps at most about `bytes` of records (keys and values as stored,
    /// plus a fixed overhead per entity) instead of a number of entities.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.capacity = bytes.max(1);
        self.by_bytes = true;
        self
    }

    /// Caches entities of `E` (call once per type); without it, every type.
    pub fn only<E: Entity>(mut self) -> Self {
        self.only.push(E::DESC.type_name);
        self
    }

    /// How long the tracking connection may take to connect.
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }

    /// How long a read of missing entries may wait for its reply.
    pub fn response_timeout(mut self, t: Duration) -> Self {
        self.response_timeout = t;
        self
    }

    /// The bound: a number, and whether it counts bytes (else entities).
    pub fn capacity(&self) -> (u64, bool) {
        (self.capacity, self.by_bytes)
    }
}

/// What a near cache has done since it was made; see [`NearCache::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NearCacheStats {
    /// Reads answered from memory.
    pub hits: u64,
    /// Reads that went to Redis.
    pub misses: u64,
    /// Keys Redis (or this store's own writes) said changed.
    pub invalidations: u64,
    /// Entries dropped to stay within the bound (a record replaced by a
    /// concurrent read of the same entity may count too).
    pub evictions: u64,
    /// Times the whole cache was dropped (connection lost, `FLUSHALL`).
    pub drops: u64,
    /// Records read but not kept because an invalidation raced with them.
    pub raced: u64,
    /// Round trips over the cache's own connection (reads of misses, and
    /// writes of cached types, which read their entity back).
    pub round_trips: u64,
    /// Entities held now.
    pub entries: u64,
    /// Their weight now (entities, or bytes with `max_bytes`).
    pub weight: u64,
}

/// One cached record: the stored row (`None`: no such entity), and when it
/// expires in Redis.
#[derive(Debug)]
pub(crate) struct Cached {
    pub row: Option<Row>,
    pub deadline: Option<Instant>,
    bytes: u64,
}

impl Cached {
    pub fn new(key: &str, row: Option<Row>, deadline: Option<Instant>) -> Self {
        // Keys and values as stored, plus what the cache and the row's
        // vectors cost around them.
        let values: usize = row.as_ref().map_or(0, |r| {
            r.columns
                .iter()
                .map(|c| c.as_ref().map_or(0, Vec::len) + 24)
                .sum::<usize>()
                + r.maps
                    .iter()
                    .flatten()
                    .map(|(k, v)| k.len() + v.len() + 48)
                    .sum::<usize>()
        });
        Cached {
            row,
            deadline,
            bytes: (key.len() + values + 160) as u64,
        }
    }
}

#[derive(Clone)]
struct Weigh(bool);

impl quick_cache::Weighter<String, Arc<Cached>> for Weigh {
    fn weight(&self, _: &String, v: &Arc<Cached>) -> u64 {
        if self.0 {
            v.bytes
        } else {
            1
        }
    }
}

#[derive(Clone)]
struct CountEvictions(Arc<Counters>);

impl quick_cache::Lifecycle<String, Arc<Cached>> for CountEvictions {
    type RequestState = ();
    fn on_evict(&self, _: &mut (), _: String, _: Arc<Cached>) {
        self.0.evictions.fetch_add(1, SeqCst);
    }
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    invalidations: AtomicU64,
    evictions: AtomicU64,
    drops: AtomicU64,
    raced: AtomicU64,
    round_trips: AtomicU64,
}

type Records = quick_cache::sync::Cache<
    String,
    Arc<Cached>,
    Weigh,
    quick_cache::DefaultHashBuilder,
    CountEvictions,
>;

/// The shared state of a near cache: the records and the counters that
/// order reads against invalidations.
pub(crate) struct Shared {
    records: Records,
    stripes: Box<[AtomicU64]>,
    /// One operation at a time per stripe over the tracking connection.
    locks: Box<[tokio::sync::Mutex<()>]>,
    epoch: AtomicU64,
    counters: Arc<Counters>,
    only: Vec<&'static str>,
    hasher: std::collections::hash_map::RandomState,
    /// Called with a record's key between its read and its insert (tests
    /// use it to land a write in that window).
    pub before_insert: std::sync::RwLock<Option<InsertHook>>,
}

/// See [`NearCache::before_insert`].
pub(crate) type InsertHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Taken before a read is sent; see the module docs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    epoch: u64,
    stripe: usize,
    count: u64,
}

impl Shared {
    fn new(options: &NearCacheOptions) -> Self {
        let counters = Arc::new(Counters::default());
        let items = if options.by_bytes {
            (options.capacity / 256).max(16) as usize
        } else {
            options.capacity as usize
        };
        Shared {
            records: Records::with(
                items,
                options.capacity,
                Weigh(options.by_bytes),
                Default::default(),
                CountEvictions(counters.clone()),
            ),
            stripes: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
            locks: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
            epoch: AtomicU64::new(0),
            counters,
            only: options.only.clone(),
            hasher: Default::default(),
            before_insert: std::sync::RwLock::new(None),
        }
    }

    /// True when entities of the type named `type_name` are cached.
    pub fn caches(&self, type_name: &str) -> bool {
        self.only.is_empty() || self.only.contains(&type_name)
    }

    fn stripe(&self, key: &str) -> usize {
        (self.hasher.hash_one(key) as usize) % STRIPES
    }

    /// The record of the entity with base key `key`, if cached and not
    /// expired.
    pub fn lookup(&self, key: &str) -> Option<Option<Row>> {
        let found = self.records.get(key).filter(|c| match c.deadline {
            Some(d) => Instant::now() < d,
            None => true,
        });
        match found {
            Some(c) => {
                self.counters.hits.fetch_add(1, SeqCst);
                Some(c.row.clone())
            }
            None => {
                self.counters.misses.fetch_add(1, SeqCst);
                None
            }
        }
    }

    /// The locks of the stripes of `keys`, taken in one order (so that two
    /// callers never wait for each other), held while their operation is
    /// sent, answered and its records kept.
    pub async fn lock<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a str>,
    ) -> Vec<tokio::sync::MutexGuard<'a, ()>> {
        let mut stripes: Vec<usize> = keys.map(|k| self.stripe(k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut held = Vec::with_capacity(stripes.len());
        for s in stripes {
            held.push(self.locks[s].lock().await);
        }
        held
    }

    /// Taken before reading `key` from Redis.
    pub fn ticket(&self, key: &str) -> Ticket {
        let stripe = self.stripe(key);
        Ticket {
            epoch: self.epoch.load(SeqCst),
            stripe,
            count: self.stripes[stripe].load(SeqCst),
        }
    }

    fn still(&self, t: &Ticket) -> bool {
        self.epoch.load(SeqCst) == t.epoch && self.stripes[t.stripe].load(SeqCst) == t.count
    }

    /// Keeps a record read with `ticket`, unless an invalidation of its key,
    /// or a drop of the cache, came after the ticket was taken.
    pub fn insert(&self, key: String, ticket: Ticket, cached: Cached) {
        if !self.still(&ticket) {
            self.counters.raced.fetch_add(1, SeqCst);
            return;
        }
        // quick_cache reports a replaced value as evicted: removing first
        // keeps `evictions` to what the bound pushed out.
        self.records.remove(&key);
        self.records.insert(key.clone(), Arc::new(cached));
        // An invalidation between the check and the insert bumped the
        // counter before removing: seen here, and the entry goes.
        if !self.still(&ticket) {
            self.records.remove(&key);
            self.counters.raced.fetch_add(1, SeqCst);
        }
    }

    /// Redis (or a write of this store) says `key` changed: the record of
    /// every entity it may belong to goes. A key under an entity key
    /// (`<entity key>:<name>`: a column, a `#[hash]` map) names that entity
    /// by cutting at a `:` after the hash tag.
    pub fn invalidate(&self, key: &[u8]) {
        self.counters.invalidations.fetch_add(1, SeqCst);
        let key = String::from_utf8_lossy(key);
        let tag_end = key.rfind('}').map_or(key.len(), |i| i + 1);
        let cuts = key[tag_end..]
            .match_indices(':')
            .map(|(i, _)| tag_end + i)
            .chain([key.len()]);
        for end in cuts {
            let base = &key[..end];
            // Bumped before removing: see `insert`.
            self.stripes[self.stripe(base)].fetch_add(1, SeqCst);
            self.records.remove(base);
        }
    }

    /// Counts a round trip over the tracking connection.
    pub fn round_trip(&self) {
        self.counters.round_trips.fetch_add(1, SeqCst);
    }

    /// Drops every record (connection lost, tracking reset, `FLUSHALL`):
    /// reads in flight are not kept either.
    pub fn drop_all(&self) {
        self.epoch.fetch_add(1, SeqCst);
        self.counters.drops.fetch_add(1, SeqCst);
        self.records.clear();
    }

    fn stats(&self) -> NearCacheStats {
        let c = &self.counters;
        NearCacheStats {
            hits: c.hits.load(SeqCst),
            misses: c.misses.load(SeqCst),
            invalidations: c.invalidations.load(SeqCst),
            evictions: c.evictions.load(SeqCst),
            drops: c.drops.load(SeqCst),
            raced: c.raced.load(SeqCst),
            round_trips: c.round_trips.load(SeqCst),
            entries: self.records.len() as u64,
            weight: self.records.weight(),
        }
    }
}

/// An in-process cache of entity records, kept correct by Redis'
/// invalidation messages; attach it with [`StoreBuilder::near_cache`](crate::StoreBuilder::near_cache).
///
/// `get`, `get_many` and the reading of records by queries and `top` are
/// answered from memory when the record is there; index reads always go to
/// Redis. The cache has its own connection (RESP3, `CLIENT TRACKING ON`):
/// the server remembers which keys it read and pushes an invalidation when
/// one changes, expires or is evicted; the record goes at once. If that
/// connection is lost, the whole cache is dropped before the next read. A
/// store's own writes drop their records as soon as they are acknowledged
/// (read-your-writes). See `docs/consistency.md`, "The near cache".
///
/// ```no_run
/// use redis_entity::near::{NearCache, NearCacheOptions};
/// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # async fn run() -> redis_entity::Result<()> {
/// let url = "redis://127.0.0.1/";
/// let near = NearCache::connect(url, NearCacheOptions::default().only::<User>()).await?;
/// let store = redis_entity::Store::builder().near_cache(near.clone()).connect(url).await?;
/// let _ = store.get::<User>(&9).await?; // from Redis
/// let _ = store.get::<User>(&9).await?; // from memory, until user 9 changes
/// assert_eq!(near.stats().hits, 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct NearCache {
    pub(crate) shared: Arc<Shared>,
    pub(crate) route: Arc<route::Route>,
}

impl std::fmt::Debug for NearCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NearCache")
            .field("stats", &self.stats())
            .finish()
    }
}

impl NearCache {
    /// Opens the tracking connection to `url` (the same server the store
    /// uses) and an empty cache.
    pub async fn connect(url: &str, options: NearCacheOptions) -> crate::error::Result<Self> {
        let shared = Arc::new(Shared::new(&options));
        let tracking = Arc::new(tracking::Tracking::new(url, &options, shared.clone())?);
        let route = Arc::new(route::Route::One(tracking));
        route.connect().await?;
        Ok(NearCache { shared, route })
    }

    /// Opens one tracking connection per master of the Redis Cluster that
    /// `urls` (some of its nodes) belong to, and an empty cache, for a store
    /// of [`StoreBuilder::connect_cluster`](crate::StoreBuilder::connect_cluster): each record is read over the
    /// connection of the master serving its slot, which tracks it there.
    /// When slots move (a redirection answers a read), every record is
    /// dropped and the slot map read again.
    ///
    /// ```no_run
    /// use redis_entity::near::{NearCache, NearCacheOptions};
    /// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
    /// # async fn run() -> redis_entity::Result<()> {
    /// let urls = ["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"];
    /// let near = NearCache::connect_cluster(&urls, NearCacheOptions::default()).await?;
    /// let store = redis_entity::Store::builder().near_cache(near).connect_cluster(&urls).await?;
    /// let _ = store.get::<User>(&9).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_cluster<S: AsRef<str>>(
        urls: &[S],
        options: NearCacheOptions,
    ) -> crate::error::Result<Self> {
        let shared = Arc::new(Shared::new(&options));
        let urls: Vec<String> = urls.iter().map(|u| u.as_ref().to_owned()).collect();
        let route = Arc::new(route::Route::cluster(&urls, options, shared.clone())?);
        route.connect().await?;
        Ok(NearCache { shared, route })
    }

    /// Hits, misses, invalidations, evictions and size so far.
    pub fn stats(&self) -> NearCacheStats {
        self.shared.stats()
    }

    /// Drops every record (the next reads go to Redis).
    pub fn clear(&self) {
        self.shared.drop_all();
    }

    /// Calls `hook` with a record's key after the record was read from
    /// Redis and before it is put in the cache: for tests that land a
    /// write in that window (the read/invalidate race).
    #[doc(hidden)]
    pub fn before_insert(&self, hook: impl Fn(&str) + Send + Sync + 'static) {
        if let Ok(mut h) = self.shared.before_insert.write() {
            *h = Some(Arc::new(hook));
        }
    }

    /// The tracking connection's id on the server (`CLIENT ID`), if it is
    /// connected: what `CLIENT LIST` and `CLIENT KILL ID` name it by.
    pub async fn client_id(&self) -> crate::error::Result<i64> {
        self.route.first().await?.client_id().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &str) -> Option<Row> {
        Some(Row {
            columns: vec![Some(v.as_bytes().to_vec())],
            maps: vec![],
        })
    }

    fn shared() -> Shared {
        Shared::new(&NearCacheOptions::default().max_entries(100))
    }

    #[test]
    fn a_record_read_with_a_valid_ticket_is_kept_and_served() {
        let s = shared();
        assert_eq!(s.lookup("user:{9}"), None);
        let t = s.ticket("user:{9}");
        s.insert(
            "user:{9}".into(),
            t,
            Cached::new("user:{9}", row("a"), None),
        );
        assert_eq!(s.lookup("user:{9}"), Some(row("a")));
        let st = s.stats();
        assert_eq!((st.hits, st.misses, st.entries), (1, 1, 1));
    }

    #[test]
    fn an_invalidation_after_the_ticket_keeps_the_read_out() {
        let s = shared();
        let t = s.ticket("user:{9}");
        // The write lands and its invalidation is processed while the read
        // is on its way back.
        s.invalidate(b"user:{9}");
        s.insert(
            "user:{9}".into(),
            t,
            Cached::new("user:{9}", row("old"), None),
        );
        assert_eq!(s.lookup("user:{9}"), None);
        assert_eq!(s.stats().raced, 1);
        // A read that starts after it is kept.
        let t = s.ticket("user:{9}");
        s.insert(
            "user:{9}".into(),
            t,
            Cached::new("user:{9}", row("new"), None),
        );
        assert_eq!(s.lookup("user:{9}"), Some(row("new")));
    }

    #[test]
    fn a_key_under_an_entity_key_invalidates_the_entity() {
        let s = shared();
        for key in ["user:{9}", "t:user:{9}:profile", "user:{10}"] {
            let t = s.ticket(key);
            s.insert(key.into(), t, Cached::new(key, row("a"), None));
        }
        s.invalidate(b"user:{9}:settings");
        s.invalidate(b"t:user:{9}:profile:name");
        assert_eq!(s.lookup("user:{9}"), None);
        assert_eq!(s.lookup("t:user:{9}:profile"), None);
        assert_eq!(s.lookup("user:{10}"), Some(row("a")));
    }

    #[test]
    fn dropping_the_cache_keeps_reads_in_flight_out() {
        let s = shared();
        let t = s.ticket("user:{9}");
        s.insert(
            "user:{1}".into(),
            s.ticket("user:{1}"),
            Cached::new("k", row("a"), None),
        );
        s.drop_all();
        s.insert("user:{9}".into(), t, Cached::new("k", row("a"), None));
        assert_eq!(s.lookup("user:{1}"), None);
        assert_eq!(s.lookup("user:{9}"), None);
        assert_eq!(s.stats().drops, 1);
    }

    #[test]
    fn an_expired_record_is_a_miss() {
        let s = shared();
        let past = Instant::now() - Duration::from_millis(1);
        s.insert(
            "a".into(),
            s.ticket("a"),
            Cached::new("a", row("x"), Some(past)),
        );
        assert_eq!(s.lookup("a"), None);
        let later = Instant::now() + Duration::from_secs(60);
        s.insert(
            "b".into(),
            s.ticket("b"),
            Cached::new("b", row("x"), Some(later)),
        );
        assert_eq!(s.lookup("b"), Some(row("x")));
    }

    #[test]
    fn the_bound_evicts_and_counts() {
        let s = Shared::new(&NearCacheOptions::default().max_entries(10));
        for i in 0..100 {
            let k = format!("user:{{{i}}}");
            s.insert(k.clone(), s.ticket(&k), Cached::new(&k, row("a"), None));
        }
        let st = s.stats();
        assert!(st.entries <= 10, "{st:?}");
        assert!(st.evictions >= 90, "{st:?}");
        // Replacing a record is not an eviction.
        let again = shared();
        for _ in 0..5 {
            again.insert(
                "k".into(),
                again.ticket("k"),
                Cached::new("k", row("a"), None),
            );
        }
        assert_eq!(again.stats().evictions, 0);
        let by_bytes = Shared::new(&NearCacheOptions::default().max_bytes(2_000));
        for i in 0..100 {
            let k = format!("user:{{{i}}}");
            by_bytes.insert(
                k.clone(),
                by_bytes.ticket(&k),
                Cached::new(&k, row("a"), None),
            );
        }
        assert!(by_bytes.stats().weight <= 2_000, "{:?}", by_bytes.stats());
    }

    #[test]
    fn only_the_named_types_are_cached() {
        let all = shared();
        assert!(all.caches("User"));
        let mut o = NearCacheOptions::default();
        o.only.push("User");
        let some = Shared::new(&o);
        assert!(some.caches("User") && !some.caches("Post"));
    }
}
