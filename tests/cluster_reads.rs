//! Reads of a type of many index shards on a cluster give the answers one
//! server gives, by plain commands per shard while nothing of the type can
//! have expired, and once it can, by the query and rank scripts sent as one
//! call per master, not one per shard; a slot map gone stale (a
//! resharding) costs a retry, never a wrong answer.

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

/// The players of country DE.
async fn count_de<C: redis::aio::ConnectionLike + Clone + Send + Sync>(store: &Store<C>) -> u64 {
    store
        .query::<Player>()
        .eq(Player::COUNTRY, "DE")
        .count()
        .await
        .unwrap()
}

/// Lets `store` learn the slot map (a count of `DE`: 100 players), moves
/// 3,000 of the first master's slots (and their keys) to the second, and
/// counts again (still 100): the calls of that count.
async fn count_across_a_resharding(
    cluster: &RedisCluster,
    store: &Counted<redis::cluster_async::ClusterConnection>,
    trips: &RoundTrips,
) -> u64 {
    assert_eq!(count_de(store).await, 100);
    let ports: Vec<u16> = cluster.nodes().iter().map(|n| n.port()).collect();
    cluster.reshard(ports[0], ports[1], 3000);
    trips.take();
    assert_eq!(count_de(store).await, 100);
    trips.take()
}

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
    (
        Store::builder()
            .key_layout(KeyLayout::Cluster)
            .layout_check(false)
            .build(conn),
        trips,
    )
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

/// `top 10`, `count`, `rank` of several members, an ordered page and
/// `get_many`, on the cluster and on one server, compared.
async fn same_answers<C, D>(store: &Store<C>, one: &Store<D>)
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync,
    D: redis::aio::ConnectionLike + Clone + Send + Sync,
{
    assert_eq!(
        store.board(Player::SCORE).top(10).await.unwrap(),
        one.board(Player::SCORE).top(10).await.unwrap()
    );
    for country in ["DE", "FR", "JP", "XX"] {
        assert_eq!(
            store
                .query::<Player>()
                .eq(Player::COUNTRY, country)
                .count()
                .await
                .unwrap(),
            one.query::<Player>()
                .eq(Player::COUNTRY, country)
                .count()
                .await
                .unwrap(),
            "count of {country}"
        );
    }
    for id in [0u64, 7, 101, 333, 599, 10_000] {
        assert_eq!(
            store.board(Player::SCORE).rank(&id).await.unwrap(),
            one.board(Player::SCORE).rank(&id).await.unwrap(),
            "rank of {id}"
        );
    }
    assert_eq!(
        store
            .query::<Player>()
            .eq(Player::COUNTRY, "FR")
            .order_desc(Player::SCORE)
            .limit(3, 10)
            .fetch()
            .await
            .unwrap(),
        one.query::<Player>()
            .eq(Player::COUNTRY, "FR")
            .order_desc(Player::SCORE)
            .limit(3, 10)
            .fetch()
            .await
            .unwrap()
    );
    let ids: Vec<u64> = (0..50).collect();
    assert_eq!(
        store.get_many::<Player>(&ids).await.unwrap(),
        one.get_many::<Player>(&ids).await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_reads_answer_as_one_server_and_scripts_go_once_to_each_master() {
    let cluster = RedisCluster::start(3);
    let (store, trips) = counted_cluster(&cluster).await;
    let all = players(600);
    store.save_all(&all).await.unwrap();
    let (_server, one) = reference(&all).await;

    // Nothing can expire: plain commands, the shards a master serves in
    // one pipeline to it.
    same_answers(&store, &one).await;
    trips.take();
    count_de(&store).await;
    assert_eq!(
        trips.take(),
        3,
        "a count while nothing can expire: SCARD of every shard, one pipeline per master"
    );
    store.board(Player::SCORE).top(10).await.unwrap();
    let top_calls = trips.take();
    // A page of each shard, one pipeline per master; then the 10 records,
    // one pipeline per master serving one of them.
    assert!(top_calls <= 3 + 3, "top 10 sent {top_calls} calls");
    store.board(Player::SCORE).rank(&7).await.unwrap();
    let rank_calls = trips.take();
    // The member's score in its own shard, then the counts ahead of it,
    // one pipeline per master.
    assert_eq!(rank_calls, 1 + 3, "rank sent {rank_calls} calls");
    let ids: Vec<u64> = (0..50).collect();
    store.get_many::<Player>(&ids).await.unwrap();
    assert_eq!(trips.take(), 3, "get_many of 50: one pipeline per master");

    // One player gets a TTL (far off): the type's reads now take the
    // scripts, which skip expired entities, one call per master.
    let far = Player {
        score: 50,
        ..all[5].clone()
    };
    store
        .expiry::<Player>()
        .save_with_ttl(&far, Duration::from_secs(600))
        .await
        .unwrap();
    one.expiry::<Player>()
        .save_with_ttl(&far, Duration::from_secs(600))
        .await
        .unwrap();
    same_answers(&store, &one).await;
    trips.take();
    count_de(&store).await;
    let count_calls = trips.take();
    assert!(count_calls <= 3, "count sent {count_calls} calls");
    store.board(Player::SCORE).top(10).await.unwrap();
    let top_calls = trips.take();
    // One query call per master, then the records, one pipeline per master.
    assert!(top_calls <= 3 + 3, "top 10 sent {top_calls} calls");
    store.board(Player::SCORE).rank(&7).await.unwrap();
    let rank_calls = trips.take();
    // The member's own shard (the script and its score), then one call per master.
    assert!(rank_calls <= 1 + 3, "rank sent {rank_calls} calls");
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
    // A far TTL on one player: reads take the scripts, grouped per master.
    store
        .expiry::<Player>()
        .save_with_ttl(&all[1], Duration::from_secs(600))
        .await
        .unwrap();
    let (_server, one) = reference(&all).await;
    // The first master refuses the keys it gave away: the count is asked
    // again shard by shard, and right.
    let refused = count_across_a_resharding(&cluster, &store, &trips).await;
    assert!(
        refused > 3,
        "the stale map's calls, then one per shard: {refused}"
    );
    for _ in 0..2 {
        assert_eq!(
            store.board(Player::SCORE).top(10).await.unwrap(),
            one.board(Player::SCORE).top(10).await.unwrap()
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
    // The map read again, script reads are grouped again.
    trips.take();
    count_de(&store).await;
    assert!(trips.take() <= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_reads_grouped_by_master_survive_a_stale_slot_map() {
    let cluster = RedisCluster::start(3);
    let (store, trips) = counted_cluster(&cluster).await;
    let all = players(300);
    store.save_all(&all).await.unwrap();
    let (_server, one) = reference(&all).await;
    // Nothing expires: the count is one pipeline of SCARDs per master. The
    // first master no longer serves some of the slots its pipeline names:
    // the grouped read fails, the shards are asked one by one.
    let refused = count_across_a_resharding(&cluster, &store, &trips).await;
    assert!(
        refused > 3,
        "the stale map's calls, then one per shard: {refused}"
    );
    let ids: Vec<u64> = (0..300).collect();
    assert_eq!(
        store.get_many::<Player>(&ids).await.unwrap(),
        one.get_many::<Player>(&ids).await.unwrap()
    );
    for id in [3u64, 42, 299] {
        assert_eq!(
            store.board(Player::SCORE).rank(&id).await.unwrap(),
            one.board(Player::SCORE).rank(&id).await.unwrap()
        );
    }
    // The map read again: one pipeline per master again.
    trips.take();
    assert_eq!(count_de(&store).await, 100);
    assert_eq!(trips.take(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_any_connection_to_a_cluster_reads_one_pipeline_per_master() {
    let cluster = RedisCluster::start(3);
    let conn = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let conn = CountingConnection::new(redis_entity::AnyConnection::Cluster(conn));
    let trips = conn.counter();
    let store = Store::builder()
        .key_layout(KeyLayout::Cluster)
        .layout_check(false)
        .build(conn);
    let all = players(300);
    store.save_all(&all).await.unwrap();
    // The first grouped read also reads the slot map (`CLUSTER SLOTS`).
    trips.take();
    assert_eq!(count_de(&store).await, 100);
    assert_eq!(trips.take(), 1 + 3);
    assert_eq!(count_de(&store).await, 100);
    assert_eq!(
        trips.take(),
        3,
        "SCARD of 16 shards, one pipeline per master"
    );
    let ids: Vec<u64> = (0..50).collect();
    let got = store.get_many::<Player>(&ids).await.unwrap();
    assert_eq!(got.len(), 50);
    assert!(got.iter().zip(&all).all(|(g, p)| g.as_ref() == Some(p)));
    assert_eq!(trips.take(), 3, "get_many of 50: one pipeline per master");
}
