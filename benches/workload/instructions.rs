//! `cargo bench --bench workload -- --instructions`: the server's work per
//! write counted in instructions, not time.
//!
//! Server microseconds per call (`INFO commandstats`) move by 10-20% from
//! one run to the next on a shared 2-core VM, more than the 1.2x margin the
//! write targets leave. The instructions the server executes per call do
//! not: a `redis-server` run under valgrind's callgrind counts them, and
//! `callgrind_control` reads the count around each step. The same saves and
//! changes as the workload's rows "vs hand-written function" (the same users, the same
//! hand-written functions), against one server that holds both. Caches and
//! the machine's speed are left out by design: this is the work asked of
//! the server, the time rows are what it cost on the day.
//!
//! Needs `valgrind` (`apt-get install -y valgrind`); says so and stops
//! without it.

use super::{
    hand_fn_save, hand_fn_save_batch, user, Player, User, COUNTRIES, HAND_CHANGE_FN,
    HAND_SAVE_BATCH_FN, HAND_SAVE_FN, HAND_SCORE_FN,
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
    let mut conn = server
        .client()
        .get_multiplexed_async_connection()
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
    for s in [&save_fn, &batch_fn, &change_fn, &score_fn] {
        let _: String = s.prepare_invoke().load_async(&mut conn).await.unwrap();
    }
    let idle = counter.idle_per_second().await;

    println!("server instructions per write (callgrind; {USERS} users per step, one server)\n");
    println!("| write | redis-entity | hand-written function | ratio |");
    println!("|---|---:|---:|---:|");
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
        print_row(row, ours / USERS as f64, hand / USERS as f64);
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
        .count(idle, async {
            let mut c = conn.clone();
            for id in 0..USERS {
                let _: i64 = change_fn
                    .key(format!("user:{{{id}}}"))
                    .arg(id)
                    .arg(next(id))
                    .invoke_async(&mut c)
                    .await
                    .unwrap();
            }
        })
        .await;
    print_row(
        "change of an indexed field",
        ours / USERS as f64,
        hand / USERS as f64,
    );
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
        .count(idle, async {
            let mut c = conn.clone();
            for id in 0..USERS {
                let _: i64 = score_fn
                    .key(format!("player:{{{id}}}"))
                    .arg(id)
                    .arg(delta(id))
                    .invoke_async(&mut c)
                    .await
                    .unwrap();
            }
        })
        .await;
    print_row(
        "score increment (sorted index)",
        ours / USERS as f64,
        hand / USERS as f64,
    );
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
    print_row(
        "save in batches of 100, per entity",
        ours / USERS as f64,
        hand / USERS as f64,
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&counter.out);
}

fn print_row(row: &str, ours: f64, hand: f64) {
    println!("| {row} | {ours:.0} | {hand:.0} | {:.2} |", ours / hand);
}

/// A `redis-server` run by valgrind's callgrind (through a wrapper the
/// test harness starts as its binary), counting from the start.
fn start_under_callgrind(out: &Path) -> RedisServer {
    let wrapper = out.join("redis-server-callgrind");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={}/cg.%p redis-server \"$@\"\n",
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
    async fn count(&self, idle_per_s: f64, work: impl std::future::Future<Output = ()>) -> f64 {
        self.control("-z").await;
        let start = Instant::now();
        work.await;
        let secs = start.elapsed().as_secs_f64();
        self.control("-d").await;
        (self.last_dump() - idle_per_s * secs).max(0.0)
    }

    /// What the server executes per second doing nothing (`serverCron`,
    /// the event loop), measured over two seconds.
    async fn idle_per_second(&self) -> f64 {
        self.control("-z").await;
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let secs = start.elapsed().as_secs_f64();
        self.control("-d").await;
        self.last_dump() / secs
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
    fn last_dump(&self) -> f64 {
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
        std::fs::read_to_string(newest.1)
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("summary:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("a summary line in the dump")
    }
}
