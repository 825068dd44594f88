//! Pattern queries without KEYS: multi-condition and "starts with" queries met with indexes,
//! and zero-padded ids. Runs on one server, and with `scripts/test.sh
//! --cluster` on a 3-master cluster, where each index is split over the
//! type's index shards (`{SU1:<n>}:SU1:@user_name`).

#[allow(dead_code)]
#[path = "../examples/pattern_query.rs"]
mod example;

use example::{users, SecurityUser};
use redis::Commands;
use redis_entity::{AnyConnection, RedisEntity, Store};
use support::Target;

fn ids(users: &[SecurityUser]) -> Vec<u64> {
    users.iter().map(|u| u.id).collect()
}

async fn seeded(server: &Target) -> Store<AnyConnection> {
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store
}

/// The space user `id`'s keys live in: empty on one server, its index
/// shard's `{SU1:<n>}:` on a cluster (inside which keys are spelled as on
/// one server).
fn space(store: &Store<AnyConnection>, id: u64) -> String {
    let base = store.keys().of::<SecurityUser>(id).base;
    base.strip_suffix(&SecurityUser::key(&id))
        .unwrap_or_else(|| panic!("{base} is not the standalone key inside a space"))
        .to_string()
}

/// The user-name prefix index that holds user `id`'s entry.
fn names_of(store: &Store<AnyConnection>, id: u64) -> String {
    format!("{}{}", space(store, id), SecurityUser::USER_NAME.key())
}

/// Every entry of the user-name prefix index, over every shard, sorted.
fn name_entries(server: &Target) -> Vec<String> {
    let index = SecurityUser::USER_NAME.key();
    let in_shard = format!("}}:{index}");
    let mut c = server.conn();
    let mut all = Vec::new();
    for key in server.keys() {
        let of_index = if server.is_cluster() {
            key.starts_with('{') && key.ends_with(&in_shard)
        } else {
            key == index
        };
        if of_index {
            let part: Vec<String> = c.zrange(&key, 0, -1).unwrap();
            all.extend(part);
        }
    }
    all.sort();
    all
}

#[tokio::test]
async fn keys_use_the_padded_id_and_a_lex_sorted_set() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&users()[0]).await.unwrap();
    let standalone = [
        "SU1:0000000035",
        "SU1:@ids",
        "SU1:@unit_type:县级单位",
        "SU1:@user_name",
    ];
    if !server.is_cluster() {
        assert_eq!(server.keys(), standalone);
        let entries: Vec<String> = server.conn().zrange("SU1:@user_name", 0, -1).unwrap();
        assert_eq!(entries, ["wangwu:0000000035"]);
    }
    // The same keys inside the user's space (its shard's on a cluster).
    let space = space(&store, 35);
    assert_eq!(space.is_empty(), !server.is_cluster(), "{space}");
    assert_eq!(store.keys().of::<SecurityUser>(35).member, "0000000035");
    let mut want: Vec<String> = standalone.iter().map(|k| format!("{space}{k}")).collect();
    want.sort();
    assert_eq!(server.keys(), want);
    let entries: Vec<String> = server.conn().zrange(names_of(&store, 35), 0, -1).unwrap();
    assert_eq!(entries, ["wangwu:0000000035"]);
    assert_eq!(SecurityUser::key(&35), "SU1:0000000035");
    assert_eq!(
        store.get::<SecurityUser>(&35).await.unwrap(),
        Some(users()[0].clone())
    );
}

#[tokio::test]
async fn both_one_or_prefix_conditions() {
    let server = Target::start();
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
    let server = Target::start();
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
    let entries = name_entries(&server);
    assert!(
        !entries.iter().any(|e| e.ends_with(":0000000036")),
        "{entries:?}"
    );
    assert!(
        entries.contains(&"zhao:0000000035".to_string()),
        "{entries:?}"
    );
    let of_35: Vec<String> = server.conn().zrange(names_of(&store, 35), 0, -1).unwrap();
    assert!(of_35.contains(&"zhao:0000000035".to_string()), "{of_35:?}");
    assert!(store
        .maintenance::<SecurityUser>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn stale_prefix_entries_are_dropped_cleaned_and_verified() {
    let server = Target::start();
    let store = seeded(&server).await;
    let mut c = server.conn();
    let names = names_of(&store, 38);
    if !server.is_cluster() {
        assert_eq!(names, "SU1:@user_name");
    }
    // A stale entry: 38 is lisi, but the index also says wangzz.
    let _: () = c.zadd(&names, "wangzz:0000000038", 0).unwrap();
    let report = store.maintenance::<SecurityUser>().verify().await.unwrap();
    // Named by the sorted set that holds it, with the value it lists.
    assert_eq!(
        report.violations,
        [redis_entity::verify::Violation::StaleSortedEntry {
            key: names.clone(),
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
    let entries = name_entries(&server);
    assert!(
        !entries.contains(&"wangzz:0000000038".to_string()),
        "cleaned: {entries:?}"
    );
    assert!(
        entries.contains(&"lisi:0000000038".to_string()),
        "kept: {entries:?}"
    );
    assert!(store
        .maintenance::<SecurityUser>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    // The same fault planted again is what repair removes.
    let _: () = c.zadd(&names, "wangzz:0000000038", 0).unwrap();
    let report = store.maintenance::<SecurityUser>().verify().await.unwrap();
    let repaired = store
        .maintenance::<SecurityUser>()
        .repair(&report)
        .await
        .unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (1, 0), "{repaired}");
    let entries = name_entries(&server);
    assert!(!entries.contains(&"wangzz:0000000038".to_string()));
    assert!(store
        .maintenance::<SecurityUser>()
        .verify()
        .await
        .unwrap()
        .is_clean());
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
    let server = Target::start();
    let store = server.store().await;
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
    let server = Target::start();
    example::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}
