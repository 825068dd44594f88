//! The bounded calls at scale, each a phase with its longest server call:
//! the operations whose whole-answer forms held the server longest (a
//! limited query of a big tag, counts over big sets, an ordered first
//! page), then a "celebrity" followed by a tenth of the users (at most
//! 1,000,000): reading the followers, a post fanned out to all of them
//! while 8 other clients read users (their p99 against the same clients
//! alone), the same post on a timeline that pulls the posts of authors
//! above 500 followers (hybrid fan-out), a follower's page of each, and
//! the celebrity's delete.

use super::{mix, percentile, phase, Conn, Results, Side, Start, User};
use futures_util::stream::{self, StreamExt};
use redis_entity::relation::{Relation, Timeline};
use redis_entity::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
const FEED: Timeline<User, User> = Timeline::new("feed", 100);
/// The same timeline pulling the posts of authors above 500 followers (the
/// celebrity has 1,000 at the smallest size).
const HYBRID: Timeline<User, User> = Timeline::new("hfeed", 100).pull_above(500, &FOLLOWS);
/// The celebrity.
const STAR: u64 = 0;

/// Runs `$e`, a phase named `$name` of `$items` items.
macro_rules! timed {
    ($res:expr, $table:expr, $si:expr, $fw:expr, $name:expr, $items:expr, $e:expr) => {{
        let start = Start::now($fw).await;
        let out = $e;
        let m = start.finish($fw).await;
        phase($res, $table, $si, $name, $items, m);
        out
    }};
}

pub(super) async fn run(
    res: &mut Results,
    table: &mut Vec<String>,
    si: usize,
    fw: &Side,
    store: &Store<Conn>,
    n: u64,
) {
    let q = || store.query::<User>();
    // A tenth of the users hold `k0` (the sweep before took `k3`'s).
    let page = timed!(res, table, si, fw, "query all(k0) limit 10, records", 10, {
        q().all(User::TAGS, ["k0"])
            .limit(0, 10)
            .fetch()
            .await
            .unwrap()
    });
    assert_eq!(page.len(), 10.min(n as usize / 10));
    let tenth = timed!(res, table, si, fw, "query all(k0, p1) count", 1, {
        q().all(User::TAGS, ["k0", "p1"]).count().await.unwrap()
    });
    assert!(tenth <= n);
    let others = timed!(res, table, si, fw, "query none(k0) count", 1, {
        q().none(User::TAGS, ["k0"]).count().await.unwrap()
    });
    assert!(others >= n / 2, "{others}");
    timed!(res, table, si, fw, "query any(k0, k1) count", 1, {
        q().any(User::TAGS, ["k0", "k1"]).count().await.unwrap()
    });
    timed!(
        res,
        table,
        si,
        fw,
        "query all(k0) order desc limit 10",
        10,
        {
            q().all(User::TAGS, ["k0"])
                .order_desc(User::SCORE)
                .limit(0, 10)
                .ids()
                .await
                .unwrap()
        }
    );

    // The celebrity's followers (the swept tenth, ids ending in 3, is gone).
    let followers: Vec<u64> = (1..n)
        .filter(|id| id % 10 != 3)
        .take((n / 10).min(1_000_000) as usize)
        .collect();
    let f = followers.len() as u64;
    let rel = store.relation(&FOLLOWS);
    timed!(res, table, si, fw, "relate (follow the celebrity)", f, {
        stream::iter(followers.iter().copied())
            .map(|id| {
                let rel = &rel;
                async move { rel.relate(&id, &STAR).await.unwrap() }
            })
            .buffer_unordered(64)
            .for_each(|_| async {})
            .await
    });
    let read = timed!(res, table, si, fw, "related_back (the followers)", f, {
        rel.related_back(&STAR).await.unwrap()
    });
    assert_eq!(read.len() as u64, f);

    // The post, with 8 clients reading users on their own connection.
    let readers = Store::new(
        fw._server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap(),
    );
    let (during, pushed, took) = {
        let load = Reads::start(&readers, n);
        let t = Instant::now();
        let pushed = timed!(res, table, si, fw, "push_related (fan-out)", f, {
            store
                .timeline(&FEED)
                .push_related(&1, &FOLLOWS, &STAR)
                .await
                .unwrap()
        });
        let took = t.elapsed();
        (load.stop().await, pushed, took)
    };
    assert_eq!(pushed as u64, f);
    let alone = {
        let load = Reads::start(&readers, n);
        tokio::time::sleep(took).await;
        load.stop().await
    };
    let (mut during, mut alone) = (during, alone);
    let (p99_during, p99_alone) = (percentile(&mut during, 0.99), percentile(&mut alone, 0.99));
    println!(
        "(8 clients' gets during the fan-out to {f}: p99 {p99_during:.0} µs; alone: {p99_alone:.0} µs; {:.2}x)",
        p99_during / p99_alone
    );
    res.put(si, "gets p99 µs during the fan-out", p99_during);
    res.put(si, "gets p99 µs alone", p99_alone);
    res.put(
        si,
        "gets p99 ratio (fan-out / alone)",
        p99_during / p99_alone,
    );

    // The same post on a timeline that pulls above 500 followers: one
    // write when the celebrity has more, and the readers around it.
    let (during, pulled_took) = {
        let load = Reads::start(&readers, n);
        let t = Instant::now();
        let reached = timed!(res, table, si, fw, "push_related (hybrid timeline)", f, {
            store
                .timeline(&HYBRID)
                .push_related(&1, &FOLLOWS, &STAR)
                .await
                .unwrap()
        });
        assert_eq!(reached as u64, f);
        let pulled_took = t.elapsed();
        tokio::time::sleep(took.saturating_sub(pulled_took)).await;
        (load.stop().await, pulled_took)
    };
    let mut during = during;
    let p99_hybrid = percentile(&mut during, 0.99);
    println!(
        "(8 clients' gets around the hybrid timeline's post ({:.1} ms): p99 {p99_hybrid:.0} µs; {:.2}x alone)",
        pulled_took.as_secs_f64() * 1e3,
        p99_hybrid / p99_alone
    );
    res.put(
        si,
        "gets p99 ratio (hybrid post / alone)",
        p99_hybrid / p99_alone,
    );
    // A follower's first page of each: the pushed list, or the merge.
    let reader = followers[followers.len() / 2];
    let (mut pushed_us, mut merged_us) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let t = Instant::now();
        let a = store.timeline(&FEED).page(&reader, 0, 20).await.unwrap();
        pushed_us.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let b = store.timeline(&HYBRID).page(&reader, 0, 20).await.unwrap();
        merged_us.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(a, b, "the same page");
    }
    let (pushed_p50, merged_p50) = (
        percentile(&mut pushed_us, 0.5),
        percentile(&mut merged_us, 0.5),
    );
    println!(
        "(a follower's first page: pushed {pushed_p50:.0} µs, hybrid with 1 pulled author {merged_p50:.0} µs p50)"
    );
    res.put(si, "timeline page p50 µs (pushed)", pushed_p50);
    res.put(
        si,
        "timeline page p50 µs (hybrid, 1 pulled author)",
        merged_p50,
    );

    timed!(res, table, si, fw, "delete (the celebrity)", f, {
        assert!(store.delete::<User>(&STAR).await.unwrap())
    });
}

/// 8 clients reading random users in a loop, each call's latency in µs.
struct Reads {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Vec<f64>>>,
}

impl Reads {
    fn start(store: &Store<Conn>, n: u64) -> Reads {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..8u64)
            .map(|t| {
                let (store, stop) = (store.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    let mut i = t << 40;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        let t0 = Instant::now();
                        store.get::<User>(&(mix(i) % n)).await.unwrap();
                        out.push(t0.elapsed().as_secs_f64() * 1e6);
                        // About a read per ms per client: load, not saturation.
                        tokio::time::sleep(Duration::from_micros(500)).await;
                    }
                    out
                })
            })
            .collect();
        Reads { stop, tasks }
    }

    async fn stop(self) -> Vec<f64> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for t in self.tasks {
            all.extend(t.await.unwrap());
        }
        all
    }
}
