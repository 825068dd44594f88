//! Reads from a replica: with `StoreBuilder::read_replica`, gets, queries, unique
//! lookups, leaderboards and ranks are answered by the replica (queries and
//! ranks as read-only scripts, which a replica runs), writes go to the
//! primary.
//!
//! One server and its replica (`StoreBuilder::read_replica`); a cluster's replicas are
//! its own (tests/cluster_topology.rs fails a master over to one).

use redis_entity::{RedisEntity, Store};
use std::time::{Duration, Instant};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player")]
struct Player {
    #[pk]
    id: u64,
    #[index(unique)]
    name: String,
    #[index]
    team: String,
    #[index(sorted)]
    score: f64,
}

fn player(id: u64, team: &str, score: f64) -> Player {
    Player {
        id,
        name: format!("p{id}"),
        team: team.into(),
        score,
    }
}

#[tokio::test]
async fn reads_go_to_the_replica_and_writes_to_the_primary() {
    let primary = RedisServer::start();
    let port = primary.port().to_string();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
    // The replica is in sync once its link is up.
    let t = Instant::now();
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut replica.conn())
            .unwrap();
        if info.contains("master_link_status:up") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the replica never synced"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let reads = Store::connect(&replica.url()).await.unwrap().connection();
    let store = Store::builder()
        .read_replica(reads)
        .connect(&primary.url())
        .await
        .unwrap();

    store
        .save_all(&[
            player(1, "red", 10.0),
            player(2, "red", 30.0),
            player(3, "blue", 20.0),
        ])
        .await
        .unwrap();
    // Wait until the replica has the writes.
    let _: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query(&mut primary.conn())
        .unwrap();

    let before = (
        primary.calls("hmget"),
        primary.calls("evalsha_ro") + primary.calls("eval_ro"),
        primary.calls("scard") + primary.calls("sinter"),
    );
    assert_eq!(
        store.get::<Player>(&1).await.unwrap(),
        Some(player(1, "red", 10.0))
    );
    assert_eq!(store.find(Player::TEAM, "red").await.unwrap().len(), 2);
    assert_eq!(
        store
            .query::<Player>()
            .eq(Player::TEAM, "red")
            .count()
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.find_unique(Player::NAME, "p3").await.unwrap(),
        Some(player(3, "blue", 20.0))
    );
    let top: Vec<u64> = store
        .board(Player::SCORE)
        .top(2)
        .await
        .unwrap()
        .into_iter()
        .map(|(p, _)| p.id)
        .collect();
    assert_eq!(top, [2, 3]);
    assert_eq!(store.board(Player::SCORE).rank(1).await.unwrap(), Some(2));
    // The primary answered none of it; the replica all of it.
    let after = (
        primary.calls("hmget"),
        primary.calls("evalsha_ro") + primary.calls("eval_ro"),
        primary.calls("scard") + primary.calls("sinter"),
    );
    assert_eq!(after, before, "no read reached the primary");
    assert!(replica.calls("hmget") >= 4);
    // The count and the find as native set commands (nothing can have
    // expired), the rank as the read-only rank script.
    assert!(replica.calls("scard") >= 1);
    assert!(replica.calls("sinter") >= 1);
    assert!(replica.calls("eval_ro") + replica.calls("evalsha_ro") >= 1);

    // Writes still go to the primary (a replica would refuse them).
    store
        .update::<Player>(&1)
        .incr(Player::SCORE, 100.0)
        .exec()
        .await
        .unwrap();
    let _: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query(&mut primary.conn())
        .unwrap();
    assert_eq!(store.board(Player::SCORE).rank(1).await.unwrap(), Some(0));
}
