//! Schema evolution: a deployed type gets an index. The keyspace records
//! which definition wrote it; the new definition's queries on the new index
//! are refused until `schema apply` built it online, and then answer for
//! every stored entity.
//!
//! Run against your server (default `redis://127.0.0.1:6379/`):
//! `REDIS_URL=redis://127.0.0.1:6379/ cargo run --example schema_evolution`
//! (it writes, then deletes, the keys of the namespace `demo:`).

use redis_entity::{Error, Namespace, Store};
use std::time::Duration;

/// The definition deployed first: a sorted index on `views`.
pub mod deployed {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "article")]
    pub struct Article {
        #[pk]
        pub id: u64,
        pub section: String,
        #[index(sorted)]
        pub views: i64,
    }
}

/// The next release: `section` gets an index.
pub mod next {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "article")]
    pub struct Article {
        #[pk]
        pub id: u64,
        #[index]
        pub section: String,
        #[index(sorted)]
        pub views: i64,
    }
}

const SECTIONS: [&str; 3] = ["news", "sport", "science"];

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== schema evolution: an index added to a deployed type, built online");
    // Two processes' stores, announcing their definitions for 200 ms at a
    // time (10 s by default), so that the demo does not wait long.
    let connect = || {
        Store::builder()
            .namespace(Namespace::new("demo"))
            .schema_heartbeat(Duration::from_millis(200))
            .connect_any(url)
    };
    let old = connect().await?;
    for id in 1..=300 {
        old.save(&deployed::Article {
            id,
            section: SECTIONS[id as usize % 3].into(),
            views: id as i64 * 10,
        })
        .await?;
    }
    println!("{}", redis_entity::evolution::describe::<next::Article>());

    let new = connect().await?;
    let plan = new.schema().plan::<next::Article>().await?;
    print!("{plan}");
    match new.find(next::Article::SECTION, "sport").await {
        Err(Error::IndexBuilding { index, state, .. }) => {
            println!("find(section = sport) before apply: refused, index `{index}` is {state}")
        }
        other => println!("find before apply: unexpected {other:?}"),
    }
    let applied = new.schema().apply::<next::Article>().await?;
    println!(
        "apply: built {:?}, {} stored articles indexed",
        applied.built, applied.indexed
    );
    let sport = new.find(next::Article::SECTION, "sport").await?;
    println!(
        "find(section = sport) after apply: {} articles",
        sport.len()
    );
    assert_eq!(sport.len(), 100);
    print!("{}", new.schema().status::<next::Article>().await?);
    let report = new.maintenance::<next::Article>().verify().await?;
    println!(
        "verify: {} entities, {} violations",
        report.entities,
        report.violations.len()
    );

    // Clean up what the demo wrote: every key of its namespace.
    new.query::<next::Article>().delete().await?;
    let mut conn = new.connection();
    for key in new.keys().scan("demo:*").await? {
        let () = redis::cmd("UNLINK")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .map_err(|e| Error::redis(&key, e))?;
    }
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
