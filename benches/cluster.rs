//! The workload on a 3-master Redis Cluster beside one server, in the same
//! run: the same structs and calls through `Store::builder().connect_cluster` and
//! `Store::connect`. Prints ops/s per step for both, the ratio, and the
//! calls per op a cluster needs (each slot group of a batch is one call;
//! the groups of one op go out together, so an op costs one wave of
//! calls); the scatter-gather reads (`count` of an equality condition,
//! `top 10` and `rank` of a sorted index) beside the same reads written by
//! hand, one call per shard and one pipeline per master; relations whose
//! sides live in two slots and unique values with owner keys (a type of 16
//! shards), which take more calls there; then how the scatter-gather reads
//! cost with the number of index shards, each against the same type on one
//! server.
//!
//! Run: `cargo bench --bench cluster` (add `-- --quick` for a smaller run).
//! On 2 shared cores the four servers compete with the client: read the
//! ratios, not the absolute figures.

#[path = "shared/results.rs"]
mod results;

use redis_entity::{CountingConnection, RedisEntity, RoundTrips, Store};
use std::time::Instant;
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
    score: f64,
}

/// A unique index spread over 16 shards on the cluster (owner keys).
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "acct", shards = 16)]
struct Account {
    #[pk]
    id: u64,
    #[index(unique)]
    email: String,
    visits: u64,
}

/// Follows between players of 16 shards: one call per side on the cluster.
const FOLLOWS: redis_entity::relation::Relation<Player, Player> =
    redis_entity::relation::Relation::many_to_many("following", "followers");

/// The same type with other shard counts, for the query-cost table.
macro_rules! sharded {
    ($name:ident, $prefix:literal, $n:literal) => {
        #[derive(RedisEntity, Debug, Clone, PartialEq)]
        #[redis(prefix = $prefix, shards = $n)]
        struct $name {
            #[pk]
            id: u64,
            #[index]
            country: String,
            #[index(sorted)]
            score: f64,
        }
    };
}
sharded!(P1, "p1", 1);
sharded!(P4, "p4", 4);
sharded!(P16, "p16", 16);
sharded!(P64, "p64", 64);

const COUNTRIES: [&str; 10] = ["DE", "CN", "FR", "US", "BR", "IN", "JP", "IT", "ES", "MX"];

fn player(id: u64) -> Player {
    Player {
        id,
        name: format!("player {id}"),
        country: COUNTRIES[(id % 10) as usize].into(),
        score: ((id * 7919) % 1000) as f64,
    }
}

type Counted<C> = Store<CountingConnection<C>>;

/// Hand-written reads of the `Player` keys with redis-rs, for the floor:
/// the key of each index shard's sorted set and country sets (spelled
/// from the entity keys the library gives: the text up to a shard's tag),
/// one shard on one server.
struct Hand<C> {
    conn: C,
    /// `{player:<s>}:` per shard on the cluster; `""` on one server.
    shards: Vec<String>,
    /// The entity key of each player id.
    keys: Vec<String>,
    cluster: bool,
}

impl<C: redis::aio::ConnectionLike + Clone + Send + Sync> Hand<C> {
    fn of(store: &Store<C>, n: u64) -> Self {
        let keys: Vec<String> = (0..n)
            .map(|id| store.keys().of::<Player>(id).base)
            .collect();
        let mut shards: Vec<String> = keys
            .iter()
            .map(|k| {
                k.find("}:")
                    .map_or(String::new(), |at| k[..at + 2].to_owned())
            })
            .collect();
        shards.sort();
        shards.dedup();
        Hand {
            conn: store.connection(),
            shards,
            keys,
            cluster: store.keys().layout() == redis_entity::KeyLayout::Cluster,
        }
    }

    fn shard_of(&self, id: u64) -> &str {
        let k = &self.keys[id as usize];
        k.find("}:").map_or("", |at| &k[..at + 2])
    }

    /// `SCARD` of every shard's set of `country`, summed.
    async fn count(&self, country: &str) -> u64 {
        let counts = futures_util::future::join_all(self.shards.iter().map(|s| {
            let mut c = self.conn.clone();
            let key = format!("{s}player:@country:{country}");
            async move {
                redis::cmd("SCARD")
                    .arg(key)
                    .query_async::<u64>(&mut c)
                    .await
                    .unwrap()
            }
        }))
        .await;
        counts.into_iter().sum()
    }

    /// Every shard's first `n` by score, merged, then their records.
    async fn top(&self, n: usize) -> usize {
        let pages = futures_util::future::join_all(self.shards.iter().map(|s| {
            let mut c = self.conn.clone();
            let key = format!("{s}player:@score");
            async move {
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(0)
                    .arg(n - 1)
                    .arg("REV")
                    .arg("WITHSCORES")
                    .query_async::<Vec<(String, f64)>>(&mut c)
                    .await
                    .unwrap()
            }
        }))
        .await;
        let mut all: Vec<(String, f64)> = pages.into_iter().flatten().collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        all.truncate(n);
        let keys: Vec<&str> = all
            .iter()
            .map(|(m, _)| self.keys[m.parse::<usize>().unwrap()].as_str())
            .collect();
        let records: Vec<redis::Value> = if self.cluster {
            futures_util::future::join_all(keys.iter().map(|k| {
                let mut c = self.conn.clone();
                async move {
                    redis::cmd("HGETALL")
                        .arg(*k)
                        .query_async(&mut c)
                        .await
                        .unwrap()
                }
            }))
            .await
        } else {
            let mut pipe = redis::pipe();
            for k in &keys {
                pipe.cmd("HGETALL").arg(*k);
            }
            pipe.query_async(&mut self.conn.clone()).await.unwrap()
        };
        records.len()
    }

    /// One server: `ZREVRANK`. A cluster: the member's score in its shard,
    /// then the `ZCOUNT` above it in every shard.
    async fn rank(&self, id: u64) -> u64 {
        let own = format!("{}player:@score", self.shard_of(id));
        let mut c = self.conn.clone();
        if !self.cluster {
            return redis::cmd("ZREVRANK")
                .arg(own)
                .arg(id)
                .query_async::<u64>(&mut c)
                .await
                .unwrap();
        }
        let score: f64 = redis::cmd("ZSCORE")
            .arg(own)
            .arg(id)
            .query_async(&mut c)
            .await
            .unwrap();
        let counts = futures_util::future::join_all(self.shards.iter().map(|s| {
            let mut c = self.conn.clone();
            let key = format!("{s}player:@score");
            async move {
                redis::cmd("ZCOUNT")
                    .arg(key)
                    .arg(format!("({score}"))
                    .arg("+inf")
                    .query_async::<u64>(&mut c)
                    .await
                    .unwrap()
            }
        }))
        .await;
        counts.into_iter().sum()
    }
}

/// A count of calls sent, taken (and reset) per measurement.
trait Calls {
    fn take_calls(&self) -> u64;
}

impl Calls for RoundTrips {
    fn take_calls(&self) -> u64 {
        self.take()
    }
}

impl<T: Calls> Calls for &T {
    fn take_calls(&self) -> u64 {
        (**self).take_calls()
    }
}

impl Calls for std::sync::atomic::AtomicU64 {
    fn take_calls(&self) -> u64 {
        self.swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

/// The same hand-written reads, each master sent one pipeline holding the
/// commands of every slot it serves (`route_pipeline` to one of its
/// slots: the cluster client refuses a pipeline across slots otherwise):
/// the floor for the library's reads grouped by master.
struct ByMaster {
    conn: redis::cluster_async::ClusterConnection,
    /// Per shard prefix (`{player:<s>}:`, the hash tag of every key of
    /// the shard): its slot and the master serving it.
    shards: std::collections::HashMap<String, (u16, usize)>,
    hand: Hand<CountingConnection<redis::cluster_async::ClusterConnection>>,
    /// Pipelines sent.
    calls: std::sync::atomic::AtomicU64,
}

impl ByMaster {
    async fn of(
        hand: Hand<CountingConnection<redis::cluster_async::ClusterConnection>>,
        cluster: &RedisCluster,
    ) -> Self {
        let mut conn = redis::cluster::ClusterClient::new(cluster.urls())
            .unwrap()
            .get_async_connection()
            .await
            .unwrap();
        let ranges: Vec<(u16, u16, redis::Value)> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut shards = std::collections::HashMap::new();
        for s in &hand.shards {
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(s)
                .query_async(&mut conn)
                .await
                .unwrap();
            let master = ranges
                .iter()
                .position(|&(lo, hi, _)| (lo..=hi).contains(&slot))
                .unwrap();
            shards.insert(s.clone(), (slot, master));
        }
        ByMaster {
            conn,
            shards,
            hand,
            calls: Default::default(),
        }
    }

    /// `cmds` (each with the shard prefix of its key) sent as one pipeline
    /// per master, together; the replies in order.
    async fn send(&self, cmds: Vec<(&str, redis::Cmd)>) -> Vec<redis::Value> {
        use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};
        let mut groups: std::collections::BTreeMap<usize, (u16, Vec<usize>)> = Default::default();
        for (i, (shard, _)) in cmds.iter().enumerate() {
            let (slot, master) = self.shards[*shard];
            groups.entry(master).or_insert((slot, Vec::new())).1.push(i);
        }
        self.calls
            .fetch_add(groups.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let replies = futures_util::future::join_all(groups.values().map(|(slot, at)| {
            let mut pipe = redis::pipe();
            for &i in at {
                pipe.add_command(cmds[i].1.clone());
            }
            let mut conn = self.conn.clone();
            let route = SingleNodeRoutingInfo::SpecificNode(Route::new(*slot, SlotAddr::Master));
            async move { conn.route_pipeline(pipe, 0, at.len(), route).await.unwrap() }
        }))
        .await;
        let mut out = vec![redis::Value::Nil; cmds.len()];
        for ((_, at), values) in groups.values().zip(replies) {
            for (&i, v) in at.iter().zip(values) {
                out[i] = v;
            }
        }
        out
    }

    /// The command `cmd` makes for each shard prefix, sent by master; the
    /// replies as `T`.
    async fn every_shard<T: redis::FromRedisValue>(
        &self,
        cmd: impl Fn(&str) -> redis::Cmd,
    ) -> Vec<T> {
        let cmds = self
            .hand
            .shards
            .iter()
            .map(|s| (s.as_str(), cmd(s)))
            .collect();
        self.send(cmds)
            .await
            .into_iter()
            .map(|v| redis::from_redis_value(v).unwrap())
            .collect()
    }

    async fn count(&self, country: &str) -> u64 {
        let counts: Vec<u64> = self
            .every_shard(|s| {
                let mut cmd = redis::cmd("SCARD");
                cmd.arg(format!("{s}player:@country:{country}"));
                cmd
            })
            .await;
        counts.into_iter().sum()
    }

    async fn top(&self, n: usize) -> usize {
        let pages: Vec<Vec<(String, f64)>> = self
            .every_shard(|s| {
                let mut cmd = redis::cmd("ZRANGE");
                cmd.arg(format!("{s}player:@score"))
                    .arg(0)
                    .arg(n - 1)
                    .arg("REV")
                    .arg("WITHSCORES");
                cmd
            })
            .await;
        let mut all: Vec<(String, f64)> = pages.into_iter().flatten().collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        all.truncate(n);
        let cmds = all
            .iter()
            .map(|(m, _)| {
                let id = m.parse::<u64>().unwrap();
                let mut cmd = redis::cmd("HGETALL");
                cmd.arg(&self.hand.keys[id as usize]);
                (self.hand.shard_of(id), cmd)
            })
            .collect();
        self.send(cmds).await.len()
    }

    async fn rank(&self, id: u64) -> u64 {
        let own = format!("{}player:@score", self.hand.shard_of(id));
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let score: f64 = redis::cmd("ZSCORE")
            .arg(own)
            .arg(id)
            .query_async(&mut self.conn.clone())
            .await
            .unwrap();
        let counts: Vec<u64> = self
            .every_shard(|s| {
                let mut cmd = redis::cmd("ZCOUNT");
                cmd.arg(format!("{s}player:@score"))
                    .arg(format!("({score}"))
                    .arg("+inf");
                cmd
            })
            .await;
        counts.into_iter().sum()
    }
}

/// Per side (one server, cluster) and per step: the next fresh number, so
/// that a stateful step (inserts, deletes, renames) does fresh work in
/// each of its rounds.
fn fresh(layout: redis_entity::KeyLayout, step: usize) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: [[AtomicU64; 4]; 2] = [const { [const { AtomicU64::new(0) }; 4] }; 2];
    NEXT[usize::from(layout == redis_entity::KeyLayout::Cluster)][step]
        .fetch_add(1, Ordering::Relaxed)
}

/// Runs `op` `n` times; ops/s and calls per op.
async fn measure<F, Fut>(n: u64, trips: &impl Calls, mut op: F) -> (f64, f64)
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    trips.take_calls();
    let start = Instant::now();
    for i in 0..n {
        op(i).await;
    }
    let secs = start.elapsed().as_secs_f64();
    (n as f64 / secs, trips.take_calls() as f64 / n as f64)
}

/// Every step's row: name, ops/s on one server, on the cluster (saved to
/// `benches/results/cluster.json` at the end of a whole run, which the
/// charts bench draws from).
static ROWS: std::sync::Mutex<Vec<(String, f64, f64)>> = std::sync::Mutex::new(Vec::new());

/// Saves the rows for the charts: `[[step, one server ops/s, cluster ops/s], ..]`.
fn save_rows() {
    let rows = ROWS.lock().unwrap().clone();
    results::save("cluster.json", &serde_json::json!({ "rows": rows }));
}

/// One step on both sides, in alternating order; prints one row.
macro_rules! step {
    ($name:expr, $n:expr, $one:expr, $one_trips:expr, $cl:expr, $cl_trips:expr, |$s:ident, $i:ident| $body:expr) => {{
        let (mut one_ops, mut cl_ops, mut one_calls, mut cl_calls) = (0.0, 0.0, 0.0, 0.0);
        for round in 0..2 {
            let run_one = || async {
                let $s = &$one;
                measure($n, &$one_trips, |$i| async move { $body }).await
            };
            let run_cl = || async {
                let $s = &$cl;
                measure($n, &$cl_trips, |$i| async move { $body }).await
            };
            let (a, b) = if round == 0 {
                let a = run_one().await;
                (a, run_cl().await)
            } else {
                let b = run_cl().await;
                (run_one().await, b)
            };
            one_ops += a.0 / 2.0;
            cl_ops += b.0 / 2.0;
            one_calls = a.1;
            cl_calls = b.1;
        }
        ROWS.lock()
            .unwrap()
            .push(($name.to_string(), one_ops, cl_ops));
        println!(
            "{:<34} {:>10.0} {:>10.0} {:>7.2} {:>8.1} {:>8.1}",
            $name,
            one_ops,
            cl_ops,
            cl_ops / one_ops,
            one_calls,
            cl_calls
        );
    }};
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
    let store = Store::builder()
        .key_layout(redis_entity::KeyLayout::Cluster)
        .layout_check(false)
        .build(conn);
    store.keys().check_layout().await.unwrap();
    (store, trips)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 1 } else { 5 };
    let n_players = 2000 * scale;
    let server = RedisServer::start();
    let (one, one_trips) = support::counted_store(&server).await;
    let cluster = RedisCluster::start(3);
    let (cl, cl_trips) = counted_cluster(&cluster).await;
    println!(
        "redis-entity on one server vs a 3-master cluster ({n_players} players, 16 index shards)"
    );
    println!(
        "{:<34} {:>10} {:>10} {:>7} {:>8} {:>8}",
        "step", "one ops/s", "cluster", "ratio", "calls 1", "calls C"
    );
    let all: Vec<Player> = (0..n_players).map(player).collect();
    let all = &all;
    step!(
        "save (one entity)",
        n_players / 4,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            s.save(&player(i)).await.unwrap();
        }
    );
    step!(
        "save_all (100 entities)",
        n_players / 100,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let start = (i * 100) as usize;
            s.save_all(&all[start..start + 100]).await.unwrap();
        }
    );
    step!(
        "get",
        n_players / 2,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            s.get::<Player>(i).await.unwrap().unwrap();
        }
    );
    step!(
        "get_many (50)",
        n_players / 100,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let ids: Vec<u64> = (i * 50..i * 50 + 50).collect();
            assert_eq!(s.get_many::<Player>(&ids).await.unwrap().len(), 50);
        }
    );
    step!(
        "find country (1/10 of all)",
        20 * scale,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let found = s
                .find(Player::COUNTRY, COUNTRIES[(i % 10) as usize])
                .await
                .unwrap();
            assert_eq!(found.len() as u64, n_players / 10);
        }
    );
    step!(
        "query eq + order + limit 10",
        100 * scale,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let page = s
                .query::<Player>()
                .eq(Player::COUNTRY, COUNTRIES[(i % 10) as usize])
                .order_desc(Player::SCORE)
                .limit(0, 10)
                .fetch()
                .await
                .unwrap();
            assert_eq!(page.len(), 10);
        }
    );
    step!(
        "count eq",
        200 * scale,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let n = s
                .query::<Player>()
                .eq(Player::COUNTRY, COUNTRIES[(i % 10) as usize])
                .count()
                .await
                .unwrap();
            assert_eq!(n, n_players / 10);
        }
    );
    step!(
        "top 10",
        100 * scale,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, _i| {
            assert_eq!(s.board(Player::SCORE).top(10).await.unwrap().len(), 10);
        }
    );
    step!("rank", 100 * scale, one, one_trips, cl, cl_trips, |s, i| {
        assert!(s.board(Player::SCORE).rank(i).await.unwrap().is_some());
    });
    // The floor: the same three reads hand-written with redis-rs on the
    // same servers (no liveness checks): first as one writes them with
    // the cluster connection's plain API, one call per shard (it refuses a
    // pipeline across slots); then one pipeline per master, routed to it
    // (`route_pipeline`), as the library reads.
    let one_hand = Hand::of(&one, n_players);
    let cl_hand = Hand::of(&cl, n_players);
    step!(
        "hand-written: count eq",
        200 * scale,
        one_hand,
        one_trips,
        cl_hand,
        cl_trips,
        |h, i| {
            assert_eq!(h.count(COUNTRIES[(i % 10) as usize]).await, n_players / 10);
        }
    );
    step!(
        "hand-written: top 10",
        100 * scale,
        one_hand,
        one_trips,
        cl_hand,
        cl_trips,
        |h, _i| {
            assert_eq!(h.top(10).await, 10);
        }
    );
    step!(
        "hand-written: rank",
        100 * scale,
        one_hand,
        one_trips,
        cl_hand,
        cl_trips,
        |h, i| {
            h.rank(i).await;
        }
    );
    let by_master = ByMaster::of(Hand::of(&cl, n_players), &cluster).await;
    let bm_calls = &by_master.calls;
    step!(
        "hand-written by master: count eq",
        200 * scale,
        one_hand,
        one_trips,
        by_master,
        bm_calls,
        |h, i| {
            assert_eq!(h.count(COUNTRIES[(i % 10) as usize]).await, n_players / 10);
        }
    );
    step!(
        "hand-written by master: top 10",
        100 * scale,
        one_hand,
        one_trips,
        by_master,
        bm_calls,
        |h, _i| {
            assert_eq!(h.top(10).await, 10);
        }
    );
    step!(
        "hand-written by master: rank",
        100 * scale,
        one_hand,
        one_trips,
        by_master,
        bm_calls,
        |h, i| {
            h.rank(i).await;
        }
    );
    step!(
        "relate (sides in two slots)",
        n_players / 4,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, _i| {
            let a = fresh(s.keys().layout(), 0);
            assert!(s.relation(&FOLLOWS).relate(a, a + 1).await.unwrap());
        }
    );
    step!(
        "delete, 2 relations in 2 slots",
        n_players / 8,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, _i| {
            // Player 2k+1 follows 2k+2 and is followed by 2k.
            let k = fresh(s.keys().layout(), 1);
            assert!(s.delete::<Player>(2 * k + 1).await.unwrap());
        }
    );
    let accounts = n_players / 4;
    step!(
        "insert, unique value",
        accounts,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, _i| {
            let id = fresh(s.keys().layout(), 2);
            let a = Account {
                id,
                email: format!("a{id}@x"),
                visits: 0,
            };
            s.insert(&a).await.unwrap();
        }
    );
    step!(
        "save, unique value kept",
        accounts,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let a = Account {
                id: i,
                email: format!("a{i}@x"),
                visits: 1,
            };
            s.save(&a).await.unwrap();
        }
    );
    step!(
        "save, unique value changed",
        accounts,
        one,
        one_trips,
        cl,
        cl_trips,
        |s, i| {
            let a = Account {
                id: i,
                email: format!("b{}@x", fresh(s.keys().layout(), 3)),
                visits: 2,
            };
            s.save(&a).await.unwrap();
        }
    );
    println!();
    println!(
        "read cost by index shards ({n_players} entities; ratio: cluster / one server, same type)"
    );
    println!(
        "{:<7} {:>10} {:>7} {:>6} {:>10} {:>7} {:>6} {:>10} {:>7} {:>6}",
        "shards",
        "count eq",
        "ratio",
        "calls",
        "top 10",
        "ratio",
        "calls",
        "rank",
        "ratio",
        "calls"
    );
    // Each read of one type, on one server and on the cluster: (one server
    // ops/s, cluster ops/s, cluster calls per read).
    macro_rules! by_shards {
        ($t:ident, $n:literal) => {{
            let rows: Vec<$t> = (0..n_players)
                .map(|id| $t {
                    id,
                    country: COUNTRIES[(id % 10) as usize].into(),
                    score: ((id * 7919) % 1000) as f64,
                })
                .collect();
            for chunk in rows.chunks(500) {
                one.save_all(chunk).await.unwrap();
                cl.save_all(chunk).await.unwrap();
            }
            // One read `read` of the type `n` times on one side: (ops/s,
            // calls per read).
            macro_rules! reads {
                ($s:expr, $trips:expr, $read:expr) => {{
                    let s = &$s;
                    measure(100 * scale, &$trips, |i| async move {
                        match $read {
                            0 => {
                                let n = s
                                    .query::<$t>()
                                    .eq($t::COUNTRY, COUNTRIES[(i % 10) as usize])
                                    .count()
                                    .await
                                    .unwrap();
                                assert_eq!(n, n_players / 10);
                            }
                            1 => {
                                let top = s.board($t::SCORE).top(10).await.unwrap();
                                assert_eq!(top.len(), 10);
                            }
                            _ => {
                                let r = s.board($t::SCORE).rank(i % n_players).await.unwrap();
                                assert!(r.is_some());
                            }
                        }
                    })
                    .await
                }};
            }
            let mut cells = Vec::new();
            for read in 0..3 {
                // Both sides twice, alternating which goes first.
                let (mut one_ops, mut cl_ops, mut calls) = (0.0, 0.0, 0.0);
                for round in 0..2 {
                    let (a, b) = if round == 0 {
                        let a = reads!(one, one_trips, read);
                        (a, reads!(cl, cl_trips, read))
                    } else {
                        let b = reads!(cl, cl_trips, read);
                        (reads!(one, one_trips, read), b)
                    };
                    one_ops += a.0 / 2.0;
                    cl_ops += b.0 / 2.0;
                    calls = b.1;
                }
                cells.push(format!(
                    "{:>10.0} {:>7.2} {:>6.1}",
                    cl_ops,
                    cl_ops / one_ops,
                    calls
                ));
            }
            println!("{:<7} {}", $n, cells.join(" "));
        }};
    }
    by_shards!(P1, 1);
    by_shards!(P4, 4);
    by_shards!(P16, 16);
    by_shards!(P64, 64);
    if !quick {
        save_rows();
    }
}
