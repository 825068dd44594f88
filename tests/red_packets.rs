//! Red packets by (programId, uid): a composite key found by indexes on pk fields.
//! Runs on one server, and with `scripts/test.sh --cluster` on a 3-master
//! cluster, where a packet and its entries live in its index shard
//! (`{red_package:<n>}:red_package:1_2_3`, `{red_package:<n>}:red_package:@uid:3`).

#[allow(dead_code)]
#[path = "../examples/red_packets.rs"]
mod example;

use example::{packages, RedPackage};
use redis::Commands;
use support::Target;

#[tokio::test]
async fn composite_keys_and_pk_indexes_are_written() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&packages()[0]).await.unwrap();
    let standalone = [
        "red_package:1_2_3",
        "red_package:@ids",
        "red_package:@program_id:1",
        "red_package:@status:0",
        "red_package:@uid:3",
    ];
    if !server.is_cluster() {
        assert_eq!(server.keys(), standalone);
    }
    // The packet's keys and its shard's entries, spelled as on one server
    // inside the packet's space (none on one server).
    let keys = store.keys().of::<RedPackage>((1, 2, 3));
    assert_eq!(keys.member, "1_2_3");
    let space = keys
        .base
        .strip_suffix(&RedPackage::key(&(1, 2, 3)))
        .expect("the standalone key inside its space");
    if server.is_cluster() {
        assert!(
            space.starts_with("{red_package:") && space.ends_with("}:"),
            "{space}"
        );
    } else {
        assert_eq!(space, "");
    }
    let mut want: Vec<String> = standalone.iter().map(|k| format!("{space}{k}")).collect();
    want.sort();
    assert_eq!(server.keys(), want);
    let uid_3 = format!("{space}{}", RedPackage::UID.key(3u64));
    let m: Vec<String> = server.conn().smembers(&uid_3).unwrap();
    assert_eq!(m, ["1_2_3"]);
}

#[tokio::test]
async fn packets_of_a_user_in_a_program_without_keys_scans() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&packages()).await.unwrap();
    let mine = store
        .query::<RedPackage>()
        .eq(RedPackage::PROGRAM_ID, 1u64)
        .eq(RedPackage::UID, 3u64)
        .fetch()
        .await
        .unwrap();
    let tasks: Vec<(u64, u8)> = mine.iter().map(|p| (p.task_id, p.status)).collect();
    assert_eq!(tasks, [(2, 0), (3, 0), (4, 1)]);
    let claimable = store
        .query::<RedPackage>()
        .eq(RedPackage::PROGRAM_ID, 1u64)
        .eq(RedPackage::UID, 3u64)
        .eq(RedPackage::STATUS, 0u8)
        .ids()
        .await
        .unwrap();
    assert_eq!(claimable, [(1, 2, 3), (1, 3, 3)]);
}

#[tokio::test]
async fn delete_removes_pk_index_entries() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&packages()).await.unwrap();
    for p in packages() {
        assert!(store
            .delete::<RedPackage>(&(p.program_id, p.task_id, p.uid))
            .await
            .unwrap());
    }
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

#[tokio::test]
async fn the_example_runs() {
    let server = Target::start();
    example::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
    assert!(store_is_clean(&server).await);
}

async fn store_is_clean(server: &Target) -> bool {
    let store = server.store().await;
    store
        .maintenance::<RedPackage>()
        .verify()
        .await
        .unwrap()
        .is_clean()
}
