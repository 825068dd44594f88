//! The three cache problems, each shown without protection and
//! with redis-entity's `Cache`, with the database loads counted.
//! Run: `cargo run --example cache`.

use redis::AsyncCommands;
use redis_entity::{AnyConnection, Cache, Store};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The slow database: counts every query it answers.
#[derive(Clone, Default)]
pub struct Database {
    pub queries: Arc<AtomicUsize>,
}

impl Database {
    pub async fn product(&self, id: u64) -> Result<Option<String>, std::io::Error> {
        self.queries.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok((id < 1000).then(|| format!("product {id}")))
    }

    fn take(&self) -> usize {
        self.queries.swap(0, Ordering::SeqCst)
    }
}

/// The naive cache one starts from: GET, on a miss query and SET.
async fn naive(conn: &mut AnyConnection, db: &Database, id: u64) -> Option<String> {
    let key = format!("naive:product:{id}");
    if let Ok(Some(v)) = conn.get::<_, Option<String>>(&key).await {
        return Some(v);
    }
    let v = db.product(id).await.ok().flatten()?;
    let _: () = conn.set_ex(&key, &v, 60).await.unwrap();
    Some(v)
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== cache: penetration, breakdown, avalanche");
    // One server, or a cluster (node URLs separated by commas).
    let store = Store::builder().connect_any(url).await?;
    let cache = Cache::from_store(&store);
    // The naive code's own connection: the store's, as plain commands.
    let conn = store.connection();
    let db = Database::default();

    // Penetration: lookups of an id that does not exist.
    for _ in 0..100 {
        naive(&mut conn.clone(), &db, 4040).await;
    }
    println!(
        "penetration, 100 lookups of a missing id:     naive {:>3} loads",
        db.take()
    );
    for _ in 0..100 {
        cache
            .get_or_load("product:4040", Duration::from_secs(60), || db.product(4040))
            .await?;
    }
    println!(
        "                                              cache {:>3} load  (null marker for null_ttl)",
        db.take()
    );

    // Breakdown: a hot key expires and 50 requests arrive together.
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (db, mut conn) = (db.clone(), conn.clone());
            tokio::spawn(async move { naive(&mut conn, &db, 1).await })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    println!(
        "breakdown, 50 concurrent misses of a hot key: naive {:>3} loads",
        db.take()
    );
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (db, cache) = (db.clone(), cache.clone());
            tokio::spawn(async move {
                cache
                    .get_or_load("product:1", Duration::from_secs(60), || db.product(1))
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task")?;
    }
    println!(
        "                                              cache {:>3} load  (SET NX PX lock, others wait)",
        db.take()
    );

    // Avalanche: keys cached together expire together without jitter.
    let mut c = conn.clone();
    let mut naive_ttls = Vec::new();
    let mut cache_ttls = Vec::new();
    for id in 100..200 {
        naive(&mut c, &db, id).await;
        naive_ttls.push(
            c.pttl::<_, i64>(format!("naive:product:{id}"))
                .await
                .unwrap_or(0),
        );
        cache
            .get_or_load(&format!("product:{id}"), Duration::from_secs(60), || {
                db.product(id)
            })
            .await?;
        cache_ttls.push(
            c.pttl::<_, i64>(cache.key_of(&format!("product:{id}")))
                .await
                .unwrap_or(0),
        );
    }
    let spread =
        |t: &[i64]| (t.iter().max().unwrap_or(&0) - t.iter().min().unwrap_or(&0)) as f64 / 1000.0;
    println!(
        "avalanche, 100 keys cached together: expiry spread naive {:.1}s, cache {:.1}s (±10% jitter)\n",
        spread(&naive_ttls),
        spread(&cache_ttls)
    );
    db.take();
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    // The server to run against: `REDIS_URL`, or a local one; or a Redis
    // Cluster: `REDIS_CLUSTER_URLS` (node URLs separated by commas).
    let url = std::env::var("REDIS_CLUSTER_URLS")
        .or_else(|_| std::env::var("REDIS_URL"))
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    run(&url).await
}
