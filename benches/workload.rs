//! The benchmark workload: redis-entity against hand-written redis-rs sending
//! the minimal commands for the same effect, in the same run, each against
//! its own fresh redis-server on this machine.
//!
//! Run: `cargo bench --bench workload` (add `-- --quick` for a 10x smaller
//! run, `-- --near-cache` for the near-cache steps alone, on the users they
//! read; `-- --instructions` for the server's instructions per write under
//! callgrind, see `workload/instructions.rs`). Every wait of the bench is
//! bounded ([`WAIT_LIMIT`]) and fails the run loudly; `scripts/test.sh` runs the quick form so that it cannot rot.
//! For every step it prints ops/s, round trips per op, the server's CPU time
//! per op (`INFO cpu`), this process's CPU time per op while each side ran
//! (the client's work), the server time of each write call (`FCALL` against
//! `EXEC`, `INFO commandstats`) and Redis memory per entity for both, and
//! the ratios (redis-entity / hand-written). Each step
//! runs in 10 rounds that alternate which side goes first, so that a slow
//! moment of the machine falls on both sides alike.

#[path = "shared/results.rs"]
mod results;

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use redis_entity::{CountingConnection, RedisEntity, RoundTrips, Store};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::RedisServer;

#[path = "workload/floors.rs"]
mod floor_rows;
#[path = "workload/instructions.rs"]
mod instructions;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    email: String,
    #[index]
    country: String,
    level: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    title: String,
    #[index]
    tags: BTreeSet<String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player")]
struct Player {
    #[pk]
    id: u64,
    name: String,
    #[index(sorted)]
    score: f64,
}

/// A deployed type (a sorted index) and its next definition, which adds an
/// equality index: what the backfill step builds.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "item")]
struct ItemV1 {
    #[pk]
    id: u64,
    color: String,
    #[index(sorted)]
    size: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "item")]
struct ItemV2 {
    #[pk]
    id: u64,
    #[index]
    color: String,
    #[index(sorted)]
    size: i64,
}

const COUNTRIES: [&str; 20] = [
    "DE", "CN", "FR", "US", "BR", "IN", "JP", "IT", "ES", "MX", "NL", "SE", "NO", "PL", "PT", "KR",
    "AR", "CA", "AU", "ZA",
];

/// Players `0..n`, each at score 0.
fn players(n: u64) -> Vec<Player> {
    (0..n)
        .map(|id| Player {
            id,
            name: format!("player{id}"),
            score: 0.0,
        })
        .collect()
}

fn user(id: u64) -> User {
    User {
        id,
        username: format!("user{id}"),
        email: format!("user{id}@example.com"),
        country: COUNTRIES[(id % 20) as usize].to_string(),
        level: (id % 100) as i64,
    }
}

/// Deterministic pseudo-random numbers (xorshift), the same for both sides.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn tag(i: u64) -> String {
    format!("t{i}")
}

fn book(id: u64, rng: &mut Rng) -> Book {
    let mut tags = BTreeSet::new();
    while tags.len() < 3 {
        tags.insert(tag(rng.next() % 50));
    }
    Book {
        id,
        title: format!("Book number {id}"),
        tags,
    }
}

/// The longest any loop of the bench waits for something (a change to be
/// seen, a retried transaction to get through) before it fails the run.
const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// A bound on a wait loop: [`check`](Self::check) panics, saying what was
/// awaited, once the time is up, so that a wait that cannot end fails the
/// run loudly instead of spinning for ever.
struct Deadline(Instant, Duration);

impl Deadline {
    fn after(limit: Duration) -> Deadline {
        Deadline(Instant::now(), limit)
    }

    fn check(&self, what: impl FnOnce() -> String) {
        if self.0.elapsed() > self.1 {
            panic!("gave up after {:?} waiting for {}", self.1, what());
        }
    }
}

struct Side {
    server: RedisServer,
    conn: CountingConnection<MultiplexedConnection>,
    trips: RoundTrips,
}

impl Side {
    async fn start() -> Side {
        let server = RedisServer::start();
        let raw = server
            .client()
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let conn = CountingConnection::new(raw);
        let trips = conn.counter();
        Side {
            server,
            conn,
            trips,
        }
    }

    async fn info(&self, section: &str) -> String {
        let mut c = self
            .server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        redis::cmd("INFO")
            .arg(section)
            .query_async(&mut c)
            .await
            .unwrap()
    }

    /// Prints the memory of the server's two Lua VMs (`INFO memory`): the
    /// functions VM holds every write library loaded (one per entity type
    /// and one per list of types a unit of work wrote), the scripting VM the
    /// read scripts and the hand-written functions. The time of a call that
    /// arrives cold grows with the heap of the VM it runs in
    /// (benches/NOTES.md, *The Lua heap a write runs in*).
    async fn print_lua_heaps(&self, side: &str) {
        let info = self.info("memory").await;
        let kb = |k: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .map_or(0.0, |b| b / 1024.0)
        };
        let mut c = self
            .server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let libraries: Vec<redis::Value> = redis::cmd("FUNCTION")
            .arg("LIST")
            .query_async(&mut c)
            .await
            .unwrap();
        println!(
            "{side} server: functions VM {:.0} KB ({} libraries), scripting VM {:.0} KB",
            kb("used_memory_vm_functions:"),
            libraries.len(),
            kb("used_memory_vm_eval:")
        );
    }

    /// Server CPU seconds so far (user + system).
    async fn cpu_s(&self) -> f64 {
        let info = self.info("cpu").await;
        let get = |k: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        get("used_cpu_user:") + get("used_cpu_sys:")
    }

    /// Microseconds per call of the write command since the last reset.
    async fn write_us_per_call(&self) -> Option<f64> {
        let (usec, calls) = self.write_usec_calls().await;
        (calls > 0.0).then(|| usec / calls)
    }

    /// Microseconds and calls of the write commands (`FCALL`, `EXEC`,
    /// `EVALSHA`) since the last reset.
    async fn write_usec_calls(&self) -> (f64, f64) {
        let info = self.info("commandstats").await;
        let (mut usec, mut calls) = (0.0, 0.0);
        for l in info.lines() {
            let Some((cmd, rest)) = l.strip_prefix("cmdstat_").and_then(|l| l.split_once(':'))
            else {
                continue;
            };
            if !matches!(cmd, "fcall" | "exec" | "evalsha") {
                continue;
            }
            let field = |k: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(k))
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            usec += field("usec=");
            calls += field("calls=");
        }
        (usec, calls)
    }

    /// Removes the keys matching any of `patterns` (`SCAN`, `UNLINK`).
    async fn unlink_matching(&self, patterns: &[&str]) {
        let mut c = self.conn.clone();
        for pattern in patterns {
            let keys: Vec<String> = {
                let mut it: redis::AsyncIter<String> = c.scan_match(pattern).await.unwrap();
                let mut keys = Vec::new();
                while let Some(k) = it.next_item().await {
                    keys.push(k.unwrap());
                }
                keys
            };
            for chunk in keys.chunks(1000) {
                let _: i64 = c.unlink(chunk).await.unwrap();
            }
        }
    }

    async fn reset_stats(&self) {
        let mut c = self
            .server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut c)
            .await
            .unwrap();
    }

    async fn used_memory(&self) -> i64 {
        let mut c = self
            .server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut c)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }
}

struct Figures {
    ops_per_s: f64,
    trips_per_op: f64,
    bytes_per_entity: Option<f64>,
    /// The server's CPU time (user + system, `INFO cpu`) per operation.
    cpu_us_per_op: f64,
    /// This process's CPU time per operation while the side ran: the
    /// client's own work (both sides' clients run in this process, one at
    /// a time).
    client_us_per_op: f64,
    /// Per call of the write command (`FCALL`, or `EXEC` of a `MULTI`):
    /// microseconds of server time (`INFO commandstats`), if any was sent.
    write_us_per_call: Option<f64>,
}

/// A side's figures for a step of `ops` that took `secs`.
async fn figures(
    side: &Side,
    ops: u64,
    entities: bool,
    (secs, client_secs): (f64, f64),
    mem_before: i64,
    cpu_before: f64,
) -> Figures {
    let trips = side.trips.take();
    if std::env::var_os("COMMANDSTATS").is_some() {
        // Where a step's server time went, command by command (to stderr:
        // the table stays as it is).
        let info = side.info("commandstats").await;
        for l in info.lines().filter(|l| l.starts_with("cmdstat_")) {
            eprintln!("  {l}");
        }
        eprintln!("  ---");
    }
    let after = side.used_memory().await;
    let cpu = side.cpu_s().await - cpu_before;
    Figures {
        ops_per_s: ops as f64 / secs,
        trips_per_op: trips as f64 / ops as f64,
        bytes_per_entity: entities.then(|| (after - mem_before) as f64 / ops as f64),
        cpu_us_per_op: cpu * 1e6 / ops as f64,
        client_us_per_op: client_secs * 1e6 / ops as f64,
        write_us_per_call: side.write_us_per_call().await,
    }
}

/// Runs `f` (redis-entity) and `g` (a hand-written function, `FCALL`) against
/// the same server, `side`'s, in 10 rounds of `ops` in all that alternate
/// which goes first; puts each side's server µs per call (`INFO
/// commandstats`, reset before and read after each side's round) in the
/// floors' `row`, then removes the hand-written side's keys (`theirs`:
/// patterns).
async fn one_server<F, FF, G, GF>(
    side: &Side,
    (floors, row): (&mut Floors, &'static str),
    theirs: &[&str],
    ops: u64,
    mut f: F,
    mut g: G,
) where
    F: FnMut(std::ops::Range<u64>) -> FF,
    FF: std::future::Future<Output = ()>,
    G: FnMut(std::ops::Range<u64>) -> GF,
    GF: std::future::Future<Output = ()>,
{
    const ROUNDS: u64 = 10;
    let (mut usec, mut calls) = ([0.0; 2], [0.0; 2]);
    for r in 0..ROUNDS {
        let range = r * ops / ROUNDS..(r + 1) * ops / ROUNDS;
        for k in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
            side.reset_stats().await;
            if k == 0 {
                f(range.clone()).await;
            } else {
                g(range.clone()).await;
            }
            let (u, c) = side.write_usec_calls().await;
            usec[k] += u;
            calls[k] += c;
        }
    }
    for k in [0, 1] {
        floors.set(row, k, Some(usec[k] / calls[k]));
    }
    side.unlink_matching(theirs).await;
}

/// Runs one step on both sides in alternating rounds: `fw` and `hand` get
/// the same slice of the step's `ops` each round.
async fn pair<F, FF, G, GF>(
    fw: &Side,
    hand: &Side,
    ops: u64,
    entities: bool,
    mut f: F,
    mut g: G,
) -> (Figures, Figures)
where
    F: FnMut(std::ops::Range<u64>) -> FF,
    FF: std::future::Future<Output = ()>,
    G: FnMut(std::ops::Range<u64>) -> GF,
    GF: std::future::Future<Output = ()>,
{
    const ROUNDS: u64 = 10;
    let mem = (fw.used_memory().await, hand.used_memory().await);
    fw.reset_stats().await;
    hand.reset_stats().await;
    let cpu = (fw.cpu_s().await, hand.cpu_s().await);
    fw.trips.take();
    hand.trips.take();
    // Wall time and this process's CPU time of each side.
    let (mut tf, mut tg) = ((0.0, 0.0), (0.0, 0.0));
    fn add((wall, cpu): &mut (f64, f64), t: Instant, c: f64) {
        *wall += t.elapsed().as_secs_f64();
        *cpu += process_cpu_s() - c;
    }
    for r in 0..ROUNDS {
        let range = r * ops / ROUNDS..(r + 1) * ops / ROUNDS;
        if r % 2 == 0 {
            let (t, c) = (Instant::now(), process_cpu_s());
            f(range.clone()).await;
            add(&mut tf, t, c);
            let (t, c) = (Instant::now(), process_cpu_s());
            g(range).await;
            add(&mut tg, t, c);
        } else {
            let (t, c) = (Instant::now(), process_cpu_s());
            g(range.clone()).await;
            add(&mut tg, t, c);
            let (t, c) = (Instant::now(), process_cpu_s());
            f(range).await;
            add(&mut tf, t, c);
        }
    }
    let a = figures(fw, ops, entities, tf, mem.0, cpu.0).await;
    let b = figures(hand, ops, entities, tg, mem.1, cpu.1).await;
    (a, b)
}

/// This process's CPU time so far, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
fn process_cpu_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The header of a table of `report` rows.
fn table_header() {
    println!("| step | redis-entity ops/s | hand-written ops/s | ratio | trips (re) | trips (hand) | server CPU µs/op (re) | (hand) | client CPU µs/op (re) | (hand) | write call µs (re) | (hand) | write ratio | bytes (re) | bytes (hand) | bytes ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

/// Every `report` row of the run: step, ops/s of each side (saved to
/// `benches/results/workload.json` at the end of a whole run, which the
/// charts bench draws from).
static ROWS: std::sync::Mutex<Vec<(String, f64, f64)>> = std::sync::Mutex::new(Vec::new());

/// Saves the rows for the charts: `[[step, redis-entity ops/s, hand-written ops/s], ..]`.
fn save_rows() {
    let rows = ROWS.lock().unwrap().clone();
    results::save("workload.json", &serde_json::json!({ "rows": rows }));
}

fn report(step: &str, fw: &Figures, hand: &Figures) {
    ROWS.lock()
        .unwrap()
        .push((step.trim().to_owned(), fw.ops_per_s, hand.ops_per_s));
    let bytes = |f: &Figures| match f.bytes_per_entity {
        Some(b) => format!("{b:>7.0}"),
        None => "      -".into(),
    };
    let ratio_bytes = match (fw.bytes_per_entity, hand.bytes_per_entity) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:>5.2}", a / b),
        _ => "    -".into(),
    };
    let write = |f: &Figures| match f.write_us_per_call {
        Some(us) => format!("{us:>6.1}"),
        None => "     -".into(),
    };
    let write_ratio = match (fw.write_us_per_call, hand.write_us_per_call) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:>5.2}", a / b),
        _ => "    -".into(),
    };
    println!(
        "| {step:<40} | {:>9.0} | {:>9.0} | {:>5.2} | {:>4.2} | {:>4.2} | {:>6.1} | {:>6.1} | {:>6.1} | {:>6.1} | {} | {} | {} | {} | {} | {} |",
        fw.ops_per_s,
        hand.ops_per_s,
        fw.ops_per_s / hand.ops_per_s,
        fw.trips_per_op,
        hand.trips_per_op,
        fw.cpu_us_per_op,
        hand.cpu_us_per_op,
        fw.client_us_per_op,
        hand.client_us_per_op,
        write(fw),
        write(hand),
        write_ratio,
        bytes(fw),
        bytes(hand),
        ratio_bytes,
    );
}

/// The minimal hand-written change of a user's country: the field and both
/// index sets (told the old value), for a `MULTI` being built.
fn hand_country_change(p: &mut redis::Pipeline, id: u64, old: &str, new: &str) {
    p.cmd("HSET")
        .arg(format!("user:{{{id}}}"))
        .arg("country")
        .arg(new)
        .ignore();
    p.cmd("SREM")
        .arg(format!("user:country:{old}"))
        .arg(id)
        .ignore();
    p.cmd("SADD")
        .arg(format!("user:country:{new}"))
        .arg(id)
        .ignore();
}

/// The unit of 3 of the workload: two level increments and a change of an
/// indexed field, of users `i`, `i + 1` and `i + 2`, as one transaction.
async fn unit_of_3(
    store: &Store<CountingConnection<MultiplexedConnection>>,
    i: u64,
    n_users: u64,
    new_country: &str,
) {
    let (a, b, x) = (i % n_users, (i + 1) % n_users, (i + 2) % n_users);
    store
        .transaction()
        .update::<User>(a, |u| u.incr(User::LEVEL, 1))
        .update::<User>(b, |u| u.incr(User::LEVEL, -1))
        .update::<User>(x, |u| u.set(User::COUNTRY, new_country.to_owned()))
        .exec()
        .await
        .unwrap();
}

/// A save of one user as a careful engineer writes it by hand with the
/// guarantees of redis-entity's: every key's type and the unique owner
/// checked before the first write, the old values read so that the index
/// entries move. KEYS[1]: the user's hash; ARGV: id, username, email,
/// country, level.
const HAND_SAVE_FN: &str = r"
local id, name, email, country, level = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local function bad(key, probe)
  local r = redis.pcall(probe, key)
  return type(r) == 'table' and r.err
end
local owner_key, set_key = 'user:username:' .. name, 'user:country:' .. country
if bad(KEYS[1], 'HLEN') or bad(owner_key, 'STRLEN') or bad(set_key, 'SCARD')
  or bad('user:ids', 'SCARD') then
  return redis.error_reply('WRONGTYPE a key of the wrong type')
end
local old = redis.call('HMGET', KEYS[1], 'username', 'country')
if old[2] and old[2] ~= country and bad('user:country:' .. old[2], 'SCARD') then
  return redis.error_reply('WRONGTYPE a key of the wrong type')
end
local owner = redis.call('GET', owner_key)
if owner and owner ~= id then return redis.error_reply('UNIQUE username taken') end
redis.call('HSET', KEYS[1], 'username', name, 'email', email, 'country', country, 'level', level)
if old[1] and old[1] ~= name then redis.call('DEL', 'user:username:' .. old[1]) end
redis.call('SET', owner_key, id)
if old[2] and old[2] ~= country then redis.call('SREM', 'user:country:' .. old[2], id) end
redis.call('SADD', set_key, id)
redis.call('SADD', 'user:ids', id)
return 1
";

/// The unit of 3 by hand with the same guarantees: three users must exist,
/// the levels must be numbers, the country sets must be sets, all checked
/// before the first write. KEYS: users a, b, x; ARGV: x's id, its new
/// country.
const HAND_UNIT_FN: &str = r"
local function bad(key, probe)
  local r = redis.pcall(probe, key)
  return type(r) == 'table' and r.err
end
for i = 1, 3 do
  if bad(KEYS[i], 'HLEN') then return redis.error_reply('WRONGTYPE a key of the wrong type') end
  if redis.call('EXISTS', KEYS[i]) == 0 then return redis.error_reply('NOT_FOUND') end
end
for i = 1, 2 do
  local v = redis.call('HGET', KEYS[i], 'level')
  if v and not string.match(v, '^%-?%d+$') then return redis.error_reply('NOT_A_NUMBER') end
end
local id, new = ARGV[1], ARGV[2]
local old = redis.call('HGET', KEYS[3], 'country')
if old ~= new and (bad('user:country:' .. new, 'SCARD')
  or (old and bad('user:country:' .. old, 'SCARD'))) then
  return redis.error_reply('WRONGTYPE a key of the wrong type')
end
redis.call('HINCRBY', KEYS[1], 'level', 1)
redis.call('HINCRBY', KEYS[2], 'level', -1)
redis.call('HSET', KEYS[3], 'country', new)
if old and old ~= new then redis.call('SREM', 'user:country:' .. old, id) end
redis.call('SADD', 'user:country:' .. new, id)
return 1
";

/// A change of a user's country by hand with the guarantees of
/// redis-entity's update: the user must exist, the old value is read (not
/// assumed), both sets' types are checked before the first write.
/// KEYS[1]: the user's hash; ARGV: id, new country.
const HAND_CHANGE_FN: &str = r"
local function bad(key, probe)
  local r = redis.pcall(probe, key)
  return type(r) == 'table' and r.err
end
local id, new = ARGV[1], ARGV[2]
if bad(KEYS[1], 'HLEN') then return redis.error_reply('WRONGTYPE a key of the wrong type') end
local old = redis.call('HGET', KEYS[1], 'country')
if not old then return redis.error_reply('NOT_FOUND') end
if old ~= new and (bad('user:country:' .. new, 'SCARD') or bad('user:country:' .. old, 'SCARD')) then
  return redis.error_reply('WRONGTYPE a key of the wrong type')
end
redis.call('HSET', KEYS[1], 'country', new)
if old ~= new then redis.call('SREM', 'user:country:' .. old, id) end
redis.call('SADD', 'user:country:' .. new, id)
return 0
";

/// A score increment by hand with the guarantees of redis-entity's: the
/// player must exist, the stored score must be a number and the sorted
/// set a sorted set, checked before the first write; the new score goes
/// into the sorted set. KEYS[1]: the player's hash; ARGV: id, delta.
const HAND_SCORE_FN: &str = r"
local function bad(key, probe)
  local r = redis.pcall(probe, key)
  return type(r) == 'table' and r.err
end
if bad(KEYS[1], 'HLEN') or bad('player:score', 'ZCARD') then
  return redis.error_reply('WRONGTYPE a key of the wrong type')
end
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOT_FOUND') end
local v = redis.call('HGET', KEYS[1], 'score')
if v and not tonumber(v) then return redis.error_reply('NOT_A_NUMBER') end
local s = redis.call('HINCRBYFLOAT', KEYS[1], 'score', ARGV[2])
redis.call('ZADD', 'player:score', s, ARGV[1])
return 0
";

/// Loads `body` (a hand-written function's text, reading `KEYS` and `ARGV`)
/// as function `name` of a library of its own in `side`'s functions VM: on
/// redis-entity's server, an `FCALL` of it runs in the Lua heap of
/// redis-entity's write functions (the same text called with `EVALSHA` runs
/// in the scripting VM, which holds little else).
async fn load_hand_function(side: &Side, name: &str, body: &str) {
    let code = format!(
        "#!lua name={name}\nredis.register_function('{name}', function(KEYS, ARGV)\n{body}\nend)\n"
    );
    let mut c = side
        .server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(code)
        .query_async(&mut c)
        .await
        .unwrap();
}

/// One `FCALL` of `name`, loaded by [`load_hand_function`], with one key.
fn hand_fcall(name: &str, key: String) -> redis::Cmd {
    let mut c = redis::cmd("FCALL");
    c.arg(name).arg(1).arg(key);
    c
}

/// One save of `u` by `HAND_SAVE_FN` (`f`, its script).
async fn hand_fn_save<C: redis::aio::ConnectionLike + Send>(
    f: &redis::Script,
    c: &mut C,
    u: &User,
) {
    let _: i64 = f
        .key(format!("user:{{{}}}", u.id))
        .arg(u.id)
        .arg(&u.username)
        .arg(&u.email)
        .arg(&u.country)
        .arg(u.level)
        .invoke_async(c)
        .await
        .unwrap();
}

/// One save of `users` by `HAND_SAVE_BATCH_FN` (`f`, its script).
async fn hand_fn_save_batch<C: redis::aio::ConnectionLike + Send>(
    f: &redis::Script,
    c: &mut C,
    users: &[User],
) {
    let mut call = f.prepare_invoke();
    for u in users {
        call.key(format!("user:{{{}}}", u.id))
            .arg(u.id)
            .arg(&u.username)
            .arg(&u.email)
            .arg(&u.country)
            .arg(u.level);
    }
    let _: Vec<i64> = call.invoke_async(c).await.unwrap();
}

/// `HAND_SAVE_FN` over many users in one call, each with its own checks
/// and result. KEYS: the users' hashes; ARGV: five per user.
const HAND_SAVE_BATCH_FN: &str = r"
local function bad(key, probe)
  local r = redis.pcall(probe, key)
  return type(r) == 'table' and r.err
end
local out = {}
for u = 1, #KEYS do
  local key, b = KEYS[u], 5 * (u - 1)
  local id, name, email, country, level = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
  local owner_key, set_key = 'user:username:' .. name, 'user:country:' .. country
  local result
  if bad(key, 'HLEN') or bad(owner_key, 'STRLEN') or bad(set_key, 'SCARD')
    or bad('user:ids', 'SCARD') then
    result = redis.error_reply('WRONGTYPE a key of the wrong type')
  else
    local old = redis.call('HMGET', key, 'username', 'country')
    local owner = redis.call('GET', owner_key)
    if old[2] and old[2] ~= country and bad('user:country:' .. old[2], 'SCARD') then
      result = redis.error_reply('WRONGTYPE a key of the wrong type')
    elseif owner and owner ~= id then
      result = redis.error_reply('UNIQUE username taken')
    else
      redis.call('HSET', key, 'username', name, 'email', email, 'country', country, 'level', level)
      if old[1] and old[1] ~= name then redis.call('DEL', 'user:username:' .. old[1]) end
      redis.call('SET', owner_key, id)
      if old[2] and old[2] ~= country then redis.call('SREM', 'user:country:' .. old[2], id) end
      redis.call('SADD', set_key, id)
      redis.call('SADD', 'user:ids', id)
      result = 1
    end
  end
  out[u] = result
end
return out
";

/// Server µs per write call for the summary table (`None`: not measured),
/// each ratio from one row of the run: redis-entity and the hand-written
/// function with the same guarantees (their row), redis-entity and the
/// minimal `MULTI`/`EXEC` (theirs).
#[derive(Default)]
struct Floors(Vec<(&'static str, [Option<f64>; 4])>);

impl Floors {
    fn set(&mut self, row: &'static str, side: usize, us: Option<f64>) {
        match self.0.iter_mut().find(|(r, _)| *r == row) {
            Some((_, v)) => v[side] = us,
            None => {
                let mut v = [None; 4];
                v[side] = us;
                self.0.push((row, v));
            }
        }
    }

    fn print(&self) {
        println!("\nserver µs per write (INFO commandstats, this run; batches: per entity)\n");
        println!("| write | redis-entity | hand-written function | ratio | redis-entity | minimal MULTI/EXEC | ratio |");
        println!("|---|---:|---:|---:|---:|---:|---:|");
        let show = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        for (row, [re, f, re2, exec]) in &self.0 {
            println!(
                "| {row} | {} | {} | {} | {} | {} | {} |",
                show(*re),
                show(*f),
                ratio(*re, *f),
                show(*re2),
                show(*exec),
                ratio(*re2, *exec)
            );
        }
    }
}

/// A change of `id`'s country from `old` to `new` in one minimal
/// `MULTI`/`EXEC` (the hand-written side is told the old value).
async fn hand_exec_country(
    c: &mut CountingConnection<MultiplexedConnection>,
    id: u64,
    old: &str,
    new: &str,
) {
    let mut p = redis::pipe();
    p.cmd("MULTI").ignore();
    hand_country_change(&mut p, id, old, new);
    p.cmd("EXEC").ignore();
    let _: () = p.query_async(c).await.unwrap();
}

/// A score increment of player `id` by `d` in one minimal `MULTI`/`EXEC`.
async fn hand_exec_score(c: &mut CountingConnection<MultiplexedConnection>, id: u64, d: f64) {
    let mut p = redis::pipe();
    p.cmd("MULTI").ignore();
    p.cmd("HINCRBYFLOAT")
        .arg(format!("player:{{{id}}}"))
        .arg("score")
        .arg(d)
        .ignore();
    p.cmd("ZINCRBY").arg("player:score").arg(d).arg(id).ignore();
    p.cmd("EXEC").ignore();
    let _: () = p.query_async(c).await.unwrap();
}

/// One call of a hand-written function `f` with key `key` and arguments
/// `id`, `arg` (the change and score functions' calls).
async fn hand_fn_call<C: redis::aio::ConnectionLike + Send>(
    f: &redis::Script,
    c: &mut C,
    key: String,
    id: u64,
    arg: impl redis::ToRedisArgs,
) {
    let _: i64 = f.key(key).arg(id).arg(arg).invoke_async(c).await.unwrap();
}

async fn hand_save_user(c: &mut CountingConnection<MultiplexedConnection>, u: &User) {
    let mut p = redis::pipe();
    hand_user_commands(&mut p, u);
    let _: () = p.query_async(c).await.unwrap();
}

/// The hand-written save with the guarantees redis-entity gives: the stored
/// values are read (to remove old index entries) and the username checked
/// before anything is written, under WATCH, retried if another writer got
/// in between: two round trips.
async fn hand_save_user_guarded(c: &mut CountingConnection<MultiplexedConnection>, u: &User) {
    let key = format!("user:{{{}}}", u.id);
    let ukey = format!("user:username:{}", u.username);
    let deadline = Deadline::after(WAIT_LIMIT);
    loop {
        deadline.check(|| format!("a WATCH/MULTI/EXEC save of {key} to get through"));
        let mut p = redis::pipe();
        p.cmd("WATCH").arg(&key).arg(&ukey).ignore();
        p.cmd("HMGET").arg(&key).arg("username").arg("country");
        p.cmd("GET").arg(&ukey);
        let ((old_name, old_country), owner): ((Option<String>, Option<String>), Option<u64>) =
            p.query_async(c).await.unwrap();
        if owner.is_some_and(|o| o != u.id) {
            let () = redis::cmd("UNWATCH").query_async(c).await.unwrap();
            panic!("username taken");
        }
        let mut p = redis::pipe();
        p.cmd("MULTI").ignore();
        p.cmd("HSET")
            .arg(&key)
            .arg("username")
            .arg(&u.username)
            .arg("email")
            .arg(&u.email)
            .arg("country")
            .arg(&u.country)
            .arg("level")
            .arg(u.level)
            .ignore();
        if old_name.as_deref() != Some(u.username.as_str()) {
            if let Some(old) = &old_name {
                p.cmd("DEL").arg(format!("user:username:{old}")).ignore();
            }
            p.cmd("SET").arg(&ukey).arg(u.id).ignore();
        }
        if old_country.as_deref() != Some(u.country.as_str()) {
            if let Some(old) = &old_country {
                p.cmd("SREM")
                    .arg(format!("user:country:{old}"))
                    .arg(u.id)
                    .ignore();
            }
            p.cmd("SADD")
                .arg(format!("user:country:{}", u.country))
                .arg(u.id)
                .ignore();
        }
        p.cmd("EXEC");
        let (done,): (redis::Value,) = p.query_async(c).await.unwrap();
        if done != redis::Value::Nil {
            return;
        }
    }
}

/// The hand-written change of an indexed field with the same guarantees:
/// the old value is read under WATCH, not assumed.
async fn hand_change_country_guarded(
    c: &mut CountingConnection<MultiplexedConnection>,
    id: u64,
    new: &str,
) {
    let key = format!("user:{{{id}}}");
    let deadline = Deadline::after(WAIT_LIMIT);
    loop {
        deadline.check(|| format!("a WATCH/MULTI/EXEC change of {key} to get through"));
        let mut p = redis::pipe();
        p.cmd("WATCH").arg(&key).ignore();
        p.cmd("HGET").arg(&key).arg("country");
        let (old,): (Option<String>,) = p.query_async(c).await.unwrap();
        let mut p = redis::pipe();
        p.cmd("MULTI").ignore();
        p.cmd("HSET").arg(&key).arg("country").arg(new).ignore();
        if let Some(old) = old.filter(|o| o != new) {
            p.cmd("SREM")
                .arg(format!("user:country:{old}"))
                .arg(id)
                .ignore();
        }
        p.cmd("SADD")
            .arg(format!("user:country:{new}"))
            .arg(id)
            .ignore();
        p.cmd("EXEC");
        let (done,): (redis::Value,) = p.query_async(c).await.unwrap();
        if done != redis::Value::Nil {
            return;
        }
    }
}

/// The minimal atomic write of a new user: the hash, the unique key, the country set.
fn hand_user_commands(p: &mut redis::Pipeline, u: &User) {
    p.cmd("MULTI").ignore();
    p.cmd("HSET")
        .arg(format!("user:{{{}}}", u.id))
        .arg("username")
        .arg(&u.username)
        .arg("email")
        .arg(&u.email)
        .arg("country")
        .arg(&u.country)
        .arg("level")
        .arg(u.level)
        .ignore();
    p.cmd("SET")
        .arg(format!("user:username:{}", u.username))
        .arg(u.id)
        .ignore();
    p.cmd("SADD")
        .arg(format!("user:country:{}", u.country))
        .arg(u.id)
        .ignore();
    p.cmd("EXEC").ignore();
}

fn parse_user(id: u64, fields: Vec<(String, String)>) -> Option<User> {
    if fields.is_empty() {
        return None;
    }
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    Some(User {
        id,
        username: get("username")?,
        email: get("email")?,
        country: get("country")?,
        level: get("level")?.parse().ok()?,
    })
}

fn parse_book(id: u64, fields: Vec<(String, String)>) -> Option<Book> {
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    Some(Book {
        id,
        title: get("title")?,
        tags: get("tags")?.split(':').map(str::to_string).collect(),
    })
}

fn parse_player(id: u64, fields: Vec<(String, String)>) -> Option<Player> {
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    Some(Player {
        id,
        name: get("name")?,
        score: get("score")?.parse().ok()?,
    })
}

async fn hand_books(c: &mut CountingConnection<MultiplexedConnection>, ids: Vec<u64>) -> Vec<Book> {
    if ids.is_empty() {
        return Vec::new();
    }
    let mut p = redis::pipe();
    for id in &ids {
        p.hgetall(format!("book:{{{id}}}"));
    }
    let rows: Vec<Vec<(String, String)>> = p.query_async(c).await.unwrap();
    ids.into_iter()
        .zip(rows)
        .filter_map(|(id, r)| parse_book(id, r))
        .collect()
}

/// The hand-written layout of `players` with score 0: their hashes and
/// their entries in `player:score`, in one pipeline.
async fn hand_save_players(c: &mut CountingConnection<MultiplexedConnection>, players: &[Player]) {
    let mut p = redis::pipe();
    for pl in players {
        p.cmd("HSET")
            .arg(format!("player:{{{}}}", pl.id))
            .arg("name")
            .arg(&pl.name)
            .arg("score")
            .arg(0)
            .ignore();
        p.cmd("ZADD").arg("player:score").arg(0).arg(pl.id).ignore();
    }
    let _: () = p.query_async(c).await.unwrap();
}

/// redis-entity's score increments `deltas[i]` (player, delta) for each
/// `i` of `range`, one update call each.
async fn incr_scores(
    store: &Store<CountingConnection<MultiplexedConnection>>,
    deltas: &[(u64, f64)],
    range: std::ops::Range<u64>,
) {
    for i in range {
        let (id, d) = deltas[i as usize];
        store
            .update::<Player>(&id)
            .incr(Player::SCORE, d)
            .exec()
            .await
            .unwrap();
    }
}

/// The 32-task steps: gets, unique lookups, level updates and tag queries
/// with records, mixed, on one shared store (one connection), against the
/// hand-written mix four ways (`HandMix`: bare, with the checked level
/// update, with that and the one-call lookup, and with every check of
/// redis-entity's, the tag query's too); each kind of operation alone
/// against the last (`MixOp`: where the mix's gap lies); then the floor
/// rows of the hand-written mixes against each other (`-- --mix` runs these
/// alone).
async fn mix_steps(
    fw: &Side,
    hand: &Side,
    store: &Store<CountingConnection<MultiplexedConnection>>,
    n_users: u64,
    books: &[Book],
    pairs: &[(String, String)],
) {
    let shared_pairs = std::sync::Arc::new(pairs.to_vec());
    let hc = &hand.conn;
    let every = HandMix::EVERY_CHECK;
    let mut rows: Vec<(String, HandMix, Option<MixOp>)> = [
        ("32 tasks: gets, finds, updates, tag queries", HandMix::BARE),
        ("32 tasks (vs hand-written function)", HandMix::CHECKED),
        (
            "32 tasks (vs hand-written functions: checked update, one-call lookup)",
            HandMix::CHECKED_ONE_CALL,
        ),
        (
            "32 tasks (vs hand-written with every check: the above, checked tag query)",
            every,
        ),
        (
            "32 tasks (vs every check, records read by their fields: HMGET)",
            HandMix::EVERY_CHECK_BY_FIELDS,
        ),
    ]
    .map(|(name, how)| (name.to_string(), how, None))
    .into();
    // Each kind alone against every check: where the mix's gap lies; the
    // kinds that read records, also against the mix reading by fields.
    for (kind, what) in [
        (MixOp::Get, "gets"),
        (MixOp::Find, "unique lookups"),
        (MixOp::Update, "level updates"),
        (MixOp::TagQuery, "tag queries"),
    ] {
        rows.push((
            format!("32 tasks, {what} alone (vs every check)"),
            every,
            Some(kind),
        ));
    }
    for (kind, what) in [
        (MixOp::Get, "gets"),
        (MixOp::Find, "unique lookups"),
        (MixOp::TagQuery, "tag queries"),
    ] {
        rows.push((
            format!("32 tasks, {what} alone (vs every check, by fields)"),
            HandMix::EVERY_CHECK_BY_FIELDS,
            Some(kind),
        ));
    }
    for (name, how, only) in rows {
        let (a, b) = pair(
            fw,
            hand,
            n_users,
            false,
            |r| mix_of_32(store.clone(), shared_pairs.clone(), r, n_users, only),
            |r| hand_mix_of_32(hc.clone(), shared_pairs.clone(), r, n_users, how, only),
        )
        .await;
        report(&name, &a, &b);
    }
    floor_rows::floor_mix_of_32(n_users, books, shared_pairs).await;
}

/// The sizes of the futures of the common calls, which a caller's task
/// holds and moves whole on every call (benches/NOTES.md, *The futures a
/// call moves*).
fn future_sizes(store: &Store<CountingConnection<MultiplexedConnection>>) {
    let u = user(1);
    let get = store.get::<User>(&1);
    let find = store.find_unique(User::USERNAME, "user1".to_string());
    let update = store.update::<User>(&1).incr(User::LEVEL, 1).exec();
    let save = store.save(&u);
    let fetch = store.query::<Book>().all(Book::TAGS, ["t1", "t2"]).fetch();
    println!(
        "future sizes (bytes): get {}, find_unique {}, update {}, save {}, query fetch {}\n",
        std::mem::size_of_val(&get),
        std::mem::size_of_val(&find),
        std::mem::size_of_val(&update),
        std::mem::size_of_val(&save),
        std::mem::size_of_val(&fetch),
    );
}

/// Users 0..n saved on both sides, in batches of 500: by the store, and in
/// the hand-written layout.
async fn save_users_both(
    store: &Store<CountingConnection<MultiplexedConnection>>,
    hand: &CountingConnection<MultiplexedConnection>,
    n: u64,
) {
    let users: Vec<User> = (0..n).map(user).collect();
    for chunk in users.chunks(500) {
        store.save_all(chunk).await.unwrap();
    }
    hand_users(&mut hand.clone(), n).await;
}

/// Users 0..n in the hand-written layout, in pipelines of 500.
async fn hand_users(c: &mut CountingConnection<MultiplexedConnection>, n: u64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let mut p = redis::pipe();
        for &id in chunk {
            hand_user_commands(&mut p, &user(id));
        }
        let _: () = p.query_async(c).await.unwrap();
    }
}

/// Books in the hand-written layout, in pipelines of 500.
async fn hand_save_books(c: &mut CountingConnection<MultiplexedConnection>, books: &[Book]) {
    for chunk in books.chunks(500) {
        let mut p = redis::pipe();
        for bk in chunk {
            hand_book_commands(&mut p, bk);
        }
        let _: () = p.query_async(c).await.unwrap();
    }
}

/// The books of the workload: 3 tags of 50 each, the same on both sides.
fn bench_books(n: u64) -> Vec<Book> {
    let mut rng = Rng(42);
    (0..n).map(|id| book(id, &mut rng)).collect()
}

/// The tag pairs the queries ask for (two different tags each).
fn bench_pairs(n: u64) -> Vec<(String, String)> {
    let mut rng = Rng(7);
    (0..n)
        .map(|_| {
            let x = rng.next() % 50;
            (tag(x), tag((x + 1 + rng.next() % 49) % 50))
        })
        .collect()
}

/// The hand-written layout's commands for book `bk`: its hash and its
/// tags' sets.
fn hand_book_commands(p: &mut redis::Pipeline, bk: &Book) {
    let tags: Vec<&str> = bk.tags.iter().map(String::as_str).collect();
    p.cmd("HSET")
        .arg(format!("book:{{{}}}", bk.id))
        .arg("title")
        .arg(&bk.title)
        .arg("tags")
        .arg(tags.join(":"))
        .ignore();
    for t in &tags {
        p.cmd("SADD")
            .arg(format!("book:tags:{t}"))
            .arg(bk.id)
            .ignore();
    }
}

/// Tag pairs shared by the tasks of the 32-task mix.
type Pairs = std::sync::Arc<Vec<(String, String)>>;

/// The 32-task mix over `range` through one store: operation `i` is, by
/// `i % 5`, a get (0, 1), a unique lookup (2), a level increment (3) or a
/// tag query with its records (4), on user `i % n_users`.
async fn mix_of_32(
    store: Store<CountingConnection<MultiplexedConnection>>,
    pairs: Pairs,
    range: std::ops::Range<u64>,
    n_users: u64,
    only: Option<MixOp>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..32u64 {
        let ops = task_ops(&range, t, only);
        let (store, pairs) = (store.clone(), pairs.clone());
        tasks.spawn(async move {
            for i in ops {
                let id = i % n_users;
                match i % 5 {
                    0 | 1 => {
                        assert!(store.get::<User>(&id).await.unwrap().is_some());
                    }
                    2 => {
                        let u = store.find_unique(User::USERNAME, format!("user{id}"));
                        assert!(u.await.unwrap().is_some());
                    }
                    3 => store
                        .update::<User>(&id)
                        .incr(User::LEVEL, 1)
                        .exec()
                        .await
                        .unwrap(),
                    _ => {
                        let (x, y) = &pairs[(i as usize) % pairs.len()];
                        let q = store.query::<Book>().all(Book::TAGS, [x, y]);
                        q.fetch().await.unwrap();
                    }
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
}

/// How the hand-written mix does its level updates and unique lookups.
#[derive(Clone, Copy)]
struct HandMix {
    /// The level update by `HAND_LEVEL_FN` (the user must exist), not a
    /// bare `HINCRBY`.
    checked_update: bool,
    /// The unique lookup by `HAND_FIND_FN` (one call, as redis-entity's),
    /// not a `GET` and then an `HGETALL` (two round trips).
    one_call_lookup: bool,
    /// The tag query with redis-entity's checks: the `ZCARD` of an expiry
    /// set in the `SINTER`'s round trip (an entity with a TTL may have
    /// left index entries behind), and every fetched book checked to hold
    /// both tags (an index entry may be stale), not the `SINTER` alone.
    checked_query: bool,
    /// Records read by their fields (`HMGET` of the type's fields, as
    /// redis-entity reads them), not `HGETALL`.
    field_reads: bool,
}

impl HandMix {
    const BARE: HandMix = HandMix {
        checked_update: false,
        one_call_lookup: false,
        checked_query: false,
        field_reads: false,
    };
    const CHECKED: HandMix = HandMix {
        checked_update: true,
        ..HandMix::BARE
    };
    const CHECKED_ONE_CALL: HandMix = HandMix {
        one_call_lookup: true,
        ..HandMix::CHECKED
    };
    /// Every check redis-entity makes in the mix.
    const EVERY_CHECK: HandMix = HandMix {
        checked_query: true,
        ..HandMix::CHECKED_ONE_CALL
    };
    /// Every check, and the records read as redis-entity reads them.
    const EVERY_CHECK_BY_FIELDS: HandMix = HandMix {
        field_reads: true,
        ..HandMix::EVERY_CHECK
    };
}

/// One kind of operation of the 32-task mix, for the steps that run it
/// alone (the mix takes operation `i` as kind `i % 5`).
#[derive(Clone, Copy)]
enum MixOp {
    /// A get by pk (two in five of the mix).
    Get = 0,
    /// A unique lookup.
    Find = 2,
    /// A level update.
    Update = 3,
    /// A tag query and its fetch.
    TagQuery = 4,
}

impl MixOp {
    /// The `i`th operation of this kind: an index of the mix that is of
    /// this kind, so that the ids and tag pairs spread as in the mix.
    fn of(self, i: u64) -> u64 {
        i * 5 + self as u64
    }
}

/// The operations of task `t` of the 32 over `range`: every 32nd index,
/// or with `only`, the operations of that kind at those places.
fn task_ops(range: &std::ops::Range<u64>, t: u64, only: Option<MixOp>) -> Vec<u64> {
    range
        .clone()
        .filter(|i| i % 32 == t)
        .map(|i| only.map_or(i, |k| k.of(i)))
        .collect()
}

/// The same mix by hand over one connection, its level updates and unique
/// lookups as `how` says.
async fn hand_mix_of_32(
    conn: CountingConnection<MultiplexedConnection>,
    pairs: Pairs,
    range: std::ops::Range<u64>,
    n_users: u64,
    how: HandMix,
    only: Option<MixOp>,
) {
    static LEVEL_FN: std::sync::LazyLock<redis::Script> =
        std::sync::LazyLock::new(|| redis::Script::new(HAND_LEVEL_FN));
    static FIND_FN: std::sync::LazyLock<redis::Script> =
        std::sync::LazyLock::new(|| redis::Script::new(HAND_FIND_FN));
    static FIND_FIELDS_FN: std::sync::LazyLock<redis::Script> =
        std::sync::LazyLock::new(|| redis::Script::new(HAND_FIND_FIELDS_FN));
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..32u64 {
        let ops = task_ops(&range, t, only);
        let (mut c, pairs) = (conn.clone(), pairs.clone());
        tasks.spawn(async move {
            for i in ops {
                let id = i % n_users;
                let user = format!("user:{{{id}}}");
                match i % 5 {
                    0 | 1 if how.field_reads => {
                        let v: UserFields = redis::cmd("HMGET")
                            .arg(&user)
                            .arg(USER_FIELDS)
                            .query_async(&mut c)
                            .await
                            .unwrap();
                        assert!(user_from_fields(id, v).is_some());
                    }
                    0 | 1 => {
                        let f: Vec<(String, String)> = c.hgetall(&user).await.unwrap();
                        assert!(parse_user(id, f).is_some());
                    }
                    2 if how.field_reads => {
                        let owner_key = format!("user:username:user{id}");
                        let found: Option<(u64, UserFields)> = FIND_FIELDS_FN
                            .key(&owner_key)
                            .invoke_async(&mut c)
                            .await
                            .unwrap();
                        let (owner, v) = found.unwrap();
                        assert!(user_from_fields(owner, v).is_some());
                    }
                    2 => {
                        let owner_key = format!("user:username:user{id}");
                        let (owner, f): (u64, Vec<(String, String)>) = if how.one_call_lookup {
                            let found: Option<(u64, Vec<(String, String)>)> =
                                FIND_FN.key(&owner_key).invoke_async(&mut c).await.unwrap();
                            found.unwrap()
                        } else {
                            let owner: Option<u64> = c.get(&owner_key).await.unwrap();
                            let owner = owner.unwrap();
                            (owner, c.hgetall(format!("user:{{{owner}}}")).await.unwrap())
                        };
                        assert!(parse_user(owner, f).is_some());
                    }
                    3 => {
                        let _: i64 = if how.checked_update {
                            LEVEL_FN.key(&user).invoke_async(&mut c).await.unwrap()
                        } else {
                            c.hincr(&user, "level", 1).await.unwrap()
                        };
                    }
                    _ => {
                        let (x, y) = &pairs[(i as usize) % pairs.len()];
                        let tags = [format!("book:tags:{x}"), format!("book:tags:{y}")];
                        if how.checked_query {
                            let mut p = redis::pipe();
                            p.zcard("book:expiry").sinter(&tags);
                            let (expiring, ids): (u64, Vec<u64>) =
                                p.query_async(&mut c).await.unwrap();
                            assert_eq!(expiring, 0);
                            let books = if how.field_reads {
                                hand_books_by_fields(&mut c, ids).await
                            } else {
                                hand_books(&mut c, ids).await
                            };
                            let held = books
                                .iter()
                                .filter(|b| b.tags.contains(x) && b.tags.contains(y));
                            assert_eq!(held.count(), books.len());
                        } else {
                            let ids: Vec<u64> = c.sinter(&tags).await.unwrap();
                            hand_books(&mut c, ids).await;
                        }
                    }
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
}

/// A level increment by hand with the guarantees of redis-entity's update
/// of an unindexed counter: the user must exist and its hash be a hash, and
/// the stored level a number (`HINCRBY` refuses one that is not, writing
/// nothing). KEYS[1]: the user's hash.
const HAND_LEVEL_FN: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('NOT_FOUND') end
return redis.call('HINCRBY', KEYS[1], 'level', 1)
";

/// The user's fields as `HMGET` answers them (`USER_FIELDS`).
type UserFields = (Option<String>, Option<String>, Option<String>, Option<i64>);

/// The fields of a user a read by fields asks for.
const USER_FIELDS: &[&str] = &["username", "email", "country", "level"];

fn user_from_fields(id: u64, (username, email, country, level): UserFields) -> Option<User> {
    Some(User {
        id,
        username: username?,
        email: email?,
        country: country?,
        level: level?,
    })
}

/// Books by their fields: `HMGET` of each book's title and tags, pipelined.
async fn hand_books_by_fields(
    c: &mut CountingConnection<MultiplexedConnection>,
    ids: Vec<u64>,
) -> Vec<Book> {
    if ids.is_empty() {
        return Vec::new();
    }
    let mut p = redis::pipe();
    for id in &ids {
        p.cmd("HMGET")
            .arg(format!("book:{{{id}}}"))
            .arg(&["title", "tags"]);
    }
    let rows: Vec<(Option<String>, Option<String>)> = p.query_async(c).await.unwrap();
    ids.into_iter()
        .zip(rows)
        .filter_map(|(id, (title, tags))| {
            Some(Book {
                id,
                title: title?,
                tags: tags?.split(':').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// `HAND_FIND_FN` with the owner's hash read by its fields.
const HAND_FIND_FIELDS_FN: &str = r"
local owner = redis.call('GET', KEYS[1])
if not owner then return false end
return { owner, redis.call('HMGET', 'user:{' .. owner .. '}', 'username', 'email', 'country', 'level') }
";

/// A unique lookup by hand in one call, as redis-entity's: the owner the
/// username's key names, then the owner's hash (the minimal script for the
/// type; it names no wrong-typed key). KEYS[1]: the username's key.
const HAND_FIND_FN: &str = r"
local owner = redis.call('GET', KEYS[1])
if not owner then return false end
return { owner, redis.call('HGETALL', 'user:{' .. owner .. '}') }
";

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let near_only = std::env::args().any(|a| a == "--near-cache");
    let schema_only = std::env::args().any(|a| a == "--schema");
    let floors_only = std::env::args().any(|a| a == "--floors");
    if std::env::args().any(|a| a == "--instructions") {
        instructions::run().await;
        return;
    }
    let scale = if quick { 10 } else { 1 };
    let n_users = 20_000 / scale;
    let n_books = 10_000 / scale;
    let n_queries = 1_000 / scale;
    let n_changes = 10_000 / scale;
    let n_incr = 50_000 / scale;
    let n_top = 1_000 / scale;

    if floors_only {
        table_header();
        floor_rows::floor_steps(n_users, n_changes, n_incr).await;
        let pairs = std::sync::Arc::new(bench_pairs(n_queries));
        floor_rows::floor_mix_of_32(n_users, &bench_books(n_books), pairs).await;
        return;
    }
    let fw = Side::start().await;
    let hand = Side::start().await;
    let store = Store::new(fw.conn.clone());
    let store = &store;
    let hc = &hand.conn;
    // Load the scripts once so that the figures show the steady state.
    store.save(&user(u64::MAX)).await.unwrap();
    store.delete::<User>(&u64::MAX).await.unwrap();
    store
        .query::<Book>()
        .eq(Book::TAGS, "x")
        .count()
        .await
        .unwrap();

    if schema_only {
        schema_check_step(&fw, n_users).await;
        backfill_step(&fw, n_users).await;
        return;
    }

    if near_only {
        // The users the near-cache steps read, on both sides.
        save_users_both(store, hc, n_users).await;
        near_cache_steps(&fw, &hand, n_users, scale).await;
        return;
    }

    if std::env::args().any(|a| a == "--mix") {
        // The users and books the mix reads, on both sides.
        save_users_both(store, hc, n_users).await;
        let books = bench_books(n_books);
        for chunk in books.chunks(500) {
            store.save_all(chunk).await.unwrap();
        }
        hand_save_books(&mut hc.clone(), &books).await;
        table_header();
        mix_steps(&fw, &hand, store, n_users, &books, &bench_pairs(n_queries)).await;
        println!();
        fw.print_lua_heaps("redis-entity's").await;
        hand.print_lua_heaps("the hand-written side's").await;
        return;
    }

    println!(
        "redis-entity vs hand-written redis-rs, {n_users} users, {n_books} books, {n_queries} queries per kind, {n_changes} changes, {n_incr} score increments, {n_top} top-10 reads"
    );
    println!("ops/s and round trips per op; bytes: Redis used_memory growth per entity; ratio = redis-entity / hand-written\n");
    println!("server CPU: µs of redis-server CPU (INFO cpu) per operation; write call: µs per FCALL (re) or EXEC (hand) from INFO commandstats\n");
    future_sizes(store);
    table_header();

    // 1. Save users one at a time.
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        true,
        |r| async move {
            for id in r {
                store.save(&user(id)).await.unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for id in r {
                hand_save_user(&mut c, &user(id)).await;
            }
        },
    )
    .await;
    report("save user (one at a time)", &a, &b);
    let save_us = a.write_us_per_call;
    let mut floors = Floors::default();
    floors.set("save (new entity)", 2, a.write_us_per_call);
    floors.set("save (new entity)", 3, b.write_us_per_call);

    // 1a. The same users saved again (they exist: the stored values are
    //     read, nothing moves).
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        false,
        |r| async move {
            for id in r {
                store.save(&user(id)).await.unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for id in r {
                hand_save_user(&mut c, &user(id)).await;
            }
        },
    )
    .await;
    report("save user again (existing)", &a, &b);
    floors.set("save (existing entity)", 2, a.write_us_per_call);
    floors.set("save (existing entity)", 3, b.write_us_per_call);

    // 1b. The same against hand-written code with the same guarantees.
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        true,
        |r| async move {
            for id in r {
                store.save(&user(id + 10 * n_users)).await.unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for id in r {
                hand_save_user_guarded(&mut c, &user(id + 10 * n_users)).await;
            }
        },
    )
    .await;
    report("save user (vs WATCH/GET/MULTI/EXEC)", &a, &b);

    // 2. Save users in batches of 100.
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        true,
        |r| async move {
            let users: Vec<User> = r.map(|id| user(id + n_users)).collect();
            for chunk in users.chunks(100) {
                store.save_all(chunk).await.unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            let users: Vec<User> = r.map(|id| user(id + n_users)).collect();
            for chunk in users.chunks(100) {
                let mut p = redis::pipe();
                for u in chunk {
                    hand_user_commands(&mut p, u);
                }
                let _: () = p.query_async(&mut c).await.unwrap();
            }
        },
    )
    .await;
    report("save user (batches of 100)", &a, &b);
    let per_entity = |f: &Figures| f.write_us_per_call.map(|us| us / 100.0);
    floors.set("save in batches of 100", 2, per_entity(&a));
    // (The hand-written side runs one MULTI/EXEC per user in its pipeline.)
    floors.set("save in batches of 100", 3, b.write_us_per_call);

    // 2b. The same against one hand-written function call per 100 users,
    //     with the same guarantees per user.
    let batch_fn = redis::Script::new(HAND_SAVE_BATCH_FN);
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        true,
        |r| async move {
            let users: Vec<User> = r.map(|id| user(id + 30 * n_users)).collect();
            for chunk in users.chunks(100) {
                store.save_all(chunk).await.unwrap();
            }
        },
        |r| {
            let (mut c, f) = (hc.clone(), &batch_fn);
            async move {
                let users: Vec<User> = r.map(|id| user(id + 30 * n_users)).collect();
                for chunk in users.chunks(100) {
                    hand_fn_save_batch(f, &mut c, chunk).await;
                }
            }
        },
    )
    .await;
    report(
        "save user (batches of 100, vs hand-written function)",
        &a,
        &b,
    );
    floors.set("save in batches of 100", 0, per_entity(&a));
    floors.set("save in batches of 100", 1, per_entity(&b));

    // 3. Get by pk.
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        false,
        |r| async move {
            for id in r {
                assert!(store.get::<User>(&id).await.unwrap().is_some());
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for id in r {
                let f: Vec<(String, String)> = c.hgetall(format!("user:{{{id}}}")).await.unwrap();
                assert!(parse_user(id, f).is_some());
            }
        },
    )
    .await;
    report("get user by pk", &a, &b);

    // 4. Find by username (unique index).
    let (a, b) = pair(
        &fw,
        &hand,
        n_users,
        false,
        |r| async move {
            for id in r {
                let u = store
                    .find_unique(User::USERNAME, format!("user{id}"))
                    .await
                    .unwrap();
                assert!(u.is_some());
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for id in r {
                let owner: Option<u64> = c.get(format!("user:username:user{id}")).await.unwrap();
                let owner = owner.unwrap();
                let f: Vec<(String, String)> =
                    c.hgetall(format!("user:{{{owner}}}")).await.unwrap();
                assert!(parse_user(owner, f).is_some());
            }
        },
    )
    .await;
    report("find user by username", &a, &b);

    // 5. Books with 3 tags of 50 (the same books on both sides).
    let books = bench_books(n_books);
    let books = &books;
    let (a, b) = pair(
        &fw,
        &hand,
        n_books,
        true,
        |r| async move {
            for id in r {
                store.save(&books[id as usize]).await.unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for id in r {
                let mut p = redis::pipe();
                p.cmd("MULTI").ignore();
                hand_book_commands(&mut p, &books[id as usize]);
                p.cmd("EXEC").ignore();
                let _: () = p.query_async(&mut c).await.unwrap();
            }
        },
    )
    .await;
    report("save book with 3 tags", &a, &b);

    // 6. Queries with full records.
    let pairs = bench_pairs(n_queries);
    let pairs = &pairs;
    for (name, op) in [
        ("all (SINTER) + records", 0),
        ("any (SUNION) + records", 1),
        ("x but not y (SDIFF) + records", 2),
    ] {
        let found_fw = std::cell::Cell::new(0);
        let found_hand = std::cell::Cell::new(0);
        let (ffw, fhand) = (&found_fw, &found_hand);
        let (a, b) = pair(
            &fw,
            &hand,
            n_queries,
            false,
            |r| async move {
                for i in r {
                    let (x, y) = &pairs[i as usize];
                    let q = store.query::<Book>();
                    let q = match op {
                        0 => q.all(Book::TAGS, [x.clone(), y.clone()]),
                        1 => q.any(Book::TAGS, [x.clone(), y.clone()]),
                        _ => q.eq(Book::TAGS, x.clone()).none(Book::TAGS, [y.clone()]),
                    };
                    ffw.set(ffw.get() + q.fetch().await.unwrap().len());
                }
            },
            |r| async move {
                let mut c = hc.clone();
                for i in r {
                    let (x, y) = &pairs[i as usize];
                    let (kx, ky) = (format!("book:tags:{x}"), format!("book:tags:{y}"));
                    let ids: Vec<u64> = match op {
                        0 => c.sinter(&[kx, ky]).await.unwrap(),
                        1 => c.sunion(&[kx, ky]).await.unwrap(),
                        _ => c.sdiff(&[kx, ky]).await.unwrap(),
                    };
                    fhand.set(fhand.get() + hand_books(&mut c, ids).await.len());
                }
            },
        )
        .await;
        assert_eq!(
            found_fw.get(),
            found_hand.get(),
            "{name}: both sides find the same books"
        );
        report(name, &a, &b);
    }

    // 7. Country changes (an indexed field; the old entry must go). Each
    //    side changes its own users the same way.
    let country = |id: u64, gen: u64| COUNTRIES[((id + gen) % 20) as usize];
    // The unit of 3 for each op of `r`, the changed user's country taken
    // from generation `gen` (each step its own, so that every change moves
    // an index entry).
    let units = |r: std::ops::Range<u64>, gen: u64| async move {
        for i in r {
            let x = (i + 2) % n_users;
            unit_of_3(store, i, n_users, country(x, i / n_users + gen)).await;
        }
    };
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| async move {
            for i in r {
                let id = i % n_users;
                store
                    .update::<User>(&id)
                    .set(User::COUNTRY, country(id, i / n_users + 1))
                    .exec()
                    .await
                    .unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for i in r {
                let id = i % n_users;
                // The hand-written side knows the old value (no read), the
                // most favourable case for it.
                let (old, new) = (country(id, i / n_users), country(id, i / n_users + 1));
                hand_exec_country(&mut c, id, old, new).await;
            }
        },
    )
    .await;
    report("change country (indexed)", &a, &b);
    floors.set("change of an indexed field", 2, a.write_us_per_call);
    floors.set("change of an indexed field", 3, b.write_us_per_call);

    // 7b. The same against hand-written code that reads the old value.
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| async move {
            for i in r {
                let id = i % n_users;
                store
                    .update::<User>(&id)
                    .set(User::COUNTRY, country(id, i / n_users + 7))
                    .exec()
                    .await
                    .unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for i in r {
                let id = i % n_users;
                hand_change_country_guarded(&mut c, id, country(id, i / n_users + 7)).await;
            }
        },
    )
    .await;
    report("change country (vs WATCH/GET/MULTI/EXEC)", &a, &b);

    // 7d. A unit of work of three operations (two level increments and a
    //     change of an indexed field, three users) as one transaction,
    //     then as three separate calls, each against the same work as one
    //     hand-written MULTI/EXEC (which knows the old value and checks
    //     nothing).
    let hand_unit = |c: &mut CountingConnection<MultiplexedConnection>, i: u64, shift: u64| {
        let (a, b, x) = (i % n_users, (i + 1) % n_users, (i + 2) % n_users);
        let (old, new) = (
            country(x, i / n_users + shift),
            country(x, i / n_users + shift + 1),
        );
        let mut p = redis::pipe();
        p.cmd("MULTI").ignore();
        p.cmd("HINCRBY")
            .arg(format!("user:{{{a}}}"))
            .arg("level")
            .arg(1)
            .ignore();
        p.cmd("HINCRBY")
            .arg(format!("user:{{{b}}}"))
            .arg("level")
            .arg(-1)
            .ignore();
        hand_country_change(&mut p, x, old, new);
        p.cmd("EXEC").ignore();
        let mut c = c.clone();
        async move {
            let _: () = p.query_async(&mut c).await.unwrap();
        }
    };
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| units(r, 21),
        |r| {
            let mut c = hc.clone();
            async move {
                for i in r {
                    hand_unit(&mut c, i, 20).await;
                }
            }
        },
    )
    .await;
    report("unit of 3 (transaction)", &a, &b);
    let unit_us = a.write_us_per_call;
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| async move {
            for i in r {
                let (a, b, x) = (i % n_users, (i + 1) % n_users, (i + 2) % n_users);
                store
                    .update::<User>(&a)
                    .incr(User::LEVEL, 1)
                    .exec()
                    .await
                    .unwrap();
                store
                    .update::<User>(&b)
                    .incr(User::LEVEL, -1)
                    .exec()
                    .await
                    .unwrap();
                store
                    .update::<User>(&x)
                    .set(User::COUNTRY, country(x, i / n_users + 41))
                    .exec()
                    .await
                    .unwrap();
            }
        },
        |r| {
            let mut c = hc.clone();
            async move {
                for i in r {
                    hand_unit(&mut c, i, 40).await;
                }
            }
        },
    )
    .await;
    report("same 3 as separate calls", &a, &b);

    // 7e. The floor of those ratios: a hand-written Lua function with the
    //     same guarantees (reads the stored values, checks the unique owner,
    //     numbers and key types first, refuses a missing entity) for a save
    //     of one user and for the unit of 3.
    let save_fn = redis::Script::new(HAND_SAVE_FN);
    let unit_fn = redis::Script::new(HAND_UNIT_FN);
    // The same users twice: new, then existing.
    let mut hand_save_us = None;
    for (row, floor) in [
        ("save user (vs hand-written function)", "save (new entity)"),
        (
            "save user again (vs hand-written function)",
            "save (existing entity)",
        ),
    ] {
        let (a, b) = pair(
            &fw,
            &hand,
            n_users,
            false,
            |r| async move {
                for id in r {
                    store.save(&user(id + 20 * n_users)).await.unwrap();
                }
            },
            |r| {
                let (mut c, f) = (hc.clone(), &save_fn);
                async move {
                    for id in r {
                        hand_fn_save(f, &mut c, &user(id + 20 * n_users)).await;
                    }
                }
            },
        )
        .await;
        report(row, &a, &b);
        hand_save_us = hand_save_us.or(b.write_us_per_call);
        floors.set(floor, 0, a.write_us_per_call);
        floors.set(floor, 1, b.write_us_per_call);
    }
    let change_fn = redis::Script::new(HAND_CHANGE_FN);
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| async move {
            for i in r {
                let id = i % n_users;
                store
                    .update::<User>(&id)
                    .set(User::COUNTRY, country(id, i / n_users + 81))
                    .exec()
                    .await
                    .unwrap();
            }
        },
        |r| {
            let (mut c, f) = (hc.clone(), &change_fn);
            async move {
                for i in r {
                    let id = i % n_users;
                    let new = country(id, i / n_users + 81);
                    hand_fn_call(f, &mut c, format!("user:{{{id}}}"), id, new).await;
                }
            }
        },
    )
    .await;
    report("change country (vs hand-written function)", &a, &b);
    floors.set("change of an indexed field", 0, a.write_us_per_call);
    floors.set("change of an indexed field", 1, b.write_us_per_call);
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| units(r, 61),
        |r| {
            let (mut c, f) = (hc.clone(), &unit_fn);
            async move {
                for i in r {
                    let (a, b, x) = (i % n_users, (i + 1) % n_users, (i + 2) % n_users);
                    let _: i64 = f
                        .key(format!("user:{{{a}}}"))
                        .key(format!("user:{{{b}}}"))
                        .key(format!("user:{{{x}}}"))
                        .arg(x)
                        .arg(country(x, i / n_users + 61))
                        .invoke_async(&mut c)
                        .await
                        .unwrap();
                }
            }
        },
    )
    .await;
    report("unit of 3 (vs hand-written function)", &a, &b);
    let hand_unit_us = b.write_us_per_call;
    // 7f. The aim of units (at most 1.5x the server time of one save),
    //     measured in the same alternating rounds: the unit of 3 on the
    //     first server, saves of new users through a store of its own on
    //     the second (the rows above are minutes apart, and the VM's speed
    //     drifts by more than the aim's margin).
    let save_store = Store::new(hc.clone());
    let save_store = &save_store;
    let (a, b) = pair(
        &fw,
        &hand,
        n_changes,
        false,
        |r| units(r, 101),
        |r| async move {
            for id in r {
                save_store.save(&user(id + 50 * n_users)).await.unwrap();
            }
        },
    )
    .await;
    report("unit of 3 vs one save (both redis-entity)", &a, &b);
    if let (Some(unit), Some(save), Some(hunit), Some(hsave)) = (
        a.write_us_per_call,
        b.write_us_per_call,
        hand_unit_us,
        hand_save_us,
    ) {
        println!(
            "\nunit of 3: {unit:.1} µs of server time per call = {:.2}x one save ({save:.1} µs) in the same rounds \
             (against the first save row: {}); hand-written functions with the same checks: unit {hunit:.1} µs = {:.2}x their save ({hsave:.1} µs)\n",
            unit / save,
            match (unit_us, save_us) {
                (Some(u), Some(s)) => format!("{u:.1} / {s:.1} µs = {:.2}x", u / s),
                _ => "-".into(),
            },
            hunit / hsave
        );
        table_header();
    }

    // 7c. 32 tasks sharing one store (one connection).
    mix_steps(&fw, &hand, store, n_users, books, pairs).await;

    // 8. Leaderboard: score increments (hash and sorted set together), then
    //    top 10 with profiles.
    let players = players(n_users);
    for chunk in players.chunks(500) {
        store.save_all(chunk).await.unwrap();
        hand_save_players(&mut hc.clone(), chunk).await;
    }
    let deltas: Vec<(u64, f64)> = {
        let mut rng = Rng(99);
        (0..n_incr)
            .map(|_| (rng.next() % n_users, (rng.next() % 1000) as f64 / 10.0))
            .collect()
    };
    let deltas = &deltas;
    let (a, b) = pair(
        &fw,
        &hand,
        n_incr,
        false,
        |r| incr_scores(store, deltas, r),
        |r| async move {
            let mut c = hc.clone();
            for i in r {
                let (id, d) = deltas[i as usize];
                hand_exec_score(&mut c, id, d).await;
            }
        },
    )
    .await;
    report("score increment (hash + zset)", &a, &b);
    floors.set("score increment (sorted index)", 2, a.write_us_per_call);
    floors.set("score increment (sorted index)", 3, b.write_us_per_call);
    let score_fn = redis::Script::new(HAND_SCORE_FN);
    let (a, b) = pair(
        &fw,
        &hand,
        n_incr,
        false,
        |r| incr_scores(store, deltas, r),
        |r| {
            let (mut c, f) = (hc.clone(), &score_fn);
            async move {
                for i in r {
                    let (id, d) = deltas[i as usize];
                    hand_fn_call(f, &mut c, format!("player:{{{id}}}"), id, d).await;
                }
            }
        },
    )
    .await;
    report("score increment (vs hand-written function)", &a, &b);
    floors.set("score increment (sorted index)", 0, a.write_us_per_call);
    floors.set("score increment (sorted index)", 1, b.write_us_per_call);
    // The floors of the rows above, each in rounds of its own.
    floor_rows::floor_steps(n_users, n_changes, n_incr).await;
    let best_fw = std::cell::RefCell::new(Vec::new());
    let best_hand = std::cell::RefCell::new(Vec::new());
    let (bf, bh) = (&best_fw, &best_hand);
    let (a, b) = pair(
        &fw,
        &hand,
        n_top,
        false,
        |r| async move {
            for _ in r {
                let top = store.board(Player::SCORE).top(10).await.unwrap();
                *bf.borrow_mut() = top.into_iter().map(|(_, s)| s).collect::<Vec<f64>>();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for _ in r {
                let top: Vec<(u64, f64)> =
                    c.zrevrange_withscores("player:score", 0, 9).await.unwrap();
                let mut p = redis::pipe();
                for (id, _) in &top {
                    p.hgetall(format!("player:{{{id}}}"));
                }
                let rows: Vec<Vec<(String, String)>> = p.query_async(&mut c).await.unwrap();
                // The same typed result as redis-entity's: the players with their scores.
                let best: Vec<(Player, f64)> = top
                    .iter()
                    .zip(rows)
                    .filter_map(|(&(id, s), r)| Some((parse_player(id, r)?, s)))
                    .collect();
                assert_eq!(best.len(), top.len());
                *bh.borrow_mut() = best.into_iter().map(|(_, s)| s).collect::<Vec<f64>>();
            }
        },
    )
    .await;
    {
        // HINCRBYFLOAT adds in long double, ZINCRBY in double: the last bits may differ.
        let (f, h) = (best_fw.borrow(), best_hand.borrow());
        assert!(
            f.len() == h.len()
                && f.iter()
                    .zip(h.iter())
                    .all(|(a, b)| (a - b).abs() <= 1e-9 * b.abs().max(1.0)),
            "both leaderboards agree: {f:?} / {h:?}"
        );
    }
    report("top 10 with profiles", &a, &b);

    // 9. The save of a new user and the score increment once more, with the
    //    hand-written function loaded into redis-entity's server and both
    //    sides' calls sent there: one server state, one Lua heap and one
    //    keyspace for both, so that what differs is the code and the client
    //    (benches/NOTES.md, *One server for both sides*). The hand-written
    //    side's keys are removed after each step.
    load_hand_function(&fw, "hand_save", HAND_SAVE_FN).await;
    one_server(
        &fw,
        (&mut floors, "save (new entity), both on one server"),
        &["user:{*", "user:username:*", "user:country:*", "user:ids"],
        n_users,
        |r| async move {
            for id in r {
                store.save(&user(id + 60 * n_users)).await.unwrap();
            }
        },
        |r| {
            let mut c = fw.conn.clone();
            async move {
                for id in r {
                    let u = user(id + 60 * n_users);
                    let _: i64 = hand_fcall("hand_save", format!("user:{{{}}}", u.id))
                        .arg(u.id)
                        .arg(&u.username)
                        .arg(&u.email)
                        .arg(&u.country)
                        .arg(u.level)
                        .query_async(&mut c)
                        .await
                        .unwrap();
                }
            }
        },
    )
    .await;
    load_hand_function(&fw, "hand_score", HAND_SCORE_FN).await;
    for chunk in players.chunks(500) {
        hand_save_players(&mut fw.conn.clone(), chunk).await;
    }
    one_server(
        &fw,
        (&mut floors, "score increment, both on one server"),
        &["player:{*", "player:score"],
        n_incr,
        |r| incr_scores(store, deltas, r),
        |r| {
            let mut c = fw.conn.clone();
            async move {
                for i in r {
                    let (id, d) = deltas[i as usize];
                    let _: i64 = hand_fcall("hand_score", format!("player:{{{id}}}"))
                        .arg(id)
                        .arg(d)
                        .query_async(&mut c)
                        .await
                        .unwrap();
                }
            }
        },
    )
    .await;

    floors.print();
    println!();
    fw.print_lua_heaps("redis-entity's").await;
    hand.print_lua_heaps("the hand-written side's").await;

    schema_check_step(&fw, n_users).await;
    backfill_step(&fw, n_users).await;

    near_cache_steps(&fw, &hand, n_users, scale).await;

    let report = store.maintenance::<User>().verify().await.unwrap();
    println!(
        "\nverify::<User>() after the run: {} entities, {} violations",
        report.entities,
        report.violations.len()
    );
    if !quick {
        save_rows();
    }
}

/// The write path's schema check (docs/schema-evolution.md): `n` saves of
/// existing users through a store that tracks schema records
/// (`Store::builder()`'s layout check, what `Store::connect` does) and through one that
/// does not (`Store::new`), on one server and connection, in 10 rounds that
/// alternate which goes first. A tracked save reads the clock and looks its
/// definition up in a map, and announces the definition once per half
/// heartbeat (5 s). The cost is the ratio of the two sides' total times;
/// the spread is that of each pair of rounds (one of each order).
async fn schema_check_step(fw: &Side, n: u64) {
    const ROUNDS: u64 = 10;
    let plain = Store::new(fw.conn.clone());
    let tracked = Store::builder().build(fw.conn.clone());
    // The announcement and the layout marker, before the clock starts.
    tracked.save(&user(0)).await.unwrap();
    let saves = |s: &Store<CountingConnection<MultiplexedConnection>>, r: std::ops::Range<u64>| {
        let s = s.clone();
        async move {
            let t = Instant::now();
            for id in r {
                s.save(&user(id)).await.unwrap();
            }
            t.elapsed().as_secs_f64()
        }
    };
    let mut rounds = Vec::new();
    for r in 0..ROUNDS {
        let range = r * n / ROUNDS..(r + 1) * n / ROUNDS;
        let (p, t) = if r % 2 == 0 {
            let p = saves(&plain, range.clone()).await;
            (p, saves(&tracked, range).await)
        } else {
            let t = saves(&tracked, range.clone()).await;
            (saves(&plain, range).await, t)
        };
        rounds.push((p, t));
    }
    let (tp, tt) = rounds
        .iter()
        .fold((0.0, 0.0), |(a, b), (p, t)| (a + p, b + t));
    let pairs: Vec<f64> = rounds
        .chunks(2)
        .map(|c| c.iter().map(|r| r.1).sum::<f64>() / c.iter().map(|r| r.0).sum::<f64>())
        .collect();
    let lo = pairs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pairs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!("\n## Schema check\n");
    println!("| store | saves/s | µs per save |");
    println!("|---|---:|---:|");
    for (name, secs) in [
        ("Store::new (no check)", tp),
        ("layout check (schema check)", tt),
    ] {
        println!(
            "| {name} | {:.0} | {:.2} |",
            n as f64 / secs,
            secs * 1e6 / n as f64
        );
    }
    println!(
        "\nschema check: {:+.1}% of a save ({ROUNDS} alternating rounds; pairs of rounds from {:+.1}% to {:+.1}%)",
        (tt / tp - 1.0) * 100.0,
        (lo - 1.0) * 100.0,
        (hi - 1.0) * 100.0
    );
}

/// The backfill of `schema apply` against `reindex` on the same data: `n`
/// items written by a definition with a sorted index, then the next
/// definition's equality index built by apply (one walk: SCAN pages, each
/// entity indexed from its stored value, the walk's cursor recorded after
/// each page), then the same index emptied and filled again by `reindex`
/// (SCAN of every key first, then the same write per entity). Entities per
/// second.
async fn backfill_step(fw: &Side, n: u64) {
    let store = Store::builder()
        .schema_heartbeat(Duration::from_millis(100))
        .build(fw.conn.clone());
    let items: Vec<ItemV1> = (0..n)
        .map(|id| ItemV1 {
            id,
            color: COUNTRIES[id as usize % 20].into(),
            size: id as i64,
        })
        .collect();
    for chunk in items.chunks(1000) {
        store.save_all(chunk).await.unwrap();
    }
    // The first definition's announcement lapses: apply does not wait.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let t = Instant::now();
    let applied = store.schema().apply::<ItemV2>().await.unwrap();
    let apply_s = t.elapsed().as_secs_f64();
    assert_eq!(applied.built, ["color"]);
    // The same index emptied again (its keys deleted; the record still
    // says ready), and filled by `reindex`: the same work on the same data.
    let mut c = fw.conn.clone();
    let color_keys: Vec<String> = store.keys().scan("item:@color:*").await.unwrap();
    let () = redis::cmd("DEL")
        .arg(&color_keys)
        .query_async(&mut c)
        .await
        .unwrap();
    let t = Instant::now();
    let reindexed = store.maintenance::<ItemV2>().reindex().await.unwrap();
    let reindex_s = t.elapsed().as_secs_f64();
    assert_eq!(reindexed as u64, n);
    assert_eq!(
        store.find(ItemV2::COLOR, "DE").await.unwrap().len() as u64,
        n / 20
    );
    println!("\n## Backfill\n");
    println!("| walk | entities | s | entities/s |");
    println!("|---|---:|---:|---:|");
    println!(
        "| `schema apply` (build `color`) | {} | {apply_s:.2} | {:.0} |",
        applied.indexed,
        applied.indexed as f64 / apply_s
    );
    println!(
        "| `reindex` (the same index, emptied) | {reindexed} | {reindex_s:.2} | {:.0} |",
        reindexed as f64 / reindex_s
    );
    println!(
        "\napply / reindex rate: {:.2}",
        (applied.indexed as f64 / apply_s) / (reindexed as f64 / reindex_s)
    );
}

/// Bytes allocated and not yet freed by this process: what the near cache
/// holds is measured as the growth of this while it fills.
static LIVE_BYTES: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

struct CountingAlloc;

// SAFETY: every call is passed to the system allocator unchanged; only the
// size is counted.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on as given.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new as isize - layout.size() as isize,
            std::sync::atomic::Ordering::Relaxed,
        );
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Zipf-distributed ranks (exponent 1) over `n` items: rank 0 is the
/// hottest.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|k| {
                acc += 1.0 / k as f64;
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf(cdf)
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        self.0.partition_point(|&c| c < u).min(self.0.len() - 1)
    }
}

/// The near cache: reads of a hot set by pk from memory against
/// hand-written `HGETALL`, a 90/10 read/write mix, and the cache's hit
/// ratio, invalidation delay and memory per entity.
async fn near_cache_steps(fw: &Side, hand: &Side, n_users: u64, scale: u64) {
    use redis_entity::near::{NearCache, NearCacheOptions};
    let hot = (1_000 / scale).max(10) as usize;
    let n_ops = 100_000 / scale;
    let stride = (n_users / hot as u64).max(1);
    let zipf = Zipf::new(hot);
    let near = NearCache::connect(
        &fw.server.url(),
        NearCacheOptions::default()
            .max_entries(10_000)
            .only::<User>(),
    )
    .await
    .unwrap();
    let store = Store::builder()
        .near_cache(near.clone())
        .layout_check(false)
        .build(fw.conn.clone());
    let store = &store;
    let hc = &hand.conn;
    let picks: Vec<u64> = {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        (0..n_ops)
            .map(|_| zipf.sample(&mut rng) as u64 * stride)
            .collect()
    };
    let picks = &picks;
    println!(
        "\nnear cache: {hot} hot users of {n_users}, Zipf-distributed picks, {n_ops} operations per step\n"
    );
    table_header();

    let before = near.stats();
    let (a, b) = pair(
        fw,
        hand,
        n_ops,
        false,
        |r| async move {
            for i in r {
                let id = picks[i as usize];
                assert!(store.get::<User>(&id).await.unwrap().is_some());
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for i in r {
                let id = picks[i as usize];
                let f: Vec<(String, String)> = c.hgetall(format!("user:{{{id}}}")).await.unwrap();
                assert!(parse_user(id, f).is_some());
            }
        },
    )
    .await;
    report("get user by pk, hot set (near cache)", &a, &b);
    let got = near.stats();
    let trips_read = (got.round_trips - before.round_trips) as f64 / n_ops as f64;
    let hits = |from: &redis_entity::near::NearCacheStats,
                to: &redis_entity::near::NearCacheStats| {
        let (h, m) = (to.hits - from.hits, to.misses - from.misses);
        100.0 * h as f64 / (h + m).max(1) as f64
    };
    let read_hits = hits(&before, &got);

    // 90% reads, 10% writes (a new level), the same picks on both sides.
    let before = near.stats();
    let (a, b) = pair(
        fw,
        hand,
        n_ops,
        false,
        |r| async move {
            for i in r {
                let id = picks[i as usize];
                if i % 10 == 9 {
                    let mut u = user(id);
                    u.level = (i % 1000) as i64;
                    store.save(&u).await.unwrap();
                } else {
                    assert!(store.get::<User>(&id).await.unwrap().is_some());
                }
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for i in r {
                let id = picks[i as usize];
                if i % 10 == 9 {
                    let mut u = user(id);
                    u.level = (i % 1000) as i64;
                    hand_save_user(&mut c, &u).await;
                } else {
                    let f: Vec<(String, String)> =
                        c.hgetall(format!("user:{{{id}}}")).await.unwrap();
                    assert!(parse_user(id, f).is_some());
                }
            }
        },
    )
    .await;
    report("90% get / 10% save, hot set (near cache)", &a, &b);
    let mixed_hits = hits(&before, &near.stats());
    let trips_mixed = (near.stats().round_trips - before.round_trips) as f64 / n_ops as f64;

    // Invalidation delay: another client changes a cached user; how long
    // until a reader of this store sees the change.
    let mut writer = fw
        .server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let mut delays = Vec::new();
    for t in 0..(200 / scale.min(2)) {
        let id = (t % hot as u64) * stride;
        store.get::<User>(&id).await.unwrap();
        let level = 5_000 + t as i64;
        // The key as the store spells it (here the standalone layout), never
        // by hand: a key the store does not read is a change never seen.
        let key = store.keys().of::<User>(id).base;
        let () = writer.hset(&key, "level", level).await.unwrap();
        let start = Instant::now();
        let deadline = Deadline::after(WAIT_LIMIT);
        loop {
            let seen = store
                .get::<User>(&id)
                .await
                .unwrap()
                .expect("the changed user is stored")
                .level;
            if seen == level {
                break;
            }
            deadline.check(|| {
                format!("the near cache to show {key}'s new level {level} (it still reads {seen})")
            });
            tokio::task::yield_now().await;
        }
        delays.push(start.elapsed().as_secs_f64() * 1e6);
    }
    delays.sort_by(f64::total_cmp);
    let pct = |p: f64| delays[((delays.len() - 1) as f64 * p) as usize];

    // Memory: the growth of this process' heap while the cache fills with
    // the hot set.
    near.clear();
    let live = LIVE_BYTES.load(std::sync::atomic::Ordering::Relaxed);
    for rank in 0..hot as u64 {
        store.get::<User>(&(rank * stride)).await.unwrap();
    }
    let grown = LIVE_BYTES.load(std::sync::atomic::Ordering::Relaxed) - live;
    let entries = near.stats().entries.max(1);
    println!(
        "\nnear cache: round trips per op over its connection {trips_read:.3} (reads), {trips_mixed:.3} (90/10 mix; the saves go over it); hit ratio {read_hits:.1}% (reads), {mixed_hits:.1}% (90/10 mix); invalidation delay p50 {:.0} µs, p99 {:.0} µs ({} changes by another client); memory {:.0} bytes per cached user ({} users); {:?}",
        pct(0.5),
        pct(0.99),
        delays.len(),
        grown as f64 / entries as f64,
        entries,
        near.stats()
    );
}
