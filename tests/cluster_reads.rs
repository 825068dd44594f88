//! Reads of a type of many index shards on a cluster: one call per master,
//! not one per shard (`top`, `rank`, `count`, ordered pages, the records
//! they fetch), with the same answers as one server gives; and a slot map
//! gone stale (a resharding) costs a retry, never a wrong answer.

use redis_entity::{CountingConnection, KeyLayout, RedisEntity, RoundTrips, Store};
use std::time::Duration;
use support::{RedisCluster, RedisServer};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player")]
struct Player {
    #[pk]
    id: u64,
    name: String,
    #[index]
    country: String,
    #[index(sorted)]
    score: i64,
}

type Counted<C> = Store<CountingConnection<C>>;

async fn counted_cluster(
    cluster: &RedisCluster,
) -> (Counted<redis::cluster_async::ClusterConnection>, RoundTrips) {
    let conn = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let conn = CountingConnection::new(conn);
    let trips = conn.counter();
    (Store::new(conn).with_key_layout(KeyLayout::Cluster), trips)
}

fn players(n: u64) -> Vec<Player> {
    (0..n)
        .map(|id| Player {
            id,
            name: format!("p{id}"),
            country: ["DE", "FR", "JP"][(id % 3) as usize].into(),
            // Ties on purpose: ranks must order them as one server does.
            score: ((id * 37) % 101) as i64,
        })
        .collect()
}

/// What one server answers: the reference.
async fn reference(
    all: &[Player],
) -> (
    RedisServer,
    Store<CountingConnection<redis::aio::MultiplexedConnection>>,
) {
    let server = RedisServer::start();
    let (store, _) = support::counted_store(&server).await;
    store.save_all(all).await.unwrap();
    (server, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_reads_send_one_call_per_master_and_answer_as_one_server() {
    let cluster = RedisCluster::start(3);
    let (store, trips) = counted_cluster(&cluster).await;
    let all = players(600);
    store.save_all(&all).await.unwrap();
    let (_server, one) = reference(&all).await;

    // The first grouped read learns the slot map (one `CLUSTER SLOTS`).
    store.board(Player::SCORE).top(1).await.unwrap();
    trips.take();

    let top = store.board(Player::SCORE).top(10).await.unwrap();
    let top_calls = trips.take();
    assert_eq!(top, one.board(Player::SCORE).top(10).await.unwrap());
    // Three masters: one query call each, then one records read each.
    assert!(top_calls <= 6, "top 10 sent {top_calls} calls");

    let count = store
        .query::<Player>()
        .eq(Player::COUNTRY, "DE")
        .count()
        .await
        .unwrap();
    assert_eq!(count, 200);
    let count_calls = trips.take();
    assert!(count_calls <= 3, "count sent {count_calls} calls");

    for id in [0u64, 7, 101, 333, 599] {
        let rank = store.board(Player::SCORE).rank(&id).await.unwrap();
        assert_eq!(
            rank,
            one.board(Player::SCORE).rank(&id).await.unwrap(),
            "rank of {id}"
        );
    }
    trips.take();
    store.board(Player::SCORE).rank(&7).await.unwrap();
    let rank_calls = trips.take();
    // The member's own shard (its rank and score), then one call per master.
    assert!(rank_calls <= 5, "rank sent {rank_calls} calls");

    let page: Vec<Player> = store
        .query::<Player>()
        .eq(Player::COUNTRY, "FR")
        .order_desc(Player::SCORE)
        .limit(0, 10)
        .fetch()
        .await
        .unwrap();
    let expected: Vec<Player> = one
        .query::<Player>()
        .eq(Player::COUNTRY, "FR")
        .order_desc(Player::SCORE)
        .limit(0, 10)
        .fetch()
        .await
        .unwrap();
    assert_eq!(page, expected);
    let page_calls = trips.take();
    assert!(page_calls <= 6, "an ordered page sent {page_calls} calls");

    let ids: Vec<u64> = (0..50).collect();
    let many = store.get_many::<Player>(&ids).await.unwrap();
    assert_eq!(many, one.get_many::<Player>(&ids).await.unwrap());
    let many_calls = trips.take();
    assert!(many_calls <= 3, "get_many of 50 sent {many_calls} calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_entities_in_many_shards_are_skipped_by_grouped_reads() {
    let cluster = RedisCluster::start(3);
    let (store, _) = counted_cluster(&cluster).await;
    let all = players(120);
    // The 40 best players expire; the others stay.
    let mut by_score = all.clone();
    by_score.sort_by_key(|p| std::cmp::Reverse(p.score));
    for p in &by_score[..40] {
        store
            .expiry::<Player>()
            .save_with_ttl(p, Duration::from_millis(300))
            .await
            .unwrap();
    }
    for p in &by_score[40..] {
        store.save(p).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_server, one) = reference(&by_score[40..]).await;
    let top = store.board(Player::SCORE).top(5).await.unwrap();
    assert_eq!(top, one.board(Player::SCORE).top(5).await.unwrap());
    let live = by_score[45].id;
    assert_eq!(
        store.board(Player::SCORE).rank(&live).await.unwrap(),
        one.board(Player::SCORE).rank(&live).await.unwrap()
    );
    assert_eq!(
        store
            .query::<Player>()
            .eq(Player::COUNTRY, "JP")
            .count()
            .await
            .unwrap(),
        one.query::<Player>()
            .eq(Player::COUNTRY, "JP")
            .count()
            .await
            .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_slot_map_after_resharding_still_gives_the_right_answers() {
    let cluster = RedisCluster::start(3);
    let (store, trips) = counted_cluster(&cluster).await;
    let all = players(300);
    store.save_all(&all).await.unwrap();
    let (_server, one) = reference(&all).await;
    // The store learns the map, then a third of the first master's slots
    // (and their keys) move to the second.
    store.board(Player::SCORE).top(3).await.unwrap();
    let ports: Vec<u16> = cluster.nodes().iter().map(|n| n.port()).collect();
    cluster.reshard(ports[0], ports[1], 3000);
    trips.take();
    for _ in 0..2 {
        assert_eq!(
            store.board(Player::SCORE).top(10).await.unwrap(),
            one.board(Player::SCORE).top(10).await.unwrap()
        );
        assert_eq!(
            store
                .query::<Player>()
                .eq(Player::COUNTRY, "DE")
                .count()
                .await
                .unwrap(),
            100
        );
        assert_eq!(
            store.board(Player::SCORE).rank(&42).await.unwrap(),
            one.board(Player::SCORE).rank(&42).await.unwrap()
        );
        let ids: Vec<u64> = (0..300).collect();
        assert_eq!(
            store.get_many::<Player>(&ids).await.unwrap(),
            one.get_many::<Player>(&ids).await.unwrap()
        );
    }
    // Once the map is read again, reads are grouped again.
    trips.take();
    store
        .query::<Player>()
        .eq(Player::COUNTRY, "DE")
        .count()
        .await
        .unwrap();
    assert!(trips.take() <= 3);
}
