//! Relations and timelines whose two sides live in different slots of a
//! 3-master cluster (types of many index shards): each side is one atomic
//! call, owner first; deletes and sweeps clean the other sides per slot;
//! what an interrupted pair of calls leaves is reported by `verify` and
//! fixed by `repair`; a side that holds a key of the wrong type refuses the
//! pair with nothing changed (the first call is taken back).

use redis::AsyncCommands;
use redis_entity::relation::{Relation, Timeline};
use redis_entity::verify::Violation;
use redis_entity::{Error, RedisEntity, Store};
use std::collections::BTreeSet;
use std::time::Duration;
use support::RedisCluster;

/// Sharded (an index, 8 shards): members of one relation live in many slots.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "fan", shards = 8)]
struct Fan {
    #[pk]
    id: u64,
    #[index]
    city: String,
}

/// Another sharded type, for a relation between two types.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "club", shards = 4)]
struct Club {
    #[pk]
    id: u64,
    #[index]
    league: String,
}

/// Without indexes: one hash tag per entity (`note:{7}`).
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note")]
struct Note {
    #[pk]
    id: u64,
    text: String,
}

const FOLLOWS: Relation<Fan, Fan> = Relation::many_to_many("following", "followers");
/// Each fan plays for at most one club.
const SQUAD: Relation<Club, Fan> = Relation::one_to_many("squad", "club");
const FEED: Timeline<Fan, Note> = Timeline::new("feed", 50);

fn fan(id: u64) -> Fan {
    Fan {
        id,
        city: if id.is_multiple_of(2) { "Rome" } else { "Oslo" }.into(),
    }
}

fn club(id: u64) -> Club {
    Club {
        id,
        league: "A".into(),
    }
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort();
    v
}

async fn started() -> (RedisCluster, Store<redis::cluster_async::ClusterConnection>) {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    store
        .save_all(&(1..=12).map(fan).collect::<Vec<_>>())
        .await
        .unwrap();
    (cluster, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relations_between_shards_keep_both_sides() {
    let (_cluster, store) = started().await;
    let tags: BTreeSet<String> = (1..=12u64)
        .map(|id| {
            store
                .keys()
                .of::<Fan>(id)
                .base
                .split('}')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(tags.len() > 3, "the fans live in many slots: {tags:?}");

    // Everyone follows 1; 1 follows the even ones.
    for id in 2..=12u64 {
        assert!(store.relation(&FOLLOWS).relate(id, 1).await.unwrap());
    }
    assert!(
        !store.relation(&FOLLOWS).relate(2, 1).await.unwrap(),
        "not new"
    );
    for id in (2..=12u64).step_by(2) {
        assert!(store.relation(&FOLLOWS).relate(1, id).await.unwrap());
    }
    assert_eq!(
        sorted(store.relation(&FOLLOWS).related_back(1).await.unwrap()),
        (2..=12).collect::<Vec<_>>()
    );
    assert_eq!(store.relation(&FOLLOWS).related(3).await.unwrap(), vec![1]);
    assert_eq!(
        sorted(store.relation(&FOLLOWS).mutual(1).await.unwrap()),
        vec![2, 4, 6, 8, 10, 12]
    );
    assert!(store.relation(&FOLLOWS).is_related(5, 1).await.unwrap());
    let entities = store.relation(&FOLLOWS).related_entities(1).await.unwrap();
    assert_eq!(entities.len(), 6);

    // Unrelate: both sides, and an emptied set leaves its register.
    assert!(store.relation(&FOLLOWS).unrelate(3, 1).await.unwrap());
    assert!(!store.relation(&FOLLOWS).unrelate(3, 1).await.unwrap());
    assert!(store
        .relation(&FOLLOWS)
        .related(3)
        .await
        .unwrap()
        .is_empty());
    assert!(!store
        .relation(&FOLLOWS)
        .related_back(1)
        .await
        .unwrap()
        .contains(&3));
    let register = format!("{}:@rel", store.keys().of::<Fan>(3).base);
    let n: i64 = store.connection().exists(&register).await.unwrap();
    assert_eq!(n, 0, "{register} left behind");

    // A missing side: NotFound naming it, nothing written on either side.
    let err = store.relation(&FOLLOWS).relate(5, 99).await.unwrap_err();
    let missing = store.keys().of::<Fan>(99).base;
    assert!(
        matches!(&err, Error::NotFound { key } if *key == missing),
        "{err:?}"
    );
    assert_eq!(store.relation(&FOLLOWS).related(5).await.unwrap(), vec![1]);
    let err = store.relation(&FOLLOWS).relate(99, 5).await.unwrap_err();
    assert!(
        matches!(&err, Error::NotFound { key } if *key == missing),
        "{err:?}"
    );
    assert_eq!(
        store.relation(&FOLLOWS).related_back(5).await.unwrap(),
        Vec::<u64>::new()
    );

    // Deleting 1 takes it out of every other side, in every slot.
    assert!(store.delete::<Fan>(1).await.unwrap());
    for id in 2..=12u64 {
        assert!(
            store
                .relation(&FOLLOWS)
                .related(id)
                .await
                .unwrap()
                .is_empty(),
            "{id}"
        );
        assert!(
            store
                .relation(&FOLLOWS)
                .related_back(id)
                .await
                .unwrap()
                .is_empty(),
            "{id}"
        );
    }
    let report = store.maintenance::<Fan>().verify().await.unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_to_many_across_slots_moves_a_member_to_its_new_owner() {
    let (_cluster, store) = started().await;
    store.save_all(&[club(1), club(2), club(3)]).await.unwrap();
    for id in 1..=6u64 {
        store.relation(&SQUAD).relate(1, id).await.unwrap();
    }
    store.relation(&SQUAD).relate(2, 3).await.unwrap();
    store.relation(&SQUAD).relate(3, 4).await.unwrap();
    assert_eq!(
        sorted(store.relation(&SQUAD).related(1).await.unwrap()),
        vec![1, 2, 5, 6]
    );
    assert_eq!(store.relation(&SQUAD).related(2).await.unwrap(), vec![3]);
    assert_eq!(
        store.relation(&SQUAD).related_back(3).await.unwrap(),
        vec![2]
    );
    assert_eq!(
        store.relation(&SQUAD).related_back(4).await.unwrap(),
        vec![3]
    );
    // Relating again to the same owner keeps it.
    store.relation(&SQUAD).relate(2, 3).await.unwrap();
    assert_eq!(
        store.relation(&SQUAD).related_back(3).await.unwrap(),
        vec![2]
    );
    // A missing fan: the club's side is taken back.
    assert!(matches!(
        store.relation(&SQUAD).relate(2, 77).await.unwrap_err(),
        Error::NotFound { .. }
    ));
    assert_eq!(store.relation(&SQUAD).related(2).await.unwrap(), vec![3]);
    // Deleting a club frees its fans.
    assert!(store.delete::<Club>(1).await.unwrap());
    for id in [1, 2, 5, 6] {
        assert!(store
            .relation(&SQUAD)
            .related_back(id)
            .await
            .unwrap()
            .is_empty());
    }
    assert!(store
        .maintenance::<Club>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert!(store
        .maintenance::<Fan>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timelines_across_slots_and_an_expired_member_swept() {
    let (_cluster, store) = started().await;
    for id in 2..=12u64 {
        store.relation(&FOLLOWS).relate(id, 1).await.unwrap();
    }
    let note = Note {
        id: 7,
        text: "hi".into(),
    };
    store.save(&note).await.unwrap();
    assert_eq!(
        store
            .timeline(&FEED)
            .push_related(7, &FOLLOWS, 1)
            .await
            .unwrap(),
        11
    );
    for id in 2..=12u64 {
        assert_eq!(
            store.timeline(&FEED).page(id, 0, 10).await.unwrap(),
            vec![note.clone()]
        );
    }
    // A deleted note stays listed until repair removes it (the timelines
    // are their owners' alone): verify names it.
    assert!(store.delete::<Note>(7).await.unwrap());
    let report = store.maintenance::<Fan>().verify().await.unwrap();
    let dangling = report
        .violations
        .iter()
        .filter(|v| matches!(v, Violation::DanglingMember { member, .. } if member == "7"))
        .count();
    assert_eq!(dangling, 11, "{:?}", report.violations);
    let repaired = store.maintenance::<Fan>().repair(&report).await.unwrap();
    assert!(repaired.left.is_empty(), "{:?}", repaired.left);
    assert_eq!(store.timeline(&FEED).len(2).await.unwrap(), 0);
    assert!(store
        .maintenance::<Fan>()
        .verify()
        .await
        .unwrap()
        .is_clean());

    // An expired follower leaves the followed one's set when swept.
    store
        .expiry::<Fan>()
        .expire(5, Duration::from_millis(50))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(store.maintenance::<Fan>().sweep(100).await.unwrap(), 1);
    assert!(!store
        .relation(&FOLLOWS)
        .related_back(1)
        .await
        .unwrap()
        .contains(&5));
    assert!(store
        .maintenance::<Fan>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_pair_of_calls_is_reported_and_repaired() {
    let (_cluster, store) = started().await;
    store.relation(&FOLLOWS).relate(2, 3).await.unwrap();
    store.relation(&FOLLOWS).relate(4, 5).await.unwrap();
    let mut conn = store.connection();
    let key = |id: u64| store.keys().of::<Fan>(id).base;

    // A crash after the owner's call of a relate: 6's set lists 7, 7's
    // does not list 6 back.
    let entry: String = conn
        .hget(format!("{}:@rel", key(2)), "following")
        .await
        .unwrap();
    let plant = |owner: u64, member: &'static str| {
        let mut conn = store.connection();
        let (set, register) = (
            format!("{}:following", key(owner)),
            format!("{}:@rel", key(owner)),
        );
        let entry = entry.clone();
        async move {
            let () = conn.sadd(&set, member).await.unwrap();
            let () = conn.hset(&register, "following", &entry).await.unwrap();
        }
    };
    plant(6, "7").await;
    // A crash after a delete of 5, before its other sides were cleaned: 4's
    // set still lists 5.
    assert!(store.delete::<Fan>(5).await.unwrap());
    assert!(store
        .relation(&FOLLOWS)
        .related(4)
        .await
        .unwrap()
        .is_empty());
    plant(4, "5").await;

    let report = store.maintenance::<Fan>().verify().await.unwrap();
    let mut found: Vec<String> = report
        .violations
        .iter()
        .map(|v| match v {
            Violation::OneSidedRelation { key, member } => format!("one-sided {key} {member}"),
            Violation::DanglingMember { key, member, .. } => format!("dangling {key} {member}"),
            other => format!("{other:?}"),
        })
        .collect();
    found.sort();
    let mut expected = vec![
        format!("dangling {}:following 5", key(4)),
        format!("one-sided {}:following 7", key(6)),
    ];
    expected.sort();
    assert_eq!(found, expected);
    let repaired = store.maintenance::<Fan>().repair(&report).await.unwrap();
    assert_eq!(repaired.fixed, 2);
    assert!(repaired.left.is_empty(), "{:?}", repaired.left);
    assert!(store
        .relation(&FOLLOWS)
        .related(4)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .relation(&FOLLOWS)
        .related(6)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.relation(&FOLLOWS).related(2).await.unwrap(), vec![3]);
    let report = store.maintenance::<Fan>().verify().await.unwrap();
    assert!(report.is_clean(), "{:?}", report.violations);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_type_on_the_other_side_across_slots_changes_nothing() {
    let (cluster, store) = started().await;
    let key = |id: u64| store.keys().of::<Fan>(id).base;
    let tag = |k: String| k[k.find('{').unwrap()..=k.find('}').unwrap()].to_owned();
    // Two fans whose keys are in other slots than 1's.
    let apart: Vec<u64> = (2..=12).filter(|&id| tag(key(id)) != tag(key(1))).collect();
    let (first, second) = (apart[0], apart[1]);
    store.relation(&FOLLOWS).relate(1, first).await.unwrap();
    // `second`'s reverse set, in another slot than 1's keys, holds a string.
    let planted = format!("{}:followers", key(second));
    let () = redis::cmd("SET")
        .arg(&planted)
        .arg("x")
        .query(&mut cluster.conn())
        .unwrap();
    let before = cluster.snapshot();
    let err = store
        .relation(&FOLLOWS)
        .relate(1, second)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::WrongType { key, .. } if *key == planted),
        "{err:?}"
    );
    assert_eq!(
        cluster.snapshot(),
        before,
        "relate across slots: nothing changed"
    );

    // The same for an unrelate whose second side is planted.
    let planted = format!("{}:followers", key(first));
    let () = redis::cmd("DEL")
        .arg(&planted)
        .query(&mut cluster.conn())
        .unwrap();
    let () = redis::cmd("SET")
        .arg(&planted)
        .arg("x")
        .query(&mut cluster.conn())
        .unwrap();
    let before = cluster.snapshot();
    let err = store
        .relation(&FOLLOWS)
        .unrelate(1, first)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::WrongType { key, .. } if *key == planted),
        "{err:?}"
    );
    assert_eq!(
        cluster.snapshot(),
        before,
        "unrelate across slots: nothing changed"
    );
}
