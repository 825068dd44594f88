//! Red packets a user can claim in a live program.
//!
//! ```sql
//! select taskId, status from red_package where programId = 1 and uid = 3;
//! ```
//! The classic layout stores `red_package:programId_taskId_uid:1_2_3:status` and answers
//! with `keys red_package:...:1_*_3:status`, a scan of the whole keyspace.
//! Here the composite key keeps that shape and two indexes on pk fields
//! answer the query with one SINTER. Run: `cargo run --example red_packets`.

use redis_entity::{Error, RedisEntity, Store};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(key = "red_package:{program_id}_{task_id}_{uid}")]
pub struct RedPackage {
    #[pk]
    #[index]
    pub program_id: u64,
    #[pk]
    pub task_id: u64,
    #[pk]
    #[index]
    pub uid: u64,
    /// 0 = claimable, 1 = claimed.
    #[index]
    pub status: u8,
}

pub fn packages() -> Vec<RedPackage> {
    let p = |program_id, task_id, uid, status| RedPackage {
        program_id,
        task_id,
        uid,
        status,
    };
    vec![
        p(1, 2, 3, 0),
        p(1, 3, 3, 0),
        p(1, 2, 4, 0),
        p(2, 5, 3, 0),
        p(1, 4, 3, 1),
    ]
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== red_packets: composite key (program_id, task_id, uid), found by index");
    let store = Store::builder().connect_any(url).await?;
    println!("{}", RedPackage::layout());
    store.save_all(&packages()).await?;
    println!(
        "save_all(5 packets) -> keys {:?}",
        store.keys().scan("red_package:*").await?
    );

    // select taskId,status from red_package where programId=1 and uid=3;
    let mine = store
        .query::<RedPackage>()
        .eq(RedPackage::PROGRAM_ID, 1u64)
        .eq(RedPackage::UID, 3u64)
        .fetch()
        .await?;
    let tasks: Vec<(u64, u8)> = mine.iter().map(|p| (p.task_id, p.status)).collect();
    println!("program 1, uid 3   -> (task_id, status) {tasks:?}   (SINTER red_package:program_id:1 red_package:uid:3)");

    // ... and status = 0 (still claimable)
    let claimable = store
        .query::<RedPackage>()
        .eq(RedPackage::PROGRAM_ID, 1u64)
        .eq(RedPackage::UID, 3u64)
        .eq(RedPackage::STATUS, 0u8)
        .ids()
        .await?;
    println!("  and claimable    -> pks {claimable:?}");

    // Claim one, only while it is claimable: the condition is checked in
    // the same atomic write, and the status index follows the change.
    store
        .update::<RedPackage>(&(1, 2, 3))
        .when(RedPackage::STATUS.is(0u8))
        .set(RedPackage::STATUS, 1u8)
        .exec()
        .await?;
    // A second claim of the same packet is not applied: nothing written.
    let again = store
        .update::<RedPackage>(&(1, 2, 3))
        .when(RedPackage::STATUS.is(0u8))
        .set(RedPackage::STATUS, 1u8)
        .exec()
        .await;
    match again {
        Err(Error::ConditionFailed { found, .. }) => {
            println!("claim (1, 2, 3) again -> not applied, status is {found:?}")
        }
        other => println!("claim (1, 2, 3) again -> unexpected {other:?}"),
    }
    let claimable = store
        .query::<RedPackage>()
        .eq(RedPackage::PROGRAM_ID, 1u64)
        .eq(RedPackage::UID, 3u64)
        .eq(RedPackage::STATUS, 0u8)
        .ids()
        .await?;
    println!("claim (1, 2, 3)    -> claimable now {claimable:?}\n");
    for p in packages() {
        store
            .delete::<RedPackage>(&(p.program_id, p.task_id, p.uid))
            .await?;
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
