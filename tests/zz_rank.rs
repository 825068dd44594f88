use redis_entity::{KeyLayout, RedisEntity, Store};
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
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "p4", shards = 4)]
struct P4 {
    #[pk]
    id: u64,
    name: String,
    #[index]
    country: String,
    #[index(sorted)]
    score: i64,
}
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "p3", shards = 3)]
struct P3 {
    #[pk]
    id: u64,
    name: String,
    #[index]
    country: String,
    #[index(sorted)]
    score: i64,
}
macro_rules! run {
    ($label:expr, $store:expr, $t:ident) => {{
        let store = $store;
        let all: Vec<$t> = (0..10000)
            .map(|id| $t {
                id,
                name: format!("p{id}"),
                country: ["DE", "FR"][(id % 2) as usize].into(),
                score: (id * 7 % 1000) as i64,
            })
            .collect();
        for c in all.chunks(500) {
            store.save_all(c).await.unwrap();
        }
        let mut out = vec![];
        for _round in 0..2 {
            let t = std::time::Instant::now();
            for i in 0..2000u64 {
                store.board($t::SCORE).rank(&i).await.unwrap();
            }
            let rank = t.elapsed() / 2000;
            let t = std::time::Instant::now();
            for _ in 0..1000u64 {
                store.board($t::SCORE).top(10).await.unwrap();
            }
            let top = t.elapsed() / 1000;
            let t = std::time::Instant::now();
            for _ in 0..1000u64 {
                store
                    .query::<$t>()
                    .eq($t::COUNTRY, "DE")
                    .count()
                    .await
                    .unwrap();
            }
            let count = t.elapsed() / 1000;
            out.push((rank, top, count));
        }
        println!(
            "{:<12} rank {:?} top {:?} count {:?}",
            $label, out[1].0, out[1].1, out[1].2
        );
    }};
}
#[tokio::test(flavor = "current_thread")]
async fn zz() {
    let server = RedisServer::start();
    let one = Store::new(
        server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap(),
    );
    run!("one", one.clone(), Player);
    let cluster = RedisCluster::start(3);
    let conn = redis::cluster::ClusterClient::new(cluster.urls())
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let store = Store::new(conn).with_key_layout(KeyLayout::Cluster);
    run!("cluster16", store.clone(), Player);
    run!("cluster4", store.clone(), P4);
    run!("cluster3", store.clone(), P3);
    run!("one again", one.clone(), Player);
}
