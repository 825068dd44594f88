//! Scale curves: redis-entity against hand-written redis-rs at 10k, 100k and
//! 1M entities of one user type with a unique, an equality, a sorted index
//! and tags, each side against its own fresh redis-server (a new pair per
//! size).
//!
//! Run: `cargo bench --bench scale` (10k, 100k, 1M), `-- --quick` (10k and
//! fewer samples, for CI), `-- --sizes 10000,100000` to choose the sizes,
//! `-- --celebrity` for only redis-entity's load and the bounded-calls part.
//!
//! For each size it loads the entities (`save_all` in batches against
//! pipelines), then prints:
//! - Redis memory per entity (`used_memory` growth / N) on both sides, and
//!   where it goes (`MEMORY USAGE` of each key family);
//! - p50 / p99 latency of save, get, find_unique, an equality query with
//!   its records, a tag query with its records and the top 10 of the
//!   sorted index, in alternating rounds;
//! - what a tenth of the entities cost while they have a TTL (shadow,
//!   expiry set, the keyspace's dicts);
//! - `verify` (time per step, server time per command), `reindex` and
//!   `sweep` (of that tenth, once expired): total time, entities/s, server
//!   and client CPU;
//! - the client's peak heap (a counting global allocator) during `verify`,
//!   `reindex`, `keys().scan` and a paged walk (`query().scan`), above what it
//!   held before the phase.
//!
//! At the end, one table with every figure per size and its growth from the
//! smallest size to the largest.

#[path = "shared/results.rs"]
mod results;

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use redis_entity::{RedisEntity, Store};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};
use support::RedisServer;

#[path = "scale/celebrity.rs"]
mod celebrity;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    city: String,
    #[index(sorted)]
    score: i64,
    #[index]
    tags: BTreeSet<String>,
}

/// A 64-bit mix (splitmix64's finaliser): the pseudo-random values of the
/// data, the same for both sides and every run.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The shape of the data at one size: every equality value and the `g` tags
/// keep about as many entities at every size, so that a query's answer (and
/// so its Redis commands) has the same size at 10k and at 1M.
#[derive(Clone, Copy)]
struct Shape {
    n: u64,
    /// Distinct cities: about 50 users each.
    cities: u64,
    /// Distinct `g` tags: 500 users each.
    groups: u64,
}

impl Shape {
    fn of(n: u64) -> Shape {
        Shape {
            n,
            cities: (n / 50).max(1),
            groups: (n / 500).max(1),
        }
    }

    fn city(&self, i: u64) -> String {
        format!("c{i}")
    }

    /// Three tags: `k<0..10>` (a tenth of all users each: a big set), `g<..>`
    /// (500 users each) and `p<0..100>` (a hundredth of all users each).
    fn user(&self, id: u64) -> User {
        let tags = [
            format!("k{}", id % 10),
            format!("g{}", (id / 10) % self.groups),
            format!("p{}", mix(id + 1) % 100),
        ];
        User {
            id,
            username: format!("user{id}"),
            city: self.city(mix(id) % self.cities),
            score: (mix(id ^ 0x5eed) % 1_000_000) as i64,
            tags: tags.into_iter().collect(),
        }
    }
}

// ---------------------------------------------------------------------------
// The client's heap: current and peak bytes.

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static PEAK_BYTES: AtomicIsize = AtomicIsize::new(0);

struct CountingAlloc;

fn grew(delta: isize) {
    let now = LIVE_BYTES.fetch_add(delta, Ordering::Relaxed) + delta;
    PEAK_BYTES.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; only the
// size is counted.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        grew(layout.size() as isize);
        // SAFETY: the caller's layout is passed on as given.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        grew(new as isize - layout.size() as isize);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Starts a measured phase: the peak is set to what is live now, which is
/// returned as the phase's baseline.
fn heap_baseline() -> isize {
    let now = LIVE_BYTES.load(Ordering::Relaxed);
    PEAK_BYTES.store(now, Ordering::Relaxed);
    now
}

/// The peak of the phase above its baseline, in bytes.
fn heap_peak_above(base: isize) -> f64 {
    (PEAK_BYTES.load(Ordering::Relaxed) - base) as f64
}

// ---------------------------------------------------------------------------
// One side: a private redis-server and a connection to it.

type Conn = MultiplexedConnection;

/// The response timeout of both sides' connections: long, so that a busy
/// machine does not end a run of minutes. `Store::connect` defaults to 5 s,
/// redis-rs to 500 ms; `verify` prints its longest round trip to compare
/// (it reads whole index keys in one reply: 0.2 s at 100k entities here,
/// 2.4 s at 1M, and redis-rs's 500 ms failed it at 100k on a busy machine).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

struct Side {
    /// Kept for its lifetime: the server is killed when the side is dropped.
    _server: RedisServer,
    conn: Conn,
}

impl Side {
    async fn start() -> Side {
        let server = RedisServer::start();
        let config =
            redis::AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
        let conn = server
            .client()
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("connect");
        // Every call of 1 ms or more in the slow log, to report each
        // phase's longest call as the server timed it.
        let mut c = conn.clone();
        for (k, v) in [
            ("slowlog-log-slower-than", "1000"),
            ("slowlog-max-len", "1000000"),
        ] {
            let () = redis::cmd("CONFIG")
                .arg("SET")
                .arg(k)
                .arg(v)
                .query_async(&mut c)
                .await
                .unwrap();
        }
        Side {
            _server: server,
            conn,
        }
    }

    async fn slow_reset(&self) {
        let () = redis::cmd("SLOWLOG")
            .arg("RESET")
            .query_async(&mut self.c())
            .await
            .unwrap();
    }

    /// The top-level calls the server ran so far, as far as it can tell:
    /// its script calls (`FCALL`, `EVALSHA`, .. are never run inside
    /// another call), or, when there were none, every command it ran.
    async fn calls(&self) -> (f64, f64) {
        let scripts = self
            .command_times()
            .await
            .iter()
            .filter(|(c, _, _)| c.starts_with("fcall") || c.starts_with("eval"))
            .map(|(_, calls, _)| calls)
            .sum();
        let all = Self::field(&self.info("stats").await, "total_commands_processed:");
        (scripts, all)
    }

    /// The slow log since the last reset: the longest call in µs (0 when
    /// none took 1 ms), how many took more than 10 ms, that call's command,
    /// and every logged call's µs, longest first.
    async fn slowest(&self) -> (f64, u64, String, Vec<f64>) {
        let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg(-1)
            .query_async(&mut self.c())
            .await
            .unwrap();
        let (mut longest, mut over, mut what) = (0.0, 0, String::new());
        let mut logged = Vec::new();
        for e in entries {
            let redis::Value::Array(fields) = e else {
                continue;
            };
            let words: Vec<String> = fields
                .get(3)
                .and_then(|v| redis::from_redis_value(v.clone()).ok())
                .unwrap_or_default();
            // The bench's own reads of the server (a long slow log is slow
            // to read) are not the library's calls.
            let own = ["SLOWLOG", "INFO", "CONFIG", "MEMORY"];
            if words
                .first()
                .is_some_and(|w| own.contains(&w.to_uppercase().as_str()))
            {
                continue;
            }
            let micros: f64 = fields
                .get(2)
                .and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok())
                .unwrap_or(0) as f64;
            logged.push(micros);
            if micros > 10_000.0 {
                over += 1;
            }
            if micros > longest {
                longest = micros;
                what = words.first().cloned().unwrap_or_default();
            }
        }
        logged.sort_by(|a, b| b.total_cmp(a));
        (longest, over, what, logged)
    }

    fn c(&self) -> Conn {
        self.conn.clone()
    }

    async fn info(&self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query_async(&mut self.c())
            .await
            .unwrap()
    }

    fn field(info: &str, k: &str) -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    }

    async fn used_memory(&self) -> f64 {
        Self::field(&self.info("memory").await, "used_memory:")
    }

    /// Server CPU seconds so far (user + system).
    async fn cpu_s(&self) -> f64 {
        let info = self.info("cpu").await;
        Self::field(&info, "used_cpu_user:") + Self::field(&info, "used_cpu_sys:")
    }

    /// `MEMORY STATS`: (`overhead.hashtable.main`, `overhead.hashtable.expires`,
    /// `keys.count`).
    async fn dict_stats(&self) -> (f64, f64, f64) {
        let v: redis::Value = redis::cmd("MEMORY")
            .arg("STATS")
            .query_async(&mut self.c())
            .await
            .unwrap();
        let mut found = std::collections::HashMap::new();
        stats_fields(&v, &mut found);
        let get = |k: &str| found.get(k).copied().unwrap_or(0.0);
        (
            get("overhead.hashtable.main"),
            get("overhead.hashtable.expires"),
            get("keys.count"),
        )
    }

    /// The bytes of the keyspace dict's bucket array: Redis 7.0 counts
    /// `overhead.hashtable.main` as 24 B (dictEntry) + 16 B (robj) per key,
    /// which `MEMORY USAGE` also counts, plus 8 B per bucket.
    async fn bucket_bytes(&self) -> f64 {
        let (main, _, keys) = self.dict_stats().await;
        main - 40.0 * keys
    }

    /// Server time of each command since the last `CONFIG RESETSTAT`:
    /// (command, calls, µs), most time first.
    async fn command_times(&self) -> Vec<(String, f64, f64)> {
        let info = self.info("commandstats").await;
        let mut out: Vec<(String, f64, f64)> = info
            .lines()
            .filter_map(|l| {
                let (cmd, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
                let field = |k: &str| {
                    rest.split(',')
                        .find_map(|kv| kv.strip_prefix(k))
                        .and_then(|v| v.parse::<f64>().ok())
                };
                Some((cmd.to_string(), field("calls=")?, field("usec=")?))
            })
            .collect();
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        out
    }

    async fn reset_stats(&self) {
        let () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut self.c())
            .await
            .unwrap();
    }

    async fn dbsize(&self) -> u64 {
        redis::cmd("DBSIZE")
            .query_async(&mut self.c())
            .await
            .unwrap()
    }

    /// The summed `MEMORY USAGE .. SAMPLES 0` (exact) of `keys`, and how
    /// many of them exist.
    async fn memory_usage(&self, keys: &[String]) -> (f64, usize) {
        let (mut sum, mut found) = (0.0, 0);
        for chunk in keys.chunks(1000) {
            let mut p = redis::pipe();
            for k in chunk {
                p.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
            }
            let sizes: Vec<Option<u64>> = p.query_async(&mut self.c()).await.unwrap();
            for s in sizes.into_iter().flatten() {
                sum += s as f64;
                found += 1;
            }
        }
        (sum, found)
    }

    /// Every key matching `pattern` (SCAN).
    async fn scan(&self, pattern: &str) -> Vec<String> {
        let mut c = self.c();
        let mut out = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(10_000)
                .query_async(&mut c)
                .await
                .unwrap();
            out.extend(keys);
            if next == 0 {
                return out;
            }
            cursor = next;
        }
    }
}

/// The numeric fields of a `MEMORY STATS` reply, nested maps included
/// (`db.0` holds the keyspace's).
fn stats_fields(v: &redis::Value, out: &mut std::collections::HashMap<String, f64>) {
    let pairs: Vec<(&redis::Value, &redis::Value)> = match v {
        redis::Value::Array(items) => items
            .chunks(2)
            .filter_map(|c| Some((c.first()?, c.get(1)?)))
            .collect(),
        redis::Value::Map(items) => items.iter().map(|(k, v)| (k, v)).collect(),
        _ => return,
    };
    for (k, v) in pairs {
        let name = match k {
            redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            redis::Value::SimpleString(s) => s.clone(),
            _ => continue,
        };
        match v {
            redis::Value::Int(i) => {
                out.insert(name, *i as f64);
            }
            redis::Value::Double(d) => {
                out.insert(name, *d);
            }
            redis::Value::Array(_) | redis::Value::Map(_) => stats_fields(v, out),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------
// The hand-written side: the minimal layout of the same data.
//
// `user:<id>` hash (the same fields and spelling as redis-entity's), the
// unique key `user:username:<name>` -> id, the equality set
// `user:city:<city>`, a set per tag `user:tags:<tag>`, the sorted set
// `user:score`. No set of all ids, no expiry bookkeeping.

fn hand_key(id: u64) -> String {
    format!("user:{id}")
}

fn hand_tags(u: &User) -> String {
    u.tags.iter().cloned().collect::<Vec<_>>().join(":")
}

fn hand_user_commands(p: &mut redis::Pipeline, u: &User) {
    p.cmd("HSET")
        .arg(hand_key(u.id))
        .arg("username")
        .arg(&u.username)
        .arg("city")
        .arg(&u.city)
        .arg("score")
        .arg(u.score)
        .arg("tags")
        .arg(hand_tags(u))
        .ignore();
    p.cmd("SET")
        .arg(format!("user:username:{}", u.username))
        .arg(u.id)
        .ignore();
    p.cmd("SADD")
        .arg(format!("user:city:{}", u.city))
        .arg(u.id)
        .ignore();
    for t in &u.tags {
        p.cmd("SADD")
            .arg(format!("user:tags:{t}"))
            .arg(u.id)
            .ignore();
    }
    p.cmd("ZADD")
        .arg("user:score")
        .arg(u.score)
        .arg(u.id)
        .ignore();
}

/// One atomic save of an existing user (told it is unchanged but for its
/// score): `MULTI`, the same commands, `EXEC`.
async fn hand_save(c: &mut Conn, u: &User) {
    let mut p = redis::pipe();
    p.cmd("MULTI").ignore();
    hand_user_commands(&mut p, u);
    p.cmd("EXEC").ignore();
    let () = p.query_async(c).await.unwrap();
}

fn parse_user(id: u64, fields: Vec<(String, String)>) -> Option<User> {
    if fields.is_empty() {
        return None;
    }
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    Some(User {
        id,
        username: get("username")?,
        city: get("city")?,
        score: get("score")?.parse().ok()?,
        tags: get("tags")?.split(':').map(str::to_string).collect(),
    })
}

/// The records of `ids`, one pipelined round trip.
async fn hand_users(c: &mut Conn, ids: Vec<u64>) -> Vec<User> {
    if ids.is_empty() {
        return Vec::new();
    }
    let mut p = redis::pipe();
    for id in &ids {
        p.hgetall(hand_key(*id));
    }
    let rows: Vec<Vec<(String, String)>> = p.query_async(c).await.unwrap();
    ids.into_iter()
        .zip(rows)
        .filter_map(|(id, r)| parse_user(id, r))
        .collect()
}

// ---------------------------------------------------------------------------
// Latency samples.

/// Latencies in µs of `ops` operations on each side, in 10 rounds that
/// alternate which side goes first; each side gets the same operation
/// numbers. `f` and `g` return a checksum of their answers (records
/// found), which must agree.
async fn sample<F, FF, G, GF>(ops: u64, mut f: F, mut g: G) -> (Vec<f64>, Vec<f64>)
where
    F: FnMut(u64) -> FF,
    FF: std::future::Future<Output = u64>,
    G: FnMut(u64) -> GF,
    GF: std::future::Future<Output = u64>,
{
    const ROUNDS: u64 = 10;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut sum_a, mut sum_b) = (0, 0);
    for r in 0..ROUNDS {
        let range = r * ops / ROUNDS..(r + 1) * ops / ROUNDS;
        for side in [r % 2, 1 - r % 2] {
            for i in range.clone() {
                let t = Instant::now();
                if side == 0 {
                    sum_a += f(i).await;
                    a.push(t.elapsed().as_secs_f64() * 1e6);
                } else {
                    sum_b += g(i).await;
                    b.push(t.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
    }
    assert_eq!(sum_a, sum_b, "both sides must find the same records");
    (a, b)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

// ---------------------------------------------------------------------------
// The figures of every size, printed together at the end.

struct Results {
    sizes: Vec<u64>,
    rows: Vec<(String, Vec<Option<f64>>)>,
}

impl Results {
    fn put(&mut self, size: usize, name: &str, v: f64) {
        let n = self.sizes.len();
        let row = match self.rows.iter().position(|(r, _)| r == name) {
            Some(i) => i,
            None => {
                self.rows.push((name.to_string(), vec![None; n]));
                self.rows.len() - 1
            }
        };
        self.rows[row].1[size] = Some(v);
    }

    /// Writes the figures as JSON (`{"sizes": [..], "rows": [[name,
    /// [value or null, ..]], ..]}`) to `benches/results/scale.json`, which
    /// the charts bench draws from (`cargo bench --bench charts`).
    fn save(&self) {
        let json = serde_json::json!({ "sizes": self.sizes, "rows": self.rows });
        results::save("scale.json", &json);
    }

    fn print(&self) {
        let label = |n: u64| match n {
            n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
            n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
            n => n.to_string(),
        };
        let first = self.sizes.first().copied().map(label).unwrap_or_default();
        let last = self.sizes.last().copied().map(label).unwrap_or_default();
        let mut head = "| figure |".to_string();
        let mut rule = "|---|".to_string();
        for n in &self.sizes {
            head += &format!(" {} |", label(*n));
            rule += "---:|";
        }
        head += &format!(" {last} / {first} |");
        rule += "---:|";
        println!("{head}\n{rule}");
        for (name, vals) in &self.rows {
            let mut line = format!("| {name} |");
            for v in vals {
                line += &match v {
                    Some(v) => format!(" {} |", fmt_num(*v)),
                    None => " - |".into(),
                };
            }
            let growth = match (
                vals.first().copied().flatten(),
                vals.last().copied().flatten(),
            ) {
                (Some(a), Some(b)) if a > 0.0 && vals.len() > 1 => format!("{:.2}", b / a),
                _ => "-".into(),
            };
            line += &format!(" {growth} |");
            println!("{line}");
        }
    }
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn mib(bytes: f64) -> String {
    format!("{:.2} MiB", bytes / (1024.0 * 1024.0))
}

// ---------------------------------------------------------------------------

/// Entities per `save_all` call and per hand-written pipeline of the load.
const LOAD_BATCH: u64 = 1000;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // Only redis-entity's load and the bounded-calls part, figures printed,
    // not saved (a quicker look at the largest sizes).
    let celebrity_only = args.iter().any(|a| a == "--celebrity");
    let sizes: Vec<u64> = match args.iter().position(|a| a == "--sizes") {
        Some(i) => args
            .get(i + 1)
            .expect("--sizes needs a list, e.g. --sizes 10000,100000")
            .split(',')
            .map(|s| s.trim().replace('_', "").parse().expect("a size"))
            .collect(),
        None if quick => vec![10_000],
        None => vec![10_000, 100_000, 1_000_000],
    };
    let samples: u64 = if quick { 200 } else { 2_000 };
    println!(
        "scale: redis-entity vs hand-written redis-rs at {sizes:?} users, {samples} samples per operation and side"
    );
    let mut results = Results {
        sizes: sizes.clone(),
        rows: Vec::new(),
    };
    let whole = Instant::now();
    for (i, &n) in sizes.iter().enumerate() {
        let t = Instant::now();
        run_size(&mut results, i, Shape::of(n), samples, celebrity_only).await;
        let secs = t.elapsed().as_secs_f64();
        results.put(i, "bench time at this size, s", secs);
        println!("\n(size {n}: {secs:.1} s)\n");
        if !quick && !celebrity_only {
            results.save();
        }
    }
    println!(
        "\n## Scale, every size (whole run {:.1} s)\n",
        whole.elapsed().as_secs_f64()
    );
    results.print();
}

/// One size's run; `celebrity_only`: redis-entity's side loaded, then only
/// the bounded-calls part (`--celebrity`).
async fn run_size(res: &mut Results, si: usize, shape: Shape, samples: u64, celebrity_only: bool) {
    let n = shape.n;
    println!(
        "\n## {n} users ({} cities of ~50, tags k0-9, {} g tags of 500, p0-99)\n",
        shape.cities, shape.groups
    );
    let fw = Side::start().await;
    let hand = Side::start().await;
    let store = Store::new(fw.c());
    let store = &store;

    // Load the type's function library, so that its memory is not counted.
    let probe = shape.user(u64::MAX / 2);
    store.save(&probe).await.unwrap();
    store.delete::<User>(&probe.id).await.unwrap();
    let mem0 = (fw.used_memory().await, hand.used_memory().await);
    let buckets0 = (fw.bucket_bytes().await, hand.bucket_bytes().await);

    // --- Load.
    let mut table: Vec<String> = Vec::new();
    let start = Start::now(&fw).await;
    let mut id = 0;
    while id < n {
        let users: Vec<User> = (id..(id + LOAD_BATCH).min(n))
            .map(|i| shape.user(i))
            .collect();
        store.save_all(&users).await.unwrap();
        id += LOAD_BATCH;
    }
    let m = start.finish(&fw).await;
    phase(res, &mut table, si, "load (re, save_all of 1000)", n, m);
    if celebrity_only {
        celebrity::run(res, &mut table, si, &fw, store, n).await;
        print_phases(table);
        return;
    }
    let start = Start::now(&hand).await;
    let mut id = 0;
    while id < n {
        let mut p = redis::pipe();
        for i in id..(id + LOAD_BATCH).min(n) {
            hand_user_commands(&mut p, &shape.user(i));
        }
        let () = p.query_async(&mut hand.c()).await.unwrap();
        id += LOAD_BATCH;
    }
    let m = start.finish(&hand).await;
    phase(res, &mut table, si, "load (hand, pipelines of 1000)", n, m);

    // --- Memory.
    let mem1 = (fw.used_memory().await, hand.used_memory().await);
    let per = ((mem1.0 - mem0.0) / n as f64, (mem1.1 - mem0.1) / n as f64);
    res.put(si, "Redis bytes per entity (re)", per.0);
    res.put(si, "Redis bytes per entity (hand)", per.1);
    res.put(si, "Redis bytes ratio (re / hand)", per.0 / per.1);
    breakdown(&fw, &hand, shape, per, buckets0).await;

    // --- Latencies.
    println!("\n| operation ({samples} each) | re p50 µs | re p99 µs | hand p50 µs | hand p99 µs | p50 ratio |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut lat = |name: &str, (mut a, mut b): (Vec<f64>, Vec<f64>)| {
        let (a50, a99) = (percentile(&mut a, 0.5), percentile(&mut a, 0.99));
        let (b50, b99) = (percentile(&mut b, 0.5), percentile(&mut b, 0.99));
        println!(
            "| {name} | {a50:.0} | {a99:.0} | {b50:.0} | {b99:.0} | {:.2} |",
            a50 / b50
        );
        res.put(si, &format!("{name} p50 µs (re)"), a50);
        res.put(si, &format!("{name} p50 µs (hand)"), b50);
        res.put(si, &format!("{name} p99 µs (re)"), a99);
        res.put(si, &format!("{name} p99 µs (hand)"), b99);
    };
    let hc = &hand.conn;
    // A save of an existing user with a new score.
    let changed = move |i: u64| {
        let id = mix(i ^ 0xa11) % n;
        let mut u = shape.user(id);
        u.score = (mix(i ^ 0xb0b) % 1_000_000) as i64;
        u
    };
    lat(
        "save (existing user, new score)",
        sample(
            samples,
            |i| async move {
                store.save(&changed(i)).await.unwrap();
                1
            },
            |i| async move {
                hand_save(&mut hc.clone(), &changed(i)).await;
                1
            },
        )
        .await,
    );
    lat(
        "get by pk",
        sample(
            samples,
            |i| async move {
                let id = mix(i ^ 0x9e7) % n;
                store.get::<User>(&id).await.unwrap().map_or(0, |_| 1)
            },
            |i| async move {
                let id = mix(i ^ 0x9e7) % n;
                let f: Vec<(String, String)> = hc.clone().hgetall(hand_key(id)).await.unwrap();
                parse_user(id, f).map_or(0, |_| 1)
            },
        )
        .await,
    );
    lat(
        "find_unique (username)",
        sample(
            samples,
            |i| async move {
                let id = mix(i ^ 0x1d) % n;
                let u = store
                    .find_unique(User::USERNAME, format!("user{id}"))
                    .await
                    .unwrap();
                u.map_or(0, |_| 1)
            },
            |i| async move {
                let id = mix(i ^ 0x1d) % n;
                let mut c = hc.clone();
                let owner: Option<u64> = c.get(format!("user:username:user{id}")).await.unwrap();
                match owner {
                    Some(o) => hand_users(&mut c, vec![o]).await.len() as u64,
                    None => 0,
                }
            },
        )
        .await,
    );
    lat(
        "eq city (~50) + records",
        sample(
            samples,
            |i| async move {
                let city = shape.city(mix(i ^ 0xc17) % shape.cities);
                let found = store
                    .query::<User>()
                    .eq(User::CITY, city)
                    .fetch()
                    .await
                    .unwrap();
                found.len() as u64
            },
            |i| async move {
                let city = shape.city(mix(i ^ 0xc17) % shape.cities);
                let mut c = hc.clone();
                let ids: Vec<u64> = c.smembers(format!("user:city:{city}")).await.unwrap();
                hand_users(&mut c, ids).await.len() as u64
            },
        )
        .await,
    );
    let tag_pair = move |i: u64| {
        (
            format!("k{}", mix(i ^ 0x7a9) % 10),
            format!("g{}", mix(i ^ 0x7aa) % shape.groups),
        )
    };
    lat(
        "tags all(k, g) (~50) + records",
        sample(
            samples,
            |i| async move {
                let (k, g) = tag_pair(i);
                let found = store
                    .query::<User>()
                    .all(User::TAGS, [k, g])
                    .fetch()
                    .await
                    .unwrap();
                found.len() as u64
            },
            |i| async move {
                let (k, g) = tag_pair(i);
                let mut c = hc.clone();
                let ids: Vec<u64> = c
                    .sinter(&[format!("user:tags:{k}"), format!("user:tags:{g}")])
                    .await
                    .unwrap();
                hand_users(&mut c, ids).await.len() as u64
            },
        )
        .await,
    );
    lat(
        "top 10 of the sorted index",
        sample(
            samples,
            |_| async move {
                let top = store.board(User::SCORE).top(10).await.unwrap();
                top.iter().map(|(u, _)| u.id).sum::<u64>()
            },
            |_| async move {
                let mut c = hc.clone();
                let ids: Vec<(u64, f64)> =
                    c.zrevrange_withscores("user:score", 0, 9).await.unwrap();
                let users = hand_users(&mut c, ids.into_iter().map(|(id, _)| id).collect()).await;
                users.iter().map(|u| u.id).sum::<u64>()
            },
        )
        .await,
    );

    // --- Maintenance and walks: time, server CPU, client peak heap.
    println!();
    let maintenance = store.maintenance::<User>();

    // Time per verify step (between progress calls, which come after
    // every round trip) and the longest round trip.
    let mut steps: Vec<(&'static str, f64, usize)> = Vec::new();
    let mut longest = (0.0f64, "");
    fw.reset_stats().await;
    let start = Start::now(&fw).await;
    let report = {
        let (mut last, mut step) = (Instant::now(), "scanning entity keys");
        maintenance
            .verify_with(|p| {
                let dt = last.elapsed().as_secs_f64();
                last = Instant::now();
                match steps.iter_mut().find(|s| s.0 == step) {
                    Some(s) => {
                        s.1 += dt;
                        s.2 += 1;
                    }
                    None => steps.push((step, dt, 1)),
                }
                if dt > longest.0 {
                    longest = (dt, step);
                }
                step = p.step;
            })
            .await
            .unwrap()
    };
    let m = start.finish(&fw).await;
    let steps_text: Vec<String> = steps
        .iter()
        .map(|(s, dt, trips)| format!("{s} {dt:.2} s in {trips} round trips"))
        .collect();
    println!(
        "(verify: {}; longest round trip {:.0} ms, {})",
        steps_text.join(", "),
        longest.0 * 1e3,
        longest.1
    );
    let times = fw.command_times().await;
    let top: Vec<String> = times
        .iter()
        .filter(|(c, _, _)| c != "info" && c != "config|resetstat")
        .take(6)
        .map(|(c, calls, us)| format!("{c} {:.2} s in {calls} calls", us / 1e6))
        .collect();
    println!("(verify, server time by command: {})", top.join(", "));
    if let Some((_, calls, us)) = times.iter().find(|(c, _, _)| c == "zrange") {
        println!(
            "(verify, ZRANGE of the whole sorted index: {:.0} ms of server time per call, {calls} call(s))",
            us / calls / 1e3
        );
        res.put(
            si,
            "  verify, ZRANGE of the sorted index, server ms",
            us / calls / 1e3,
        );
    }
    for (s, dt, _) in &steps {
        res.put(si, &format!("  verify, {s}: s"), *dt);
    }
    res.put(si, "  verify, longest round trip ms", longest.0 * 1e3);
    assert_eq!(report.entities as u64, n, "verify counts every entity");
    assert!(
        report.violations.is_empty(),
        "verify: {:?}",
        &report.violations[..report.violations.len().min(5)]
    );
    phase(res, &mut table, si, "verify", n, m);
    drop(report);

    let start = Start::now(&fw).await;
    let mut pages = store.keys().scan_pages("user:*");
    let mut found = 0u64;
    while let Some(page) = pages.next_page().await.unwrap() {
        found += page.len() as u64;
    }
    let m = start.finish(&fw).await;
    assert!(found >= n, "every user's key met: {found}");
    phase(
        res,
        &mut table,
        si,
        "keys().scan_pages(\"user:*\")",
        found,
        m,
    );

    let start = Start::now(&fw).await;
    let mut walk = store.query::<User>().scan(1000);
    let mut walked = 0u64;
    while let Some(page) = walk.next_page().await.unwrap() {
        walked += page.len() as u64;
    }
    let m = start.finish(&fw).await;
    assert!(walked >= n, "the walk sees every entity");
    phase(
        res,
        &mut table,
        si,
        "store.query::<User>().scan(1000) walk",
        walked,
        m,
    );

    let start = Start::now(&fw).await;
    let indexed = maintenance.reindex().await.unwrap();
    let m = start.finish(&fw).await;
    assert_eq!(indexed as u64, n);
    phase(res, &mut table, si, "reindex", n, m);

    // --- TTLs: a tenth of the users, first for an hour (what they cost
    // while they live), then for 50 ms (what sweeping them costs).
    let expiring: Vec<u64> = (0..n).filter(|id| id % 10 == 3).collect();
    let ttl_n = expiring.len() as u64;
    let mem_before = (fw.used_memory().await, hand.used_memory().await);
    let keys_before = (fw.dbsize().await as i64, hand.dbsize().await as i64);
    let tables = |(main, expires, _): (f64, f64, f64)| main + expires;
    let tables_before = (
        tables(fw.dict_stats().await),
        tables(hand.dict_stats().await),
    );
    let t = Instant::now();
    expire_all(store, &expiring, Duration::from_secs(3600)).await;
    let expire_secs = t.elapsed().as_secs_f64();
    for chunk in expiring.chunks(LOAD_BATCH as usize) {
        let mut p = redis::pipe();
        for &id in chunk {
            p.cmd("PEXPIRE").arg(hand_key(id)).arg(3_600_000).ignore();
            p.cmd("PEXPIRE")
                .arg(format!("user:username:user{id}"))
                .arg(3_600_000)
                .ignore();
        }
        let () = p.query_async(&mut hand.c()).await.unwrap();
    }
    let mem_after = (fw.used_memory().await, hand.used_memory().await);
    let tables_per = (
        (tables(fw.dict_stats().await) - tables_before.0) / ttl_n as f64,
        (tables(hand.dict_stats().await) - tables_before.1) / ttl_n as f64,
    );
    let ttl_per = (
        (mem_after.0 - mem_before.0) / ttl_n as f64,
        (mem_after.1 - mem_before.1) / ttl_n as f64,
    );
    let sample_ids: Vec<u64> = expiring
        .iter()
        .copied()
        .step_by(expiring.len().div_ceil(1000))
        .collect();
    let shadows: Vec<String> = sample_ids
        .iter()
        .map(|id| format!("user:{id}:@shadow"))
        .collect();
    let (shadow_sum, shadow_found) = fw.memory_usage(&shadows).await;
    let (expiry_zset, _) = fw.memory_usage(&["user:@expiry".to_string()]).await;
    let new_keys = (
        fw.dbsize().await as i64 - keys_before.0,
        hand.dbsize().await as i64 - keys_before.1,
    );
    println!(
        "\nA user with a TTL (a tenth of them, {ttl_n}; `expire` {:.0}/s, 32 tasks): used_memory growth per such user re {:.0} B, hand {:.0} B (PEXPIRE of the hash and the unique key: expires-dict entries)",
        ttl_n as f64 / expire_secs,
        ttl_per.0,
        ttl_per.1
    );
    println!(
        "  re: shadow hash `user:<id>:@shadow` {:.0} B each ({shadow_found} of {} sampled exist); `user:@expiry` zset {:.0} B per such user; new keys: re {}, hand {}; keyspace and expires dicts (MEMORY STATS, entries and bucket arrays) per such user: re {:.0} B, hand {:.0} B",
        shadow_sum / shadow_found.max(1) as f64,
        sample_ids.len(),
        expiry_zset / ttl_n as f64,
        new_keys.0,
        new_keys.1,
        tables_per.0,
        tables_per.1
    );
    res.put(si, "bytes per user with a TTL, extra (re)", ttl_per.0);
    res.put(si, "bytes per user with a TTL, extra (hand)", ttl_per.1);
    res.put(
        si,
        "  of which shadow hash (re)",
        shadow_sum / shadow_found.max(1) as f64,
    );
    res.put(
        si,
        "  of which @expiry zset share (re)",
        expiry_zset / ttl_n as f64,
    );
    res.put(si, "  of which keyspace dicts (re)", tables_per.0);
    res.put(si, "  of which keyspace dicts (hand)", tables_per.1);

    expire_all(store, &expiring, Duration::from_millis(50)).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = Start::now(&fw).await;
    let mut swept = 0;
    loop {
        let s = maintenance.sweep(1000).await.unwrap();
        if s == 0 {
            break;
        }
        swept += s;
    }
    let m = start.finish(&fw).await;
    assert_eq!(swept as u64, ttl_n, "every expired user is swept");
    phase(res, &mut table, si, "sweep(1000) until empty", ttl_n, m);
    let left: u64 = fw.scan("user:*:@shadow").await.len() as u64;
    assert_eq!(left, 0, "no shadow left after the sweep");

    celebrity::run(res, &mut table, si, &fw, store, n).await;
    print_phases(table);
}

/// The table of the measured phases.
fn print_phases(table: Vec<String>) {
    println!("\n| phase | items | time s | items/s | server CPU s | client CPU s | client peak heap above baseline | p99.9 call ms | longest call ms (command) | calls over 10 ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in table {
        println!("{row}");
    }
}

/// Gives each of `ids` a TTL of `ttl` (`expiry().expire`), 32 tasks at once
/// over the one connection.
async fn expire_all(store: &Store<Conn>, ids: &[u64], ttl: Duration) {
    let mut tasks = tokio::task::JoinSet::new();
    for part in 0..32 {
        let store = store.clone();
        let ids: Vec<u64> = ids.iter().copied().skip(part).step_by(32).collect();
        tasks.spawn(async move {
            for id in ids {
                assert!(store.expiry::<User>().expire(&id, ttl).await.unwrap());
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
}

/// The client process's CPU seconds so far (user + system, all threads;
/// `/proc/self/stat`, in ticks of 10 ms).
fn client_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 14 and 15 of the line (utime, stime); `after` starts at field 3.
    (tick(11) + tick(12)) / 100.0
}

/// The start of a measured phase.
struct Start {
    t: Instant,
    heap: isize,
    server: f64,
    client: f64,
    calls: (f64, f64),
}

impl Start {
    async fn now(side: &Side) -> Start {
        side.slow_reset().await;
        let server = side.cpu_s().await;
        let calls = side.calls().await;
        Start {
            calls,
            heap: heap_baseline(),
            server,
            client: client_cpu_s(),
            t: Instant::now(),
        }
    }

    async fn finish(self, side: &Side) -> Measured {
        let secs = self.t.elapsed().as_secs_f64();
        let (peak, client) = (heap_peak_above(self.heap), client_cpu_s() - self.client);
        let cpu = side.cpu_s().await - self.server;
        let (longest, over, slowest, logged) = side.slowest().await;
        let (scripts, all) = side.calls().await;
        // The bench's own reads in between (INFO, CONFIG, SLOWLOG) are a
        // handful: the library's calls are the rest.
        let calls = if scripts > self.calls.0 {
            scripts - self.calls.0
        } else {
            (all - self.calls.1 - 4.0).max(1.0)
        };
        Measured {
            secs,
            peak,
            client,
            cpu,
            longest,
            over,
            slowest,
            p999: p999_of(&logged, calls),
            calls,
        }
    }
}

/// What a measured phase took: wall time, server CPU, the client's CPU and
/// its peak heap above its baseline, in seconds and bytes.
struct Measured {
    secs: f64,
    cpu: f64,
    client: f64,
    peak: f64,
    /// The longest call the server ran in the phase (µs; 0: none of 1 ms),
    /// how many took more than 10 ms, and the longest one's command.
    longest: f64,
    over: u64,
    slowest: String,
    /// The 99.9th percentile of the phase's calls (µs; 0: under 1 ms), of
    /// `calls` calls.
    p999: f64,
    calls: f64,
}

/// The 99.9th percentile of `calls` calls of which `logged` (longest first)
/// took 1 ms or more, the others less (0 then): the call at rank
/// ceil(calls / 1000) from the top. (`calls` counts the script calls when
/// there are any, a lower bound where the library also sent commands: so
/// the true percentile is at most this.)
fn p999_of(logged: &[f64], calls: f64) -> f64 {
    let rank = (calls / 1000.0).ceil().max(1.0) as usize;
    logged.get(rank - 1).copied().unwrap_or(0.0)
}

/// Records a phase's figures, and its row in `table`.
fn phase(res: &mut Results, table: &mut Vec<String>, si: usize, name: &str, n: u64, m: Measured) {
    let Measured {
        secs,
        cpu,
        client,
        peak,
        longest,
        over,
        slowest,
        p999,
        calls,
    } = m;
    let longest_ms = longest / 1e3;
    table.push(format!(
        "| {name} | {n} | {secs:.2} | {:.0} | {cpu:.2} | {client:.2} | {} | {} | {} | {over} of {calls:.0} |",
        n as f64 / secs,
        mib(peak),
        if p999 > 0.0 {
            format!("{:.1}", p999 / 1e3)
        } else {
            "< 1".into()
        },
        if longest > 0.0 {
            format!("{longest_ms:.1} ({slowest})")
        } else {
            "< 1".into()
        }
    ));
    res.put(si, &format!("{name}: longest call ms"), longest_ms);
    res.put(si, &format!("{name}: p99.9 call ms"), p999 / 1e3);
    res.put(si, &format!("{name}: calls over 10 ms"), over as f64);
    res.put(si, &format!("{name}: total s"), secs);
    res.put(si, &format!("{name}: items/s"), n as f64 / secs);
    res.put(si, &format!("{name}: µs per item"), secs * 1e6 / n as f64);
    res.put(
        si,
        &format!("{name}: server CPU µs per item"),
        cpu * 1e6 / n as f64,
    );
    res.put(
        si,
        &format!("{name}: client CPU µs per item"),
        client * 1e6 / n as f64,
    );
    res.put(
        si,
        &format!("{name}: client peak heap MiB"),
        peak / (1024.0 * 1024.0),
    );
}

/// Where one entity's bytes go on each side: `MEMORY USAGE` of each key
/// family (entity hashes and unique keys: the mean of 2,000 sampled;
/// shared keys: all of them, divided by N), against the measured growth.
async fn breakdown(fw: &Side, hand: &Side, shape: Shape, per: (f64, f64), buckets0: (f64, f64)) {
    let n = shape.n;
    let ids: Vec<u64> = (0..2000).map(|i| mix(i ^ 0xfeed) % n).collect();
    let mean = |(sum, found): (f64, usize)| sum / found.max(1) as f64;
    let share = |(sum, _): (f64, usize)| sum / n as f64;

    // The hashes themselves are the same on both sides, field for field.
    for id in ids.iter().take(100) {
        let mut a: Vec<(String, String)> = fw.c().hgetall(format!("user:{id}")).await.unwrap();
        let mut b: Vec<(String, String)> = hand.c().hgetall(hand_key(*id)).await.unwrap();
        a.sort();
        b.sort();
        assert_eq!(a, b, "user {id}: both sides store the same hash");
    }
    let fw_hash = mean(
        fw.memory_usage(
            &ids.iter()
                .map(|id| format!("user:{id}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    let hand_hash = mean(
        hand.memory_usage(&ids.iter().map(|id| hand_key(*id)).collect::<Vec<_>>())
            .await,
    );
    let fw_unique = mean(
        fw.memory_usage(
            &ids.iter()
                .map(|id| format!("user:@username:user{id}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    let hand_unique = mean(
        hand.memory_usage(
            &ids.iter()
                .map(|id| format!("user:username:user{id}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    // The ids: in buckets of 100 (`user:@ids:12xx`) listed in a directory,
    // and the one set an older store keeps (none here).
    let mut id_keys = vec!["user:@ids".to_string(), "user:@ids:@buckets".to_string()];
    let id_buckets: Vec<String> = fw.c().smembers("user:@ids:@buckets").await.unwrap();
    id_keys.extend(id_buckets.iter().map(|b| format!("user:@ids:{b}")));
    let fw_ids = share(fw.memory_usage(&id_keys).await);
    let cities: Vec<u64> = (0..shape.cities).collect();
    let fw_city = share(
        fw.memory_usage(
            &cities
                .iter()
                .map(|c| format!("user:@city:c{c}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    let hand_city = share(
        hand.memory_usage(
            &cities
                .iter()
                .map(|c| format!("user:city:c{c}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    let tags: Vec<String> = (0..10)
        .map(|k| format!("k{k}"))
        .chain((0..shape.groups).map(|g| format!("g{g}")))
        .chain((0..100).map(|p| format!("p{p}")))
        .collect();
    let fw_tags = share(
        fw.memory_usage(
            &tags
                .iter()
                .map(|t| format!("user:@tags:{t}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    let hand_tags = share(
        hand.memory_usage(
            &tags
                .iter()
                .map(|t| format!("user:tags:{t}"))
                .collect::<Vec<_>>(),
        )
        .await,
    );
    let fw_zset = share(fw.memory_usage(&["user:@score".to_string()]).await);
    let hand_zset = share(hand.memory_usage(&["user:score".to_string()]).await);

    // Every key is one of the families above: any other would show here.
    // (redis-entity: the sorted set, the directory of id buckets, the buckets.)
    let known_fw = 2 * n + shape.cities + tags.len() as u64 + 2 + id_buckets.len() as u64;
    let known_hand = 2 * n + shape.cities + tags.len() as u64 + 1;
    let (db_fw, db_hand) = (fw.dbsize().await, hand.dbsize().await);

    let parts = [
        ("entity hash `user:<id>` (mean)", fw_hash, hand_hash),
        (
            "unique key `user:@username:<name>` (mean)",
            fw_unique,
            hand_unique,
        ),
        ("ids in buckets `user:@ids:*` / N", fw_ids, 0.0),
        ("equality sets `user:@city:*` / N", fw_city, hand_city),
        ("tag sets `user:@tags:*` / N", fw_tags, hand_tags),
        ("sorted set `user:@score` / N", fw_zset, hand_zset),
    ];
    let sum = |side: usize| {
        parts
            .iter()
            .map(|p| if side == 0 { p.1 } else { p.2 })
            .sum::<f64>()
    };
    println!("\nWhere one entity's bytes go (MEMORY USAGE; the hand-written keys are spelled without `@`):\n");
    println!("| key family | re bytes | hand bytes | re - hand |");
    println!("|---|---:|---:|---:|");
    for (name, a, b) in parts {
        println!("| {name} | {a:.1} | {b:.1} | {:.1} |", a - b);
    }
    let (sa, sb) = (sum(0), sum(1));
    println!("| sum of the keys | {sa:.1} | {sb:.1} | {:.1} |", sa - sb);
    let buckets = (
        (fw.bucket_bytes().await - buckets0.0) / n as f64,
        (hand.bucket_bytes().await - buckets0.1) / n as f64,
    );
    println!(
        "| keyspace dict bucket array (MEMORY STATS) / N | {:.1} | {:.1} | {:.1} |",
        buckets.0,
        buckets.1,
        buckets.0 - buckets.1
    );
    let (ra, rb) = (per.0 - sa - buckets.0, per.1 - sb - buckets.1);
    println!(
        "| not attributed (growth - the above) | {ra:.1} | {rb:.1} | {:.1} |",
        ra - rb
    );
    println!(
        "| used_memory growth / N | {:.1} | {:.1} | {:.1} |",
        per.0,
        per.1,
        per.0 - per.1
    );
    println!(
        "\nkeys: re {db_fw} (families above: {known_fw}), hand {db_hand} (families above: {known_hand})"
    );
}
