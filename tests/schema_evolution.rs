//! Schema evolution: the keyspace records the definition each type was
//! written with; an index added to a deployed type is refused to queries
//! until `schema apply` built it, a dropped one's keys go, a definition that
//! does not fit the stored data is refused, and a rolling deploy (two
//! definitions of one type writing at once) never leaves the new index
//! incomplete. Four definitions of one type, `item`, in four modules.
//! Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a
//! 3-master cluster.

use redis_entity::evolution::{Change, IndexState};
use redis_entity::verify::Violation;
use redis_entity::{AnyConnection, Error, Store, StoreBuilder};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::Target;

/// The deployed definition: a sorted index on `size`.
mod v1 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        pub color: String,
        #[index(sorted)]
        pub size: i64,
    }
}

/// The next one adds an equality index on `color`.
mod v2 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        #[index]
        pub color: String,
        #[index(sorted)]
        pub size: i64,
    }
}

/// `color`'s index dropped again.
mod v3 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        pub color: String,
        #[index(sorted)]
        pub size: i64,
    }
}

/// A new required field: entities stored before do not decode.
mod v4 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        pub color: String,
        #[index(sorted)]
        pub size: i64,
        pub weight: u32,
    }
}

/// A new optional field: compatible.
mod v5 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        pub color: String,
        #[index(sorted)]
        pub size: i64,
        pub note: Option<String>,
    }
}

/// `size` indexed by equality instead of sorted: an index's kind changed.
mod v7 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        pub color: String,
        #[index]
        pub size: i64,
    }
}

/// `color` stored as `colour` from now on (`alias`: the old name).
mod v6 {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "item")]
    pub struct Item {
        #[pk]
        pub id: u64,
        #[redis(alias = "color")]
        pub colour: String,
        #[index(sorted)]
        pub size: i64,
    }
}

const COLORS: [&str; 3] = ["red", "green", "blue"];

/// A store announcing its definitions for 300 ms at a time, so that an
/// apply waits at most that long for a definition's processes to be gone.
async fn store(target: &Target) -> Store<AnyConnection> {
    target
        .store_with(heartbeat(Duration::from_millis(300)))
        .await
}

/// The settings of a store announcing its definitions for `d` at a time.
fn heartbeat(d: Duration) -> StoreBuilder<AnyConnection> {
    Store::builder().schema_heartbeat(d)
}

fn old_item(id: u64) -> v1::Item {
    v1::Item {
        id,
        color: COLORS[id as usize % 3].into(),
        size: id as i64,
    }
}

fn new_item(id: u64) -> v2::Item {
    v2::Item {
        id,
        color: COLORS[id as usize % 3].into(),
        size: id as i64,
    }
}

/// Every stored item (the tests use ids below 5,000), read by key.
async fn stored(store: &Store<AnyConnection>) -> Vec<v1::Item> {
    store
        .get_many::<v1::Item>(0..5000u64)
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect()
}

/// The ids of `color` found through the index, against the truth.
async fn check_index(store: &Store<AnyConnection>) {
    let truth = stored(store).await;
    for color in COLORS {
        let mut found: Vec<u64> = store
            .find(v2::Item::COLOR, color)
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        found.sort();
        let want: Vec<u64> = truth
            .iter()
            .filter(|i| i.color == color)
            .map(|i| i.id)
            .collect();
        assert_eq!(found, want, "items of color {color}");
    }
    let top: Vec<i64> = store
        .board(v2::Item::SIZE)
        .top(5)
        .await
        .unwrap()
        .into_iter()
        .map(|(i, _)| i.size)
        .collect();
    let mut sizes: Vec<i64> = truth.iter().map(|i| i.size).collect();
    sizes.sort_by(|a, b| b.cmp(a));
    sizes.truncate(5);
    assert_eq!(top, sizes, "the top 5 sizes");
}

#[tokio::test]
async fn an_index_added_to_a_deployed_type_is_refused_until_apply_builds_it() {
    let target = Target::start();
    let old = store(&target).await;
    for id in 0..100 {
        old.save(&old_item(id)).await.unwrap();
    }
    let new = store(&target).await;
    // The keyspace's definition has no index on color: a query would miss
    // the 100 items, so it is refused, naming the index.
    match new.find(v2::Item::COLOR, "red").await {
        Err(Error::IndexBuilding { index, state, .. }) => {
            assert_eq!(index, "color");
            assert!(state.contains("not built"), "{state}");
        }
        other => panic!("expected IndexBuilding, got {other:?}"),
    }
    let plan = new.schema().plan::<v2::Item>().await.unwrap();
    let changes: Vec<Change> = plan.differences.iter().map(|d| d.change).collect();
    assert_eq!(changes, [Change::NeedsBuild], "{plan}");
    assert_eq!(plan.build, ["color"]);
    // The fingerprint the derive computed at compile time is the one
    // compared with the record.
    assert_eq!(
        plan.code,
        format!("{:016x}", <v2::Item as redis_entity::Entity>::SCHEMA)
    );
    assert_eq!(plan.entities, Some(100), "the stored entities to walk");
    assert!(
        plan.to_string().contains("index `color` (equality) is new"),
        "{plan}"
    );

    // The new definition writes, keeping its indexes from its first write.
    new.save(&new_item(100)).await.unwrap();
    let partial = target
        .store_with(heartbeat(Duration::from_millis(300)).partial_indexes(true))
        .await;
    let found = partial.find(v2::Item::COLOR, "green").await.unwrap();
    assert_eq!(found, [new_item(100)], "only what was written since");
    let status = new.schema().status::<v2::Item>().await.unwrap();
    assert!(
        status
            .indexes
            .contains(&("color".into(), "equality", IndexState::Building)),
        "{status}"
    );
    // The old definition still writes while the index builds.
    old.save(&old_item(101)).await.unwrap();

    let applied = new.schema().apply::<v2::Item>().await.unwrap();
    assert_eq!(applied.built, ["color"]);
    assert!(applied.indexed >= 102, "{applied:?}");
    check_index(&new).await;
    let report = new.maintenance::<v2::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let status = new.schema().status::<v2::Item>().await.unwrap();
    assert!(
        status
            .indexes
            .iter()
            .all(|(_, _, s)| *s == IndexState::Ready),
        "{status}"
    );
    // Applying again has nothing to do.
    assert_eq!(
        new.schema().apply::<v2::Item>().await.unwrap().walks,
        0,
        "nothing left to build"
    );

    // The old definition, which does not keep the ready index, may no
    // longer write (a process left over, or a rollback); nothing written.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut changed = old_item(1);
    changed.color = "green".into();
    match old.save(&changed).await {
        Err(Error::SchemaMismatch { differences, .. }) => {
            assert!(differences[0].contains("index `color`"), "{differences:?}")
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
    assert_eq!(new.get::<v1::Item>(1).await.unwrap(), Some(old_item(1)));
}

#[tokio::test]
async fn dropping_an_index_deletes_its_keys_and_nothing_else() {
    let target = Target::start();
    let store = store(&target).await;
    for id in 0..50 {
        store.save(&new_item(id)).await.unwrap();
    }
    let before = target.keys();
    // One set per color (per color and shard on a cluster).
    let color_keys = before.iter().filter(|k| k.contains("item:@color:")).count();
    assert!(color_keys >= 3, "{before:?}");
    let plan = store.schema().plan::<v3::Item>().await.unwrap();
    assert_eq!(plan.drop, ["color"], "{plan}");
    let applied = store.schema().apply::<v3::Item>().await.unwrap();
    assert_eq!(applied.dropped, ["color"]);
    assert_eq!(applied.deleted_keys, color_keys);
    let after = target.keys();
    let kept: Vec<&String> = before
        .iter()
        .filter(|k| !k.contains("item:@color:"))
        .collect();
    assert_eq!(after.iter().collect::<Vec<_>>(), kept);
    let report = store.maintenance::<v3::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let status = store.schema().status::<v3::Item>().await.unwrap();
    let fields: Vec<&str> = status.indexes.iter().map(|(f, _, _)| f.as_str()).collect();
    assert_eq!(fields, ["size"], "{status}");
}

#[tokio::test]
async fn a_new_required_field_is_refused_and_nothing_is_written() {
    let target = Target::start();
    let old = store(&target).await;
    old.save(&old_item(1)).await.unwrap();
    let new = store(&target).await;
    let plan = new.schema().plan::<v4::Item>().await.unwrap();
    assert!(plan.is_incompatible(), "{plan}");
    let keys = target.keys();
    let item = v4::Item {
        id: 2,
        color: "red".into(),
        size: 2,
        weight: 9,
    };
    match new.save(&item).await {
        Err(Error::SchemaMismatch { differences, .. }) => {
            assert!(differences[0].contains("field `weight`"), "{differences:?}");
            assert!(differences[0].contains("required"), "{differences:?}");
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
    assert_eq!(target.keys(), keys, "nothing written");
    // Announced again after half a heartbeat, still refused, and without
    // looking for stored entities again (their id sets, then a walk of the
    // keys: on one server, where the server counts its commands).
    let looks = |s: &support::RedisServer| s.calls("scard") + s.calls("scan");
    let scans = match &target {
        Target::Server(s) => Some(looks(s)),
        Target::Cluster(_) => None,
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(matches!(
        new.save(&item).await,
        Err(Error::SchemaMismatch { .. })
    ));
    if let (Target::Server(s), Some(before)) = (&target, scans) {
        assert_eq!(looks(s), before, "refused again without looking again");
    }
    // The compatible change (a new optional field) writes, and reads the
    // old entities with the field absent.
    let v5 = store(&target).await;
    v5.save(&v5::Item {
        id: 3,
        color: "blue".into(),
        size: 3,
        note: Some("new".into()),
    })
    .await
    .unwrap();
    let read = v5.get::<v5::Item>(1).await.unwrap().unwrap();
    assert_eq!(read.note, None);
    // ... and the old definition writes on: its fields are all there.
    old.save(&old_item(4)).await.unwrap();
}

/// A rolling deploy: processes of the old definition and of the new one
/// write at once (saves, updates, deletes) while `schema apply` runs. The
/// index becomes ready only after the old ones stopped, and then holds
/// exactly what a scan-and-filter finds.
#[tokio::test]
async fn a_rolling_deploy_never_leaves_the_new_index_incomplete() {
    let target = Target::start();
    let seed = store(&target).await;
    for id in 0..300 {
        seed.save(&old_item(id)).await.unwrap();
    }
    // A heartbeat of a second here: a process may write for half of it
    // after it announced itself, and a task stalled longer than the other
    // half between its check and its write (a loaded machine) would write
    // past its announcement (docs/schema-evolution.md).
    let old = target.store_with(heartbeat(Duration::from_secs(1))).await;
    let new = target.store_with(heartbeat(Duration::from_secs(1))).await;
    let old_until = Instant::now() + Duration::from_millis(1500);
    let new_until = Instant::now() + Duration::from_millis(2500);
    let mut tasks = Vec::new();
    for t in 0..2u64 {
        let old = old.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = t;
            while Instant::now() < old_until {
                n += 7;
                let id = n % 400;
                let mut item = old_item(id);
                item.color = COLORS[(n / 3) as usize % 3].into();
                match n % 5 {
                    0 => drop(old.delete::<v1::Item>(id).await.unwrap()),
                    _ => drop(old.save(&item).await.unwrap()),
                }
            }
            Instant::now()
        }));
    }
    for t in 0..2u64 {
        let new = new.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = t + 100;
            while Instant::now() < new_until {
                n += 11;
                let id = n % 400;
                let mut item = new_item(id);
                item.color = COLORS[(n / 5) as usize % 3].into();
                match n % 4 {
                    0 => drop(new.delete::<v2::Item>(id).await.unwrap()),
                    1 => {
                        // An update of the indexed field of a stored one.
                        let _ = new
                            .update::<v2::Item>(id)
                            .set(v2::Item::COLOR, item.color.clone())
                            .exec()
                            .await;
                    }
                    _ => drop(new.save(&item).await.unwrap()),
                }
            }
            Instant::now()
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let applier = new.clone();
    let applied = tokio::spawn(async move {
        let a = applier.schema().apply::<v2::Item>().await.unwrap();
        (a, Instant::now())
    });
    // When the last task of the old definition stopped writing.
    let mut old_stopped = None;
    for (i, t) in tasks.into_iter().enumerate() {
        let stopped = t.await.unwrap();
        if i < 2 {
            old_stopped = old_stopped.max(Some(stopped));
        }
    }
    let old_stopped = old_stopped.unwrap();
    let (applied, ready_at) = applied.await.unwrap();
    assert!(
        ready_at > old_stopped,
        "the index became ready while the old definition still wrote"
    );
    assert_eq!(applied.built, ["color"]);
    // Verify first: queries remove the entries of entities they find gone,
    // which would hide entries an old definition's deletes left.
    let report = new.maintenance::<v2::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    check_index(&new).await;
}

/// A build interrupted (its process gone mid-walk) resumes where it stopped.
#[tokio::test]
async fn an_interrupted_apply_resumes() {
    let target = Target::start();
    let old = store(&target).await;
    let items: Vec<v1::Item> = (0..5000).map(old_item).collect();
    old.save_all(&items).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let new = store(&target).await;
    // Stopped after its first page of the walk.
    let mut pages = 0;
    let stopped = tokio::time::timeout(Duration::from_secs(30), async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let schema = new.schema();
        let run = schema.apply_with::<v2::Item>(move |p| {
            if p.step == "indexing stored entities" {
                let _ = tx.send(p.done);
            }
        });
        tokio::pin!(run);
        loop {
            tokio::select! {
                r = &mut run => return r.map(|_| ()),
                Some(_) = rx.recv() => {
                    pages += 1;
                    if pages == 1 {
                        return Ok(());
                    }
                }
            }
        }
    })
    .await
    .expect("apply within 30 s");
    stopped.unwrap();
    let status = new.schema().status::<v2::Item>().await.unwrap();
    let walked = status.walked.expect("a walk under way");
    assert!(walked > 0 && walked < 5000, "{status}");
    let applied = new.schema().apply::<v2::Item>().await.unwrap();
    assert_eq!(applied.walks, 0, "the walk went on, not again");
    assert!(applied.indexed < 5000, "{applied:?}");
    check_index(&new).await;
    let report = new.maintenance::<v2::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let ids: BTreeSet<u64> = new
        .find(v2::Item::COLOR, "red")
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(ids.len(), 5000 / 3 + 1);
}

#[tokio::test]
async fn a_renamed_field_reads_through_its_alias_and_apply_rewrites_it() {
    let target = Target::start();
    let old = store(&target).await;
    for id in 0..20 {
        old.save(&old_item(id)).await.unwrap();
    }
    let new = store(&target).await;
    // Old records read through the alias, before anything is rewritten.
    let read = new.get::<v6::Item>(4).await.unwrap().unwrap();
    assert_eq!(read.colour, COLORS[4 % 3]);
    let plan = new.schema().plan::<v6::Item>().await.unwrap();
    assert_eq!(plan.differences.len(), 1, "{plan}");
    assert_eq!(plan.differences[0].change, Change::Compatible);
    assert!(
        plan.differences[0]
            .what
            .contains("`color` is renamed `colour`"),
        "{plan}"
    );
    new.save(&v6::Item {
        id: 20,
        colour: "red".into(),
        size: 20,
    })
    .await
    .unwrap();
    let applied = new.schema().apply::<v6::Item>().await.unwrap();
    assert_eq!(applied.renamed, ["color -> colour"]);
    let key = new.keys().of::<v6::Item>(4).base;
    let mut c = target.conn();
    let fields: std::collections::BTreeMap<String, String> =
        redis::cmd("HGETALL").arg(&key).query(&mut c).unwrap();
    assert_eq!(
        fields.keys().map(String::as_str).collect::<Vec<_>>(),
        ["colour", "size"],
        "the old field is rewritten under its new name"
    );
    for id in 0..=20u64 {
        let item = new.get::<v6::Item>(id).await.unwrap().unwrap();
        let want = if id == 20 {
            "red"
        } else {
            COLORS[id as usize % 3]
        };
        assert_eq!(item.colour, want);
    }
    let report = new.maintenance::<v6::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    // The old definition would write `color` again: refused.
    tokio::time::sleep(Duration::from_millis(400)).await;
    match old.save(&old_item(1)).await {
        Err(Error::SchemaMismatch { differences, .. }) => {
            assert!(
                differences[0].contains("renamed `colour`"),
                "{differences:?}"
            )
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
}

#[tokio::test]
async fn an_index_whose_kind_changed_is_rebuilt_and_its_old_keys_go() {
    let target = Target::start();
    let old = store(&target).await;
    for id in 0..30 {
        old.save(&old_item(id % 10 + id / 10 * 100)).await.unwrap();
    }
    let sorted_before: Vec<String> = target
        .keys()
        .into_iter()
        .filter(|k| k.ends_with("item:@size"))
        .collect();
    assert!(!sorted_before.is_empty(), "the sorted index's sorted set");
    let new = store(&target).await;
    let plan = new.schema().plan::<v7::Item>().await.unwrap();
    assert_eq!(plan.differences[0].change, Change::NeedsBuild, "{plan}");
    assert!(
        plan.differences[0]
            .what
            .contains("index `size` changes from sorted to equality"),
        "{plan}"
    );
    assert_eq!(
        (plan.build.as_slice(), plan.drop.as_slice()),
        (&["size"][..], &[][..])
    );
    // Until applied, the new kind is building: refused.
    assert!(matches!(
        new.find(v7::Item::SIZE, 5i64).await,
        Err(Error::IndexBuilding { .. })
    ));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let applied = new.schema().apply::<v7::Item>().await.unwrap();
    assert_eq!(applied.built, ["size"]);
    assert_eq!(applied.dropped, ["size"], "the old kind's keys");
    let keys = target.keys();
    assert!(
        !keys.iter().any(|k| k.ends_with("item:@size")),
        "the sorted set is gone: {keys:?}"
    );
    let mut found: Vec<u64> = new
        .find(v7::Item::SIZE, 105i64)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    found.sort();
    assert_eq!(found, [105]);
    let report = new.maintenance::<v7::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let status = new.schema().status::<v7::Item>().await.unwrap();
    assert!(
        status
            .indexes
            .contains(&("size".into(), "equality", IndexState::Ready)),
        "{status}"
    );
}

/// `n` items of the deployed definition, their ids `step` apart (ids a
/// hundred apart fill a bucket each), saved in batches of 500.
async fn save_spread(store: &Store<AnyConnection>, n: u64, step: u64) -> Vec<v1::Item> {
    let items: Vec<v1::Item> = (0..n).map(|k| old_item(k * step)).collect();
    for chunk in items.chunks(500) {
        store.save_all(chunk).await.unwrap();
    }
    items
}

/// A build's plan counts the stored entities from the sets of ids: here
/// 1,500 ids a hundred apart, each in a bucket of its own, so the
/// directory of buckets is read in more than one page (`SSCAN`, 1,000
/// names asked for per page).
#[tokio::test]
async fn a_plan_counts_ids_in_more_buckets_than_one_page_of_the_directory() {
    let target = Target::start();
    let old = store(&target).await;
    save_spread(&old, 1500, 100).await;
    let new = store(&target).await;
    let plan = new.schema().plan::<v2::Item>().await.unwrap();
    assert_eq!(plan.build, ["color"]);
    assert_eq!(plan.entities, Some(1500), "{plan}");
}

/// A build of every index of a type starts by deleting its sets of ids
/// (the walk lists the stored entities again): every bucket, across more
/// than one page of the directory. Ids whose entities went around the
/// library, planted in 1,500 buckets, are gone after the apply.
#[tokio::test]
async fn a_rebuild_of_every_index_deletes_ids_in_every_page_of_the_directory() {
    let target = Target::start();
    let old = store(&target).await;
    let items = save_spread(&old, 3000, 50).await;
    // Every other item's hash deleted around the library: its id stays in
    // its bucket, one in each of the 1,500 buckets.
    let mut c = target.conn();
    for item in items.iter().filter(|i| i.id % 100 == 50) {
        let key = old.keys().of::<v1::Item>(item.id).base;
        let _: () = redis::Commands::del(&mut c, key).unwrap();
    }
    let stale = old.maintenance::<v1::Item>().verify().await.unwrap();
    let stale_ids = stale
        .violations
        .iter()
        .filter(|v| matches!(v, Violation::StaleId { .. }))
        .count();
    assert_eq!(stale_ids, 1500, "one stale id per bucket");

    // v7 changes the one index's kind: every index is rebuilt.
    let new = store(&target).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let applied = new.schema().apply::<v7::Item>().await.unwrap();
    assert_eq!(applied.built, ["size"]);
    let report = new.maintenance::<v7::Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, 1500);
}

mod card_v1 {
    use redis_entity::RedisEntity;
    #[derive(RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "ecard", layout = "strings")]
    pub struct Card {
        #[pk]
        pub id: u64,
        pub color: String,
        pub owner: String,
    }
}

mod card_v2 {
    use redis_entity::RedisEntity;
    #[derive(RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "ecard", layout = "strings")]
    pub struct Card {
        #[pk]
        pub id: u64,
        #[index]
        pub color: String,
        pub owner: String,
    }
}

mod deck_v1 {
    use redis_entity::RedisEntity;
    use std::collections::BTreeMap;
    #[derive(RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "edeck")]
    pub struct Deck {
        #[pk]
        pub id: u64,
        pub color: String,
        #[hash]
        pub notes: BTreeMap<String, String>,
    }
}

mod deck_v2 {
    use redis_entity::RedisEntity;
    use std::collections::BTreeMap;
    #[derive(RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "edeck")]
    pub struct Deck {
        #[pk]
        pub id: u64,
        #[index]
        pub color: String,
        #[hash]
        pub notes: BTreeMap<String, String>,
    }
}

/// A hash-layout type without indexes is counted by its entity keys alone
/// (not the keys under them, such as a `#[hash]` map's), nothing kept.
#[tokio::test]
async fn a_plan_counts_hash_entities_by_their_keys_not_the_keys_under_them() {
    let target = Target::start();
    let old = store(&target).await;
    let decks: Vec<deck_v1::Deck> = (0..300)
        .map(|id| deck_v1::Deck {
            id,
            color: "red".into(),
            notes: [("a".to_string(), "b".to_string())].into(),
        })
        .collect();
    old.save_all(&decks).await.unwrap();
    let plan = store(&target)
        .await
        .schema()
        .plan::<deck_v2::Deck>()
        .await
        .unwrap();
    assert_eq!(plan.entities, Some(300), "{plan}");
}

/// A type without indexes keeps no set of ids: the plan of its first index
/// counts its entities by a SCAN of the keyspace (each once, though a
/// strings-layout entity has a key per column), and says how long the walk
/// takes at the measured rate.
#[tokio::test]
async fn a_plan_counts_the_entities_of_a_type_without_indexes() {
    let target = Target::start();
    let old = store(&target).await;
    let cards: Vec<card_v1::Card> = (0..1200)
        .map(|id| card_v1::Card {
            id,
            color: "red".into(),
            owner: format!("o{id}"),
        })
        .collect();
    old.save_all(&cards).await.unwrap();
    let new = store(&target).await;
    let plan = new.schema().plan::<card_v2::Card>().await.unwrap();
    assert_eq!(plan.build, ["color"], "{plan}");
    assert_eq!(plan.entities, Some(1200), "{plan}");
    let estimate = plan.estimate().expect("an estimate");
    assert_eq!(
        estimate,
        Duration::from_secs_f64(1200.0 / redis_entity::evolution::APPLY_RATE as f64)
    );
    assert!(
        plan.to_string()
            .contains("walks 1200 stored entities, about 0.0 s at"),
        "{plan}"
    );
}
