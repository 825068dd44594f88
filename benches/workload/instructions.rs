//! `cargo bench --bench workload -- --instructions`: the server's work per
//! write counted in instructions, not time.
//!
//! Server microseconds per call (`INFO commandstats`) move by 10-20% from
//! one run to the next on a shared 2-core VM, more than the 1.2x margin the
//! write targets leave. The instructions the server executes per call do
//! not: a `redis-server` run under valgrind's callgrind counts them, and
//! `callgrind_control` reads the count around each step. The same saves,
//! changes and increments as the workload's rows "vs hand-written
//! function" (the same users, the same hand-written functions), against
//! one server that holds both. Callgrind's cache simulation adds estimated
//! cycles (misses weighted as cachegrind weighs them), so a larger working
//! set shows too; the machine's speed is left out by design: this is the
//! work asked of the server, the time rows are what it cost on the day.
//!
//! Needs `valgrind` (`apt-get install -y valgrind`); says so and stops
//! without it. `KEEP_CALLGRIND=1` keeps the dumps.

use super::{
    hand_fn_call, hand_fn_save, hand_fn_save_batch, user, Player, User, COUNTRIES, HAND_CHANGE_FN,
    HAND_LEVEL_FN, HAND_SAVE_BATCH_FN, HAND_SAVE_FN, HAND_SCORE_FN,
};
use redis::aio::MultiplexedConnection;
use redis_entity::Store;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::RedisServer;

/// Users per step: enough that a step's count dwarfs the server's idle
/// work (`serverCron`), few enough for callgrind's 50x slowdown.
const USERS: u64 = 2_000;

pub async fn run() {
    if Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        println!("--instructions needs valgrind: apt-get install -y valgrind");
        return;
    }
    let out = std::env::temp_dir().join(format!("redis-entity-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let server = start_under_callgrind(&out);
    // No response timeout: under callgrind the first call of a library
    // (its load, valgrind translating the new code) can take seconds.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut conn = server
        .client()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    let pid: String = redis::cmd("INFO")
        .arg("server")
        .query_async::<String>(&mut conn)
        .await
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned();
    let counter = Counter {
        pid,
        out,
        conn: conn.clone(),
    };
    let store = Store::new(conn.clone());
    let store = &store;
    // The type's library and the hand-written scripts loaded first.
    store.save(&user(u64::MAX)).await.unwrap();
    store.delete::<User>(&u64::MAX).await.unwrap();
    let save_fn = redis::Script::new(HAND_SAVE_FN);
    let batch_fn = redis::Script::new(HAND_SAVE_BATCH_FN);
    let change_fn = redis::Script::new(HAND_CHANGE_FN);
    let score_fn = redis::Script::new(HAND_SCORE_FN);
    let level_fn = redis::Script::new(HAND_LEVEL_FN);
    for s in [&save_fn, &batch_fn, &change_fn, &score_fn, &level_fn] {
        let _: String = s.prepare_invoke().load_async(&mut conn).await.unwrap();
    }
    let idle = counter.idle_per_second().await;

    println!(
        "server work per write (callgrind with its cache simulation; {USERS} users per step, \
         one server)\n"
    );
    println!(
        "| write | instructions: redis-entity | hand-written function | ratio \
         | estimated cycles: redis-entity | hand-written function | ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    // New users, then the same users again (they exist), each side its own.
    for row in ["save (new entity)", "save (existing entity)"] {
        let ours = counter
            .count(idle, async {
                for id in 0..USERS {
                    store.save(&user(id)).await.unwrap();
                }
            })
            .await;
        let hand = counter
            .count(idle, async {
                let mut c = conn.clone();
                for id in 0..USERS {
                    hand_fn_save(&save_fn, &mut c, &user(id)).await;
                }
            })
            .await;
        print_row(row, ours, hand);
    }
    // The users' country moved to the next one (an equality index).
    let next = |id: u64| COUNTRIES[((id + 1) % 20) as usize];
    let ours = counter
        .count(idle, async {
            for id in 0..USERS {
                store
                    .update::<User>(&id)
                    .set(User::COUNTRY, next(id).to_owned())
                    .exec()
                    .await
                    .unwrap();
            }
        })
        .await;
    let hand = counter
        .count(idle, hand_each(&change_fn, &conn, "user", next))
        .await;
    print_row("change of an indexed field", ours, hand);
    // The 32-task mix's level increment (an unindexed counter), against
    // the function with the same checks (the user exists, the level is a
    // number).
    let ours = counter
        .count(idle, async {
            for id in 0..USERS {
                store
                    .update::<User>(&id)
                    .incr(User::LEVEL, 1)
                    .exec()
                    .await
                    .unwrap();
            }
        })
        .await;
    let hand = counter
        .count(idle, hand_each(&level_fn, &conn, "user", |_| 1))
        .await;
    print_row("level increment (unindexed counter)", ours, hand);
    // Each player's score incremented (a sorted index): the players are
    // stored first, each side its own (the hand-written function's keys
    // are `player:{id}` and `player:score`).
    for id in 0..USERS {
        let p = Player {
            id,
            name: format!("p{id}"),
            score: id as f64,
        };
        store.save(&p).await.unwrap();
        let () = redis::pipe()
            .atomic()
            .hset_multiple(
                format!("player:{{{id}}}"),
                &[("name", p.name.clone()), ("score", id.to_string())],
            )
            .ignore()
            .zadd("player:score", id, id as f64)
            .ignore()
            .query_async(&mut conn.clone())
            .await
            .unwrap();
    }
    let delta = |id: u64| (id % 7) as f64 + 0.5;
    let ours = counter
        .count(idle, async {
            for id in 0..USERS {
                store
                    .update::<Player>(&id)
                    .incr(Player::SCORE, delta(id))
                    .exec()
                    .await
                    .unwrap();
            }
        })
        .await;
    let hand = counter
        .count(idle, hand_each(&score_fn, &conn, "player", delta))
        .await;
    print_row("score increment (sorted index)", ours, hand);
    let users: Vec<User> = (USERS..2 * USERS).map(user).collect();
    let ours = counter
        .count(idle, async {
            for chunk in users.chunks(100) {
                store.save_all(chunk).await.unwrap();
            }
        })
        .await;
    let hand = counter
        .count(idle, async {
            let mut c = conn.clone();
            for chunk in users.chunks(100) {
                hand_fn_save_batch(&batch_fn, &mut c, chunk).await;
            }
        })
        .await;
    print_row("save in batches of 100, per entity", ours, hand);
    drop(server);
    // `KEEP_CALLGRIND=1`: the dumps stay, one per step in the order above,
    // for `callgrind_annotate` (where a step's instructions go).
    if std::env::var_os("KEEP_CALLGRIND").is_some() {
        println!("\ncallgrind dumps kept in {}", counter.out.display());
    } else {
        let _ = std::fs::remove_dir_all(&counter.out);
    }
}

/// The hand-written function `f` called once per id: key `<head>:{id}`,
/// arguments the id and `arg(id)`.
async fn hand_each<A: redis::ToRedisArgs>(
    f: &redis::Script,
    conn: &MultiplexedConnection,
    head: &str,
    arg: impl Fn(u64) -> A,
) {
    let mut c = conn.clone();
    for id in 0..USERS {
        hand_fn_call(f, &mut c, format!("{head}:{{{id}}}"), id, arg(id)).await;
    }
}

/// A row: per write, each side's instructions and estimated cycles, and
/// the ratios.
fn print_row(row: &str, ours: Work, hand: Work) {
    let (o, h) = (ours.per(USERS), hand.per(USERS));
    println!(
        "| {row} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.2} |",
        o.ir,
        h.ir,
        o.ir / h.ir,
        o.cycles,
        h.cycles,
        o.cycles / h.cycles
    );
}

/// What callgrind counted: instructions, and cycles as its cache
/// simulation estimates them (cachegrind's formula: each first-level miss
/// 10, each last-level miss 100, on top of the instructions). The cycles
/// add what a larger working set costs (the library's code and data, the
/// keys touched), which the instructions alone leave out.
#[derive(Clone, Copy)]
struct Work {
    ir: f64,
    cycles: f64,
}

impl Work {
    fn per(self, n: u64) -> Work {
        Work {
            ir: self.ir / n as f64,
            cycles: self.cycles / n as f64,
        }
    }

    /// `self` less `idle` (per second) over `secs`.
    fn less_idle(self, idle: Work, secs: f64) -> Work {
        Work {
            ir: (self.ir - idle.ir * secs).max(0.0),
            cycles: (self.cycles - idle.cycles * secs).max(0.0),
        }
    }
}

/// A `redis-server` run by valgrind's callgrind (through a wrapper the
/// test harness starts as its binary), counting from the start.
fn start_under_callgrind(out: &Path) -> RedisServer {
    let wrapper = out.join("redis-server-callgrind");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file={}/cg.%p redis-server \"$@\"\n",
            out.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::set_var("REDIS_SERVER_BIN", &wrapper);
    let server = RedisServer::start();
    std::env::remove_var("REDIS_SERVER_BIN");
    server
}

struct Counter {
    pid: String,
    out: PathBuf,
    conn: MultiplexedConnection,
}

impl Counter {
    /// Instructions the server executes in `work`, less its idle work
    /// over the same time.
    async fn count(&self, idle_per_s: Work, work: impl std::future::Future<Output = ()>) -> Work {
        self.control("-z").await;
        let start = Instant::now();
        work.await;
        let secs = start.elapsed().as_secs_f64();
        self.control("-d").await;
        self.last_dump().less_idle(idle_per_s, secs)
    }

    /// What the server executes per second doing nothing (`serverCron`,
    /// the event loop), measured over two seconds.
    async fn idle_per_second(&self) -> Work {
        self.control("-z").await;
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let secs = start.elapsed().as_secs_f64();
        self.control("-d").await;
        let w = self.last_dump();
        Work {
            ir: w.ir / secs,
            cycles: w.cycles / secs,
        }
    }

    /// Sends `callgrind_control <flag>`: callgrind takes the command in
    /// when the server runs, so it is woken (`PING`) until the command
    /// returns.
    async fn control(&self, flag: &str) {
        let mut child = Command::new("callgrind_control")
            .arg(flag)
            .arg(&self.pid)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("callgrind_control (valgrind)");
        let mut c = self.conn.clone();
        while child.try_wait().unwrap().is_none() {
            let _: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The instruction count of the newest dump (`cg.<pid>.<n>`, the
    /// largest `n`; its `summary:` line).
    fn last_dump(&self) -> Work {
        let prefix = format!("cg.{}.", self.pid);
        let newest = std::fs::read_dir(&self.out)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let n: u64 = name.strip_prefix(&prefix)?.parse().ok()?;
                Some((n, e.path()))
            })
            .max()
            .expect("a callgrind dump");
        // `summary: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw` (--cache-sim=yes).
        let events: Vec<f64> = std::fs::read_to_string(newest.1)
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("summary:"))
            .expect("a summary line in the dump")
            .split_whitespace()
            .map(|v| v.parse().expect("a count"))
            .collect();
        assert_eq!(events.len(), 9, "callgrind's cache simulation events");
        let first_level: f64 = events[3..6].iter().sum();
        let last_level: f64 = events[6..9].iter().sum();
        Work {
            ir: events[0],
            cycles: events[0] + 10.0 * first_level + 100.0 * last_level,
        }
    }
}
