//! A read that meets many expired entities (ghosts) ahead of its page does
//! work in proportion to them, not to their square: `top(5)` over 60,000
//! ghosts walks the sorted index by rank, a growing chunk at a time, and
//! cleans at most a budget of them (the rest is `sweep`'s). The figures are
//! printed, not asserted (timing belongs to benchmarks); what is asserted
//! is the answer and the bounded cleanup.
//!
//! One server: it counts the server's own calls (`INFO commandstats`).

use redis_entity::{RedisEntity, Store};
use std::time::{Duration, Instant};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "runner")]
struct Runner {
    #[pk]
    id: u64,
    #[index(sorted)]
    points: f64,
}

#[tokio::test]
async fn top_over_sixty_thousand_ghosts_is_right_and_cleans_a_budget() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    // 60,000 runners with the best scores and a short TTL, 10 without.
    let ghosts: Vec<Runner> = (1..=60_000)
        .map(|id| Runner {
            id,
            points: 1_000_000.0 + id as f64,
        })
        .collect();
    for r in &ghosts {
        store
            .expiry()
            .save_with_ttl(r, Duration::from_millis(1500))
            .await
            .unwrap();
    }
    let live: Vec<Runner> = (100_001..=100_010)
        .map(|id| Runner {
            id,
            points: id as f64,
        })
        .collect();
    store.save_all(&live).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1600)).await;

    let t = Instant::now();
    let top = store.board(Runner::POINTS).top(5).await.unwrap();
    let first = t.elapsed();
    let ids: Vec<u64> = top.iter().map(|(r, _)| r.id).collect();
    assert_eq!(ids, [100_010, 100_009, 100_008, 100_007, 100_006]);
    let t = Instant::now();
    let again = store.board(Runner::POINTS).top(5).await.unwrap();
    let second = t.elapsed();
    assert_eq!(again, top);
    println!("top(5) over 60,000 ghosts: {first:?}, then {second:?}");
    // Pages of a range, both ways, with exclusive and inclusive bounds.
    let page = |desc: bool, lo: f64, hi: f64| {
        let q = store
            .query::<Runner>()
            .range(Runner::POINTS, lo..hi)
            .limit(0, 3);
        let q = if desc {
            q.order_desc(Runner::POINTS)
        } else {
            q.order_asc(Runner::POINTS)
        };
        async move { q.ids().await.unwrap() }
    };
    assert_eq!(
        page(true, 100_003.0, 100_008.0).await,
        [100_007, 100_006, 100_005]
    );
    assert_eq!(
        page(false, 100_003.0, 100_008.0).await,
        [100_003, 100_004, 100_005]
    );
    assert_eq!(page(true, 100_009.0, 2_000_000.0).await, [100_010, 100_009]);
    let left: u64 = redis::cmd("ZCARD")
        .arg("runner:@points")
        .query(&mut server.conn())
        .unwrap();
    // Each read cleaned at most its budget (100) of the ghosts it met.
    assert!(
        (60_010 - 500..60_010).contains(&left),
        "{left} entries left after five reads"
    );
    let swept = store.maintenance::<Runner>().sweep(100_000).await.unwrap();
    assert_eq!(swept as u64, left - 10, "sweep takes the rest");
}
