//! The benchmark workload: redis-entity against hand-written redis-rs sending
//! the minimal commands for the same effect, in the same run, each against
//! its own fresh redis-server on this machine.
//!
//! Run: `cargo bench --bench workload` (add `-- --quick` for a 10x smaller run).
//! For every step it prints ops/s, round trips per op and Redis memory per
//! entity for both, and the ratio (redis-entity / hand-written). Each step
//! runs in 10 rounds that alternate which side goes first, so that a slow
//! moment of the machine falls on both sides alike.

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use redis_entity::{CountingConnection, RedisEntity, RoundTrips, Store};
use std::collections::BTreeSet;
use std::time::Instant;
use support::RedisServer;

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

const COUNTRIES: [&str; 20] = [
    "DE", "CN", "FR", "US", "BR", "IN", "JP", "IT", "ES", "MX", "NL", "SE", "NO", "PL", "PT", "KR",
    "AR", "CA", "AU", "ZA",
];

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
}

/// A side's figures for a step of `ops` that took `secs`.
async fn figures(side: &Side, ops: u64, entities: bool, secs: f64, mem_before: i64) -> Figures {
    let trips = side.trips.take();
    let after = side.used_memory().await;
    Figures {
        ops_per_s: ops as f64 / secs,
        trips_per_op: trips as f64 / ops as f64,
        bytes_per_entity: entities.then(|| (after - mem_before) as f64 / ops as f64),
    }
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
    fw.trips.take();
    hand.trips.take();
    let (mut tf, mut tg) = (0.0, 0.0);
    for r in 0..ROUNDS {
        let range = r * ops / ROUNDS..(r + 1) * ops / ROUNDS;
        if r % 2 == 0 {
            let t = Instant::now();
            f(range.clone()).await;
            tf += t.elapsed().as_secs_f64();
            let t = Instant::now();
            g(range).await;
            tg += t.elapsed().as_secs_f64();
        } else {
            let t = Instant::now();
            g(range.clone()).await;
            tg += t.elapsed().as_secs_f64();
            let t = Instant::now();
            f(range).await;
            tf += t.elapsed().as_secs_f64();
        }
    }
    let a = figures(fw, ops, entities, tf, mem.0).await;
    let b = figures(hand, ops, entities, tg, mem.1).await;
    (a, b)
}

fn report(step: &str, fw: &Figures, hand: &Figures) {
    let bytes = |f: &Figures| match f.bytes_per_entity {
        Some(b) => format!("{b:>7.0}"),
        None => "      -".into(),
    };
    let ratio_bytes = match (fw.bytes_per_entity, hand.bytes_per_entity) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:>5.2}", a / b),
        _ => "    -".into(),
    };
    println!(
        "| {step:<34} | {:>9.0} | {:>9.0} | {:>5.2} | {:>4.2} | {:>4.2} | {} | {} | {} |",
        fw.ops_per_s,
        hand.ops_per_s,
        fw.ops_per_s / hand.ops_per_s,
        fw.trips_per_op,
        hand.trips_per_op,
        bytes(fw),
        bytes(hand),
        ratio_bytes,
    );
}

async fn hand_save_user(c: &mut CountingConnection<MultiplexedConnection>, u: &User) {
    let mut p = redis::pipe();
    hand_user_commands(&mut p, u);
    let _: () = p.query_async(c).await.unwrap();
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

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let n_users = 20_000 / scale;
    let n_books = 10_000 / scale;
    let n_queries = 1_000 / scale;
    let n_changes = 10_000 / scale;
    let n_incr = 50_000 / scale;
    let n_top = 1_000 / scale;

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

    println!(
        "redis-entity vs hand-written redis-rs, {n_users} users, {n_books} books, {n_queries} queries per kind, {n_changes} changes, {n_incr} score increments, {n_top} top-10 reads"
    );
    println!("ops/s and round trips per op; bytes: Redis used_memory growth per entity; ratio = redis-entity / hand-written\n");
    println!("| step | redis-entity ops/s | hand-written ops/s | ratio | trips (re) | trips (hand) | bytes (re) | bytes (hand) | bytes ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");

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
    let books: Vec<Book> = {
        let mut rng = Rng(42);
        (0..n_books).map(|id| book(id, &mut rng)).collect()
    };
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
                let bk = &books[id as usize];
                let tags: Vec<&str> = bk.tags.iter().map(String::as_str).collect();
                let mut p = redis::pipe();
                p.cmd("MULTI").ignore();
                p.cmd("HSET")
                    .arg(format!("book:{{{id}}}"))
                    .arg("title")
                    .arg(&bk.title)
                    .arg("tags")
                    .arg(tags.join(":"))
                    .ignore();
                for t in &tags {
                    p.cmd("SADD").arg(format!("book:tags:{t}")).arg(id).ignore();
                }
                p.cmd("EXEC").ignore();
                let _: () = p.query_async(&mut c).await.unwrap();
            }
        },
    )
    .await;
    report("save book with 3 tags", &a, &b);

    // 6. Queries with full records.
    let pairs: Vec<(String, String)> = {
        let mut rng = Rng(7);
        (0..n_queries)
            .map(|_| {
                let x = rng.next() % 50;
                (tag(x), tag((x + 1 + rng.next() % 49) % 50))
            })
            .collect()
    };
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
                let mut p = redis::pipe();
                p.cmd("MULTI").ignore();
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
                p.cmd("EXEC").ignore();
                let _: () = p.query_async(&mut c).await.unwrap();
            }
        },
    )
    .await;
    report("change country (indexed)", &a, &b);

    // 8. Leaderboard: score increments (hash and sorted set together), then
    //    top 10 with profiles.
    let players: Vec<Player> = (0..n_users)
        .map(|id| Player {
            id,
            name: format!("player{id}"),
            score: 0.0,
        })
        .collect();
    for chunk in players.chunks(500) {
        store.save_all(chunk).await.unwrap();
        let mut p = redis::pipe();
        for pl in chunk {
            p.cmd("HSET")
                .arg(format!("player:{{{}}}", pl.id))
                .arg("name")
                .arg(&pl.name)
                .arg("score")
                .arg(0)
                .ignore();
            p.cmd("ZADD").arg("player:score").arg(0).arg(pl.id).ignore();
        }
        let _: () = p.query_async(&mut hc.clone()).await.unwrap();
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
        |r| async move {
            for i in r {
                let (id, d) = deltas[i as usize];
                store
                    .update::<Player>(&id)
                    .incr(Player::SCORE, d)
                    .exec()
                    .await
                    .unwrap();
            }
        },
        |r| async move {
            let mut c = hc.clone();
            for i in r {
                let (id, d) = deltas[i as usize];
                let mut p = redis::pipe();
                p.cmd("MULTI").ignore();
                p.cmd("HINCRBYFLOAT")
                    .arg(format!("player:{{{id}}}"))
                    .arg("score")
                    .arg(d)
                    .ignore();
                p.cmd("ZINCRBY").arg("player:score").arg(d).arg(id).ignore();
                p.cmd("EXEC").ignore();
                let _: () = p.query_async(&mut c).await.unwrap();
            }
        },
    )
    .await;
    report("score increment (hash + zset)", &a, &b);
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
                let top = store.top(Player::SCORE, 10).await.unwrap();
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
                assert_eq!(rows.len(), top.len());
                *bh.borrow_mut() = top.into_iter().map(|(_, s)| s).collect::<Vec<f64>>();
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

    // Where the server's time went (microseconds per call).
    for (name, side) in [("redis-entity", &fw), ("hand-written", &hand)] {
        let mut c = side
            .server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut c)
            .await
            .unwrap();
        let stats: Vec<String> = info
            .lines()
            .filter_map(|l| {
                let (cmd, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = rest.split(',').find_map(|kv| kv.strip_prefix("calls="))?;
                let per = rest
                    .split(',')
                    .find_map(|kv| kv.strip_prefix("usec_per_call="))?;
                (calls.parse::<u64>().ok()? >= n_changes).then(|| format!("{cmd} {per}us x{calls}"))
            })
            .collect();
        println!("server time per call, {name}: {}", stats.join(", "));
    }

    let report = store.verify::<User>().await.unwrap();
    println!(
        "\nverify::<User>() after the run: {} entities, {} violations",
        report.entities,
        report.violations.len()
    );
}
