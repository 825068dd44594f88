//! Topology changes under load on a real cluster: slots resharded between
//! masters (MOVED and ASK while keys migrate) and a master failed over to
//! its replica, with 8 writers going on. Afterwards `verify` finds every
//! index entry in step with its entity.

use redis_entity::{RedisEntity, Store};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::RedisCluster;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "runner", shards = 16)]
struct Runner {
    #[pk]
    id: u64,
    #[index]
    team: String,
    #[index(sorted)]
    points: f64,
}

fn runner(id: u64, round: u64) -> Runner {
    Runner {
        id,
        team: format!("t{}", (id + round) % 7),
        points: ((id * 31 + round) % 100) as f64,
    }
}

/// The two tests run one after the other: each starts a cluster and 8
/// writers, which on a small machine is load enough for one.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
}

/// 8 writers saving, updating and deleting random runners until `until`.
fn writers(
    store: &Arc<Store<redis::cluster_async::ClusterConnection>>,
    until: Instant,
    tally: &Arc<Tally>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..8u64)
        .map(|w| {
            let (store, tally) = (store.clone(), tally.clone());
            tokio::spawn(async move {
                let mut round = w;
                while Instant::now() < until {
                    round += 8;
                    let id = (round * 7919) % 300;
                    let outcome = match round % 10 {
                        0 => store.delete::<Runner>(id).await.map(drop),
                        1..=2 => store
                            .update::<Runner>(id)
                            .set(Runner::TEAM, format!("t{}", round % 7))
                            .exec()
                            .await
                            .or_else(|e| match e {
                                redis_entity::Error::NotFound { .. } => Ok(()),
                                e => Err(e),
                            }),
                        _ => store.save(&runner(id, round)).await.map(drop),
                    };
                    match outcome {
                        Ok(()) => tally.ok.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("writer {w}: {e}");
                            tally.failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect()
}

/// A store on `cluster` with 300 runners, and an empty tally.
async fn seeded(
    cluster: &RedisCluster,
) -> (
    Arc<Store<redis::cluster_async::ClusterConnection>>,
    Arc<Tally>,
) {
    let store = Arc::new(
        Store::builder()
            .connect_cluster(&cluster.urls())
            .await
            .unwrap(),
    );
    let seed: Vec<Runner> = (0..300).map(|id| runner(id, 0)).collect();
    store.save_all(&seed).await.unwrap();
    let tally = Arc::new(Tally {
        ok: AtomicU64::new(0),
        failed: AtomicU64::new(0),
    });
    (store, tally)
}

async fn check(store: &Store<redis::cluster_async::ClusterConnection>, tally: &Tally) {
    let (ok, failed) = (
        tally.ok.load(Ordering::Relaxed),
        tally.failed.load(Ordering::Relaxed),
    );
    assert!(ok > 500, "{ok} writes went through, {failed} failed");
    assert!(
        failed * 20 <= ok,
        "{failed} of {} writes failed",
        ok + failed
    );
    let report = store.maintenance::<Runner>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(report.entities > 0);
    // Queries still give one server's answers.
    let mut total = 0;
    for t in 0..7 {
        total += store
            .query::<Runner>()
            .eq(Runner::TEAM, format!("t{t}"))
            .count()
            .await
            .unwrap();
    }
    assert_eq!(total as usize, report.entities);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_on_while_slots_move_between_masters() {
    let _serial = SERIAL.lock().await;
    let cluster = Arc::new(RedisCluster::start(3));
    let (store, tally) = seeded(&cluster).await;
    let until = Instant::now() + Duration::from_secs(10);
    let tasks = writers(&store, until, &tally);
    // A third of the slots move from one master to another while they write.
    let masters: Vec<u16> = cluster
        .roles()
        .into_iter()
        .filter(|r| r.2)
        .map(|r| r.1)
        .collect();
    let c = cluster.clone();
    let moved = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_secs(1));
        c.reshard(masters[0], masters[1], 5461);
    });
    moved.await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    check(&store, &tally).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_on_while_a_master_fails_over_to_its_replica() {
    let _serial = SERIAL.lock().await;
    let cluster = RedisCluster::start_with_replicas(3, 1);
    let (store, tally) = seeded(&cluster).await;
    let until = Instant::now() + Duration::from_secs(8);
    let tasks = writers(&store, until, &tally);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let replica = cluster
        .roles()
        .into_iter()
        .find(|r| !r.2)
        .expect("a replica")
        .1;
    let node = cluster
        .nodes()
        .iter()
        .find(|n| n.port() == replica)
        .unwrap();
    // The replica takes over once it has caught up with its master (which
    // pauses its clients meanwhile); its own view says so first. A manual
    // failover gives up after 5 s (a loaded machine can take longer to
    // gather the votes): asked again then.
    let promoted = || {
        redis::cmd("ROLE")
            .query::<redis::Value>(&mut node.conn())
            .map(|v| format!("{v:?}").contains("master"))
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    'failover: loop {
        let _: () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .query(&mut node.conn())
            .unwrap();
        let attempt = Instant::now() + Duration::from_secs(6);
        while Instant::now() < attempt {
            if promoted() {
                break 'failover;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(Instant::now() < deadline, "the replica did not take over");
    }
    for t in tasks {
        t.await.unwrap();
    }
    check(&store, &tally).await;
}
