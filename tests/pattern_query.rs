//! Seed 004: multi-condition and "starts with" queries met with indexes,
//! and zero-padded ids.

#[allow(dead_code)]
#[path = "../examples/pattern_query.rs"]
mod example;

use example::{users, SecurityUser};
use redis::Commands;
use redis_entity::{RedisEntity, Store};
use support::RedisServer;

fn ids(users: &[SecurityUser]) -> Vec<u64> {
    users.iter().map(|u| u.id).collect()
}

async fn seeded(server: &RedisServer) -> Store {
    let store = Store::connect(&server.url()).await.unwrap();
    store.save_all(&users()).await.unwrap();
    store
}

#[tokio::test]
async fn keys_use_the_padded_id_and_a_lex_sorted_set() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&users()[0]).await.unwrap();
    assert_eq!(
        server.keys(),
        [
            "SU1:0000000035",
            "SU1:@ids",
            "SU1:@unit_type:县级单位",
            "SU1:@user_name",
        ]
    );
    let entries: Vec<String> = server.conn().zrange("SU1:@user_name", 0, -1).unwrap();
    assert_eq!(entries, ["wangwu:0000000035"]);
    assert_eq!(SecurityUser::key(&35), "SU1:0000000035");
    assert_eq!(
        store.get::<SecurityUser>(&35).await.unwrap(),
        Some(users()[0].clone())
    );
}

#[tokio::test]
async fn both_one_or_prefix_conditions() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    let q = || store.query::<SecurityUser>();
    let both = q()
        .eq(SecurityUser::UNIT_TYPE, "县级单位")
        .eq(SecurityUser::USER_NAME, "wangwu")
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&both), [35], "exact match does not take wangwu2");
    assert_eq!(
        ids(&store
            .find(SecurityUser::UNIT_TYPE, "县级单位")
            .await
            .unwrap()),
        [35, 36, 39, 40]
    );
    assert_eq!(
        ids(&q()
            .prefix(SecurityUser::USER_NAME, "wang")
            .fetch()
            .await
            .unwrap()),
        [35, 36, 37]
    );
    assert_eq!(
        ids(&q()
            .prefix(SecurityUser::USER_NAME, "wangwu")
            .fetch()
            .await
            .unwrap()),
        [35, 37]
    );
    assert_eq!(
        ids(&q()
            .eq(SecurityUser::UNIT_TYPE, "县级单位")
            .prefix(SecurityUser::USER_NAME, "张三")
            .fetch()
            .await
            .unwrap()),
        [39, 40]
    );
    assert_eq!(
        ids(&q()
            .prefix(SecurityUser::USER_NAME, "张三丰")
            .fetch()
            .await
            .unwrap()),
        [40]
    );
    assert!(q()
        .prefix(SecurityUser::USER_NAME, "x")
        .fetch()
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        q().prefix(SecurityUser::USER_NAME, "")
            .count()
            .await
            .unwrap(),
        6,
        "the empty prefix matches everything"
    );
    // Prefix conditions combine with none as well.
    assert_eq!(
        ids(&q()
            .prefix(SecurityUser::USER_NAME, "wang")
            .none(SecurityUser::UNIT_TYPE, ["市级单位"])
            .fetch()
            .await
            .unwrap()),
        [35, 36]
    );
    assert_eq!(q().limit(2, 2).ids().await.unwrap(), [37, 38]);
}

#[tokio::test]
async fn renames_and_deletes_move_prefix_entries() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    store
        .update::<SecurityUser>(&35)
        .set(SecurityUser::USER_NAME, "zhao")
        .exec()
        .await
        .unwrap();
    let wang = store
        .query::<SecurityUser>()
        .prefix(SecurityUser::USER_NAME, "wang")
        .ids()
        .await
        .unwrap();
    assert_eq!(wang, [36, 37]);
    store.delete::<SecurityUser>(&36).await.unwrap();
    let entries: Vec<String> = server.conn().zrange("SU1:@user_name", 0, -1).unwrap();
    assert!(
        !entries.iter().any(|e| e.ends_with(":0000000036")),
        "{entries:?}"
    );
    assert!(
        entries.contains(&"zhao:0000000035".to_string()),
        "{entries:?}"
    );
    assert!(store.verify::<SecurityUser>().await.unwrap().is_clean());
}

#[tokio::test]
async fn stale_prefix_entries_are_dropped_cleaned_and_verified() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    let mut c = server.conn();
    // A stale entry: 38 is lisi, but the index also says wangzz.
    let _: () = c.zadd("SU1:@user_name", "wangzz:0000000038", 0).unwrap();
    let report = store.verify::<SecurityUser>().await.unwrap();
    // Named by the sorted set that holds it, with the value it lists.
    assert_eq!(
        report.violations,
        [redis_entity::verify::Violation::StaleSortedEntry {
            key: "SU1:@user_name".into(),
            member: "0000000038".into(),
            value: "wangzz".into(),
        }],
        "{report}"
    );
    let wang = store
        .query::<SecurityUser>()
        .prefix(SecurityUser::USER_NAME, "wang")
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&wang), [35, 36, 37]);
    let entries: Vec<String> = c.zrange("SU1:@user_name", 0, -1).unwrap();
    assert!(
        !entries.contains(&"wangzz:0000000038".to_string()),
        "cleaned: {entries:?}"
    );
    assert!(
        entries.contains(&"lisi:0000000038".to_string()),
        "kept: {entries:?}"
    );
    assert!(store.verify::<SecurityUser>().await.unwrap().is_clean());
    // The same fault planted again is what repair removes.
    let _: () = c.zadd("SU1:@user_name", "wangzz:0000000038", 0).unwrap();
    let report = store.verify::<SecurityUser>().await.unwrap();
    let repaired = store.repair::<SecurityUser>(&report).await.unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (1, 0), "{repaired}");
    let entries: Vec<String> = c.zrange("SU1:@user_name", 0, -1).unwrap();
    assert!(!entries.contains(&"wangzz:0000000038".to_string()));
    assert!(store.verify::<SecurityUser>().await.unwrap().is_clean());
}

/// Text with structure characters in a prefix index.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Doc {
    #[pk]
    id: u32,
    #[index(prefix)]
    path: String,
}

#[tokio::test]
async fn prefix_search_escapes_structure_characters() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let docs = [
        Doc {
            id: 1,
            path: "a:b/c".into(),
        },
        Doc {
            id: 2,
            path: "a:b".into(),
        },
        Doc {
            id: 3,
            path: "a*".into(),
        },
        Doc {
            id: 4,
            path: "".into(),
        },
    ];
    store.save_all(&docs).await.unwrap();
    let q = |p: &str| {
        let store = store.clone();
        let p = p.to_string();
        async move {
            store
                .query::<Doc>()
                .prefix(Doc::PATH, p)
                .ids()
                .await
                .unwrap()
        }
    };
    assert_eq!(q("a:b").await, [1, 2]);
    assert_eq!(q("a:b/").await, [1]);
    assert_eq!(q("a*").await, [3], "`*` is not a wildcard");
    assert_eq!(q("a").await, [1, 2, 3]);
    assert_eq!(
        store.query::<Doc>().eq(Doc::PATH, "").ids().await.unwrap(),
        [4]
    );
    assert_eq!(
        store
            .query::<Doc>()
            .eq(Doc::PATH, "a:b")
            .ids()
            .await
            .unwrap(),
        [2]
    );
}

#[tokio::test]
async fn the_example_runs() {
    let server = RedisServer::start();
    example::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}
