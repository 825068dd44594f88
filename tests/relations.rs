//! Weibo followers and timelines: relations kept on both sides, cleaned on delete and
//! expiry, one-to-many relations, and pushed timelines. Runs on one server,
//! and with `scripts/test.sh --cluster` on a 3-master cluster, where users and
//! posts share the `weibo` group's slot (`{weibo:0}:user:userid:8:following`).
//! Left on one server: `follow_keeps_both_sides_in_one_round_trip` and
//! `a_post_is_pushed_to_every_follower_and_read_back_with_its_posts` (count
//! round trips with `counted_store`).

#[allow(dead_code)]
#[path = "../examples/weibo.rs"]
mod example;

use example::{users, Post, User, FOLLOWS, PUSHED};
use redis::Commands;
use redis_entity::relation::{Relation, Timeline};
use redis_entity::{AnyConnection, RedisEntity, Store};
use std::time::Duration;
use support::{RedisServer, Target};

fn post(id: u64, author: u64) -> Post {
    Post {
        postid: id,
        userid: author,
        time: 1_596_338_654_824 + id,
        content: format!("post {id}"),
    }
}

/// `<user key>:<name>`, a relation set, timeline or register of user `id`,
/// in the store's layout (`user:userid:8:following`, on a cluster
/// `{weibo:0}:user:userid:8:following`).
fn user_key(store: &Store<AnyConnection>, id: u64, name: &str) -> String {
    format!("{}:{name}", store.keys().of::<User>(id).base)
}

/// True for the entity key of user `id` and every key under it.
fn of_user(store: &Store<AnyConnection>, id: u64, key: &str) -> bool {
    let base = store.keys().of::<User>(id).base;
    key == base || key.starts_with(&format!("{base}:"))
}

/// `family`, a key of `User`'s own families as one server spells it
/// (`user:@expiry`), in the store's layout (`{weibo:0}:user:@expiry` on a
/// cluster).
fn user_family(store: &Store<AnyConnection>, family: &str) -> String {
    let base = store.keys().of::<User>(1).base;
    let space = base
        .strip_suffix(&User::key(&1))
        .expect("the group's space, then the key");
    format!("{space}{family}")
}

fn members(server: &RedisServer, key: &str) -> Vec<u64> {
    let mut m: Vec<u64> = server.conn().smembers(key).unwrap();
    m.sort();
    m
}

#[tokio::test]
async fn follow_keeps_both_sides_in_one_round_trip() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store.save_all(&users()).await.unwrap();
    store.relation(&FOLLOWS).relate(&7, &7).await.unwrap(); // load the script
    store.relation(&FOLLOWS).unrelate(&7, &7).await.unwrap();
    trips.take();
    assert!(store.relation(&FOLLOWS).relate(&8, &9).await.unwrap());
    assert_eq!(trips.take(), 1, "follow is one atomic call");
    assert!(
        !store.relation(&FOLLOWS).relate(&8, &9).await.unwrap(),
        "already following"
    );
    store.relation(&FOLLOWS).relate(&9, &8).await.unwrap();
    store.relation(&FOLLOWS).relate(&7, &9).await.unwrap();
    // The Weibo model's two sets: who 8 follows, who follows 9.
    assert_eq!(members(&server, "user:userid:8:following"), [9]);
    assert_eq!(members(&server, "user:userid:9:followers"), [7, 8]);
    trips.take();
    assert_eq!(store.relation(&FOLLOWS).related(&9).await.unwrap(), [8]);
    assert_eq!(
        store.relation(&FOLLOWS).related_back(&9).await.unwrap(),
        [7, 8]
    );
    assert_eq!(store.relation(&FOLLOWS).mutual(&9).await.unwrap(), [8]);
    assert_eq!(
        trips.take(),
        4,
        "one round trip each; mutual two (the sizes, then SINTER)"
    );
    let followed: Vec<String> = store
        .relation(&FOLLOWS)
        .related_entities(&7)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(followed, ["lisi"]);
    assert!(store.relation(&FOLLOWS).unrelate(&8, &9).await.unwrap());
    assert_eq!(members(&server, "user:userid:9:followers"), [7]);
    assert!(members(&server, "user:userid:8:following").is_empty());
    assert!(!store.relation(&FOLLOWS).unrelate(&8, &9).await.unwrap());
}

#[tokio::test]
async fn deleting_a_user_removes_it_from_every_relation_and_its_timeline() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    store.relation(&FOLLOWS).relate(&9, &8).await.unwrap();
    store.relation(&FOLLOWS).relate(&7, &8).await.unwrap();
    store.save(&post(1, 9)).await.unwrap();
    store
        .timeline(&PUSHED)
        .push_related(&1, &FOLLOWS, &9)
        .await
        .unwrap();
    assert!(store.delete::<User>(&8).await.unwrap());
    assert!(store
        .relation(&FOLLOWS)
        .related_back(&9)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .relation(&FOLLOWS)
        .related(&9)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .relation(&FOLLOWS)
        .related(&7)
        .await
        .unwrap()
        .is_empty());
    let left: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| k.contains("{8}") || of_user(&store, 8, k) || k.contains(":@rel"))
        .collect();
    assert!(
        left.is_empty(),
        "nothing of 8 and no dangling register: {left:?}"
    );
    for u in [7, 9] {
        store.delete::<User>(&u).await.unwrap();
    }
    store.delete::<Post>(&1).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

#[tokio::test]
async fn an_expired_user_is_swept_out_of_relations() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    store
        .expiry::<User>()
        .expire(&8, Duration::from_millis(50))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Reading the followers' profiles already skips the expired one.
    assert!(store
        .get_many::<User>(&store.relation(&FOLLOWS).related_back(&9).await.unwrap())
        .await
        .unwrap()
        .iter()
        .all(Option::is_none));
    assert_eq!(store.maintenance::<User>().sweep(10).await.unwrap(), 1);
    assert!(store
        .relation(&FOLLOWS)
        .related_back(&9)
        .await
        .unwrap()
        .is_empty());
    let left: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| k.contains("{8}") || of_user(&store, 8, k))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Program {
    #[pk]
    id: u64,
    title: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Task {
    #[pk]
    id: u64,
    reward: u32,
}

/// Red packets: one live program has many red-packet tasks.
const TASKS: Relation<Program, Task> = Relation::one_to_many("tasks", "program");

#[tokio::test]
async fn one_to_many_moves_a_child_to_its_new_parent() {
    let server = Target::start();
    let store = server.store().await;
    for id in [1, 2] {
        store
            .save(&Program {
                id,
                title: format!("p{id}"),
            })
            .await
            .unwrap();
    }
    for id in [2, 3] {
        store.save(&Task { id, reward: 5 }).await.unwrap();
        store.relation(&TASKS).relate(&1, &id).await.unwrap();
    }
    assert_eq!(store.relation(&TASKS).related(&1).await.unwrap(), [2, 3]);
    assert_eq!(store.relation(&TASKS).related_back(&3).await.unwrap(), [1]);
    store.relation(&TASKS).relate(&2, &3).await.unwrap();
    assert_eq!(store.relation(&TASKS).related(&1).await.unwrap(), [2]);
    assert_eq!(store.relation(&TASKS).related(&2).await.unwrap(), [3]);
    assert_eq!(
        store.relation(&TASKS).related_back(&3).await.unwrap(),
        [2],
        "one parent at most"
    );
    let tasks = store.relation(&TASKS).related_entities(&2).await.unwrap();
    assert_eq!(tasks, vec![Task { id: 3, reward: 5 }]);
    store.delete::<Program>(&2).await.unwrap();
    assert!(store
        .relation(&TASKS)
        .related_back(&3)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_post_is_pushed_to_every_follower_and_read_back_with_its_posts() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    let many: Vec<User> = (100..1600)
        .map(|userid| User {
            userid,
            username: format!("u{userid}"),
            email: String::new(),
            post_count: 0,
            following_count: 0,
            follower_count: 0,
        })
        .collect();
    store.save_all(&many).await.unwrap();
    store.save_all(&users()).await.unwrap();
    for u in &many {
        store
            .relation(&FOLLOWS)
            .relate(&u.userid, &9)
            .await
            .unwrap();
    }
    for id in 1..=3 {
        store.save(&post(id, 9)).await.unwrap();
    }
    trips.take();
    let n = store
        .timeline(&PUSHED)
        .push_related(&1, &FOLLOWS, &9)
        .await
        .unwrap();
    assert_eq!(n, 1500);
    let taken = trips.take();
    assert!(
        (15..=18).contains(&taken),
        "two walks of the followers, each two SSCAN pages of about 1,000 and a \
         call per 250 owners of each page (checking, then pushing), one call at \
         a time: {taken} round trips"
    );
    store.timeline(&PUSHED).push(&2, &[100, 101]).await.unwrap();
    store.timeline(&PUSHED).push(&3, &[100]).await.unwrap();
    // A post pushed again onto a list it already heads (an owner a paged
    // fan-out meets twice) is listed once.
    assert_eq!(store.timeline(&PUSHED).push(&3, &[100]).await.unwrap(), 1);
    assert_eq!(store.timeline(&PUSHED).len(&100).await.unwrap(), 3);
    trips.take();
    let page = store.timeline(&PUSHED).page(&100, 0, 10).await.unwrap();
    assert_eq!(trips.take(), 2, "a page with its posts");
    assert_eq!(
        page.iter().map(|p| p.postid).collect::<Vec<_>>(),
        [3, 2, 1],
        "newest first"
    );
    assert_eq!(
        store.timeline(&PUSHED).page(&100, 1, 1).await.unwrap()[0].postid,
        2
    );
    // A deleted post disappears from the page.
    store.delete::<Post>(&2).await.unwrap();
    let page = store.timeline(&PUSHED).page(&100, 0, 10).await.unwrap();
    assert_eq!(page.iter().map(|p| p.postid).collect::<Vec<_>>(), [3, 1]);
    // Capped lists keep the newest entries only.
    const SHORT: Timeline<User, Post> = Timeline::new("short", 2);
    for id in 1..=3 {
        store.timeline(&SHORT).push(&id, &[7]).await.unwrap();
    }
    let len: usize = server.conn().llen("user:userid:7:short").unwrap();
    assert_eq!(len, 2);
}

#[tokio::test]
async fn the_example_runs() {
    let server = Target::start();
    example::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

#[tokio::test]
async fn relating_an_entity_that_already_has_a_ttl_makes_it_sweepable() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    // A TTL first (nothing to sweep yet: no relation), then the relation.
    store
        .expiry::<User>()
        .expire(&8, Duration::from_millis(500))
        .await
        .unwrap();
    let expiry = user_family(&store, "user:@expiry");
    if !server.is_cluster() {
        assert_eq!(expiry, "user:@expiry");
    } else {
        assert_eq!(expiry, "{weibo:0}:user:@expiry");
    }
    let tracked: bool = server.conn().exists(&expiry).unwrap();
    assert!(!tracked, "a plain entity with a TTL leaves no bookkeeping");
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(store.maintenance::<User>().sweep(10).await.unwrap(), 1);
    assert!(store
        .relation(&FOLLOWS)
        .related_back(&9)
        .await
        .unwrap()
        .is_empty());
    assert!(
        server
            .keys()
            .iter()
            .all(|k| !k.contains("{8}") && !of_user(&store, 8, k) && *k != expiry),
        "{:?}",
        server.keys()
    );
}

#[tokio::test]
async fn verify_checks_both_sides_of_every_relation() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    store.relation(&FOLLOWS).relate(&7, &9).await.unwrap();
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    // Plant half a relation: 9 no longer lists 8 as a follower.
    let followers9 = user_key(&store, 9, "followers");
    if !server.is_cluster() {
        assert_eq!(followers9, "user:userid:9:followers");
    }
    let _: () = server.conn().srem(&followers9, 8).unwrap();
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert_eq!(
        report.violations,
        vec![redis_entity::verify::Violation::OneSidedRelation {
            key: user_key(&store, 8, "following"),
            member: "9".into()
        }],
        "{report}"
    );
    let repaired = store.maintenance::<User>().repair(&report).await.unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (1, 0), "{repaired}");
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert!(store
        .relation(&FOLLOWS)
        .related(&8)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.relation(&FOLLOWS).related_back(&9).await.unwrap(),
        [7]
    );
}

#[tokio::test]
async fn relating_a_missing_entity_is_an_error_and_writes_nothing() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    let before = server.keys();
    let missing = store.keys().of::<User>(999).base;
    if !server.is_cluster() {
        assert_eq!(missing, User::key(&999));
    } else {
        assert_eq!(missing, "{weibo:0}:user:userid:999");
    }
    for (a, b) in [(8, 999), (999, 8)] {
        match store.relation(&FOLLOWS).relate(&a, &b).await {
            Err(redis_entity::Error::NotFound { key }) => assert_eq!(key, missing),
            other => panic!("relate({a}, {b}): {other:?}"),
        }
    }
    assert_eq!(server.keys(), before, "no set or register was created");
    assert!(store
        .relation(&FOLLOWS)
        .related(&8)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn verify_reports_dangling_members_and_leftovers_and_repair_removes_them() {
    use redis_entity::verify::Violation;
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    store.relation(&FOLLOWS).relate(&7, &9).await.unwrap();
    store.save_all(&[post(1, 9), post(2, 9)]).await.unwrap();
    store.timeline(&PUSHED).push(&1, &[8, 7]).await.unwrap();
    store.timeline(&PUSHED).push(&2, &[8]).await.unwrap();
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());

    // User 9's own keys deleted around the library (its relation sets and
    // register stay); post 1 deleted, which timelines keep listing.
    let own: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| of_user(&store, 9, k) && !k.ends_with("@rel"))
        .filter(|k| !k.ends_with(":followers"))
        .collect();
    assert!(!own.is_empty());
    let _: () = server.conn().del(&own).unwrap();
    assert!(store.delete::<Post>(&1).await.unwrap());

    let report = store.maintenance::<User>().verify().await.unwrap();
    let presence = store.keys().of::<User>(9).columns[0].clone();
    let post1 = store.keys().of::<Post>(1).columns[0].clone();
    if !server.is_cluster() {
        assert_eq!(
            (presence.as_str(), post1.as_str()),
            ("user:userid:9:username", "post:postid:1:userid")
        );
    }
    let dangling = |owner: u64, name: &str, member: &str, entity: &str| Violation::DanglingMember {
        key: user_key(&store, owner, name),
        member: member.into(),
        entity: entity.into(),
        owner: owner.to_string(),
    };
    let mut want = vec![
        Violation::Leftover {
            member: "9".into(),
            keys: vec![
                user_key(&store, 9, "@rel"),
                user_key(&store, 9, "followers"),
            ],
        },
        dangling(7, "following", "9", &presence),
        dangling(8, "following", "9", &presence),
        dangling(7, "pushed", "1", &post1),
        dangling(8, "pushed", "1", &post1),
    ];
    let mut got = report.violations.clone();
    if let Some(Violation::Leftover { keys, .. }) = got.first_mut() {
        keys.sort();
    }
    let text = |v: &Vec<Violation>| {
        let mut t: Vec<String> = v.iter().map(|v| v.to_string()).collect();
        t.sort();
        t
    };
    assert_eq!(text(&got), text(&want), "{report}");
    want.clear();

    let repaired = store.maintenance::<User>().repair(&report).await.unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (5, 0), "{repaired}");
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let keys = server.keys();
    assert!(
        keys.iter().all(|k| !k.contains("{9}")
            && !k.contains("{7}:@rel")
            && !of_user(&store, 9, k)
            && *k != user_key(&store, 7, "@rel")),
        "{keys:?}"
    );
    let pushed: Vec<u64> = server
        .conn()
        .lrange(user_key(&store, 8, "pushed"), 0, -1)
        .unwrap();
    assert_eq!(pushed, [2]);
    let page = store.timeline(&PUSHED).page(&8, 0, 10).await.unwrap();
    assert_eq!(page, [post(2, 9)]);
}

#[tokio::test]
async fn repair_leaves_a_member_that_came_back_since_the_report() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.save(&post(1, 9)).await.unwrap();
    store.timeline(&PUSHED).push(&1, &[8]).await.unwrap();
    store.delete::<Post>(&1).await.unwrap();
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert_eq!(report.violations.len(), 1, "{report}");
    // Post 1 is written again before the repair runs: its entry stays.
    store.save(&post(1, 9)).await.unwrap();
    store.maintenance::<User>().repair(&report).await.unwrap();
    let pushed: Vec<u64> = server
        .conn()
        .lrange(user_key(&store, 8, "pushed"), 0, -1)
        .unwrap();
    assert_eq!(pushed, [1]);
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn races_of_delete_and_relate_end_clean_after_repair() {
    let server = Target::start();
    let store = server.store().await;
    let people: Vec<User> = (1..=20)
        .map(|userid| User {
            userid,
            username: format!("u{userid}"),
            email: format!("u{userid}@example.com"),
            post_count: 0,
            following_count: 0,
            follower_count: 0,
        })
        .collect();
    store.save_all(&people).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let store = store.clone();
        let people = people.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..150u64 {
                let (a, b) = ((i * 7 + t) % 20 + 1, (i * 13 + t * 3) % 20 + 1);
                match (i + t) % 3 {
                    // A missing side is a typed error, never half a relation.
                    0 => match store.relation(&FOLLOWS).relate(&a, &b).await {
                        Ok(_) | Err(redis_entity::Error::NotFound { .. }) => {}
                        Err(e) => panic!("{e}"),
                    },
                    1 => {
                        store.delete::<User>(&b).await.unwrap();
                    }
                    _ => {
                        store.save(&people[(b - 1) as usize]).await.unwrap();
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let report = store.maintenance::<User>().verify().await.unwrap();
    let repaired = store.maintenance::<User>().repair(&report).await.unwrap();
    assert!(repaired.left.is_empty(), "{repaired}");
    let after = store.maintenance::<User>().verify().await.unwrap();
    assert!(after.is_clean(), "{after}");
    // Every relation that is left joins two stored users, both ways.
    for u in 1..=20u64 {
        let stored = store.exists::<User>(&u).await.unwrap();
        let following = store.relation(&FOLLOWS).related(&u).await.unwrap();
        assert!(stored || following.is_empty(), "{u} is gone but follows");
        for f in following {
            assert!(store.exists::<User>(&f).await.unwrap());
            assert!(store
                .relation(&FOLLOWS)
                .related_back(&f)
                .await
                .unwrap()
                .contains(&u));
        }
    }
}

#[tokio::test]
async fn verify_and_repair_report_their_progress() {
    use redis_entity::verify::Progress;
    let server = Target::start();
    let store = server.store().await;
    let people: Vec<User> = (1..=1200)
        .map(|userid| User {
            userid,
            username: format!("u{userid}"),
            email: String::new(),
            post_count: 0,
            following_count: 0,
            follower_count: 0,
        })
        .collect();
    store.save_all(&people).await.unwrap();
    for u in 2..=1200u64 {
        store.relation(&FOLLOWS).relate(&u, &1).await.unwrap();
    }
    let mut seen: Vec<Progress> = Vec::new();
    let report = store
        .maintenance::<User>()
        .verify_with(|p| seen.push(*p))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report}");
    // Entities read a SCAN page at a time, in rounds of at most 500, each
    // reported with the count read so far (a SCAN does not know the total).
    let reads: Vec<(usize, Option<usize>)> = seen
        .iter()
        .filter(|p| p.step == "reading entities")
        .map(|p| (p.done, p.total))
        .collect();
    assert!(reads.len() >= 3, "{reads:?}");
    assert!(reads.iter().all(|(_, total)| total.is_none()), "{reads:?}");
    assert!(
        reads
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[1].0 - w[0].0 <= 500),
        "{reads:?}"
    );
    assert_eq!(
        seen.last().map(|p| (p.step, p.done, p.total)),
        Some(("done", 1200, Some(1200)))
    );
    assert!(seen
        .iter()
        .any(|p| p.step == "checking the members they list"));
    assert_eq!(seen.last().map(|p| p.step), Some("done"));

    // 1,199 dangling members once user 1 is deleted around the library.
    let own: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| store.keys().of::<User>(1).columns.contains(k))
        .collect();
    let _: () = server.conn().del(&own).unwrap();
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert_eq!(
        report.violations.len(),
        1200,
        "1,199 members and a leftover"
    );
    let mut steps: Vec<(usize, Option<usize>)> = Vec::new();
    let repaired = store
        .maintenance::<User>()
        .repair_with(&report, |p| steps.push((p.done, p.total)))
        .await
        .unwrap();
    assert_eq!(repaired.fixed, 1200, "{repaired}");
    // One sweep, then 1,199 + 2 removals: four rounds of at most 500.
    assert_eq!(
        steps,
        [
            (1, Some(1202)),
            (501, Some(1202)),
            (1001, Some(1202)),
            (1202, Some(1202))
        ]
    );
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn relation_membership_and_counts_and_timeline_length_and_ids() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    store.relation(&FOLLOWS).relate(&7, &9).await.unwrap();
    store.relation(&FOLLOWS).relate(&9, &8).await.unwrap();
    assert!(store.relation(&FOLLOWS).is_related(&8, &9).await.unwrap());
    assert!(!store.relation(&FOLLOWS).is_related(&9, &7).await.unwrap());
    assert_eq!(store.relation(&FOLLOWS).related_count(&9).await.unwrap(), 1);
    assert_eq!(
        store
            .relation(&FOLLOWS)
            .related_back_count(&9)
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.relation(&FOLLOWS).related_count(&7).await.unwrap(), 1);
    assert_eq!(
        store
            .relation(&FOLLOWS)
            .related_back_count(&7)
            .await
            .unwrap(),
        0
    );

    for id in 1..=3 {
        store.save(&post(id, 9)).await.unwrap();
        store.timeline(&PUSHED).push(&id, &[8]).await.unwrap();
    }
    assert_eq!(store.timeline(&PUSHED).len(&8).await.unwrap(), 3);
    assert_eq!(store.timeline(&PUSHED).len(&7).await.unwrap(), 0);
    assert_eq!(
        store.timeline(&PUSHED).ids(&8, 0, 10).await.unwrap(),
        [3, 2, 1]
    );
    assert_eq!(store.timeline(&PUSHED).ids(&8, 1, 1).await.unwrap(), [2]);
    assert!(store
        .timeline(&PUSHED)
        .ids(&8, 0, 0)
        .await
        .unwrap()
        .is_empty());
    // A deleted post still has its entry (the timeline is not rewritten on
    // delete): its id is listed, the page of posts skips it.
    store.delete::<Post>(&2).await.unwrap();
    assert_eq!(
        store.timeline(&PUSHED).ids(&8, 0, 10).await.unwrap(),
        [3, 2, 1]
    );
    let page = store.timeline(&PUSHED).page(&8, 0, 10).await.unwrap();
    assert_eq!(page, [post(3, 9), post(1, 9)]);
}

/// The example's `follow` and `publish`: the relation, the pushes and the
/// counters as one unit each, so they never disagree; a refused unit (a
/// missing user) changes nothing.
#[tokio::test]
async fn follows_and_posts_keep_their_counters_in_the_same_unit() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    example::follow(&store, 8, 9).await.unwrap();
    example::follow(&store, 7, 9).await.unwrap();
    let before = server.snapshot();
    let err = example::follow(&store, 8, 99).await.unwrap_err();
    assert!(
        matches!(&err, redis_entity::Error::TransactionRefused { op: 0, .. }),
        "{err:?}"
    );
    assert_eq!(server.snapshot(), before, "a refused follow writes nothing");
    let pushed = example::publish(&store, &post(1, 9)).await.unwrap();
    assert_eq!(pushed, 2);
    let nine = store.get::<User>(&9).await.unwrap().unwrap();
    assert_eq!((nine.follower_count, nine.post_count), (2, 1));
    assert_eq!(
        nine.follower_count,
        store
            .relation(&FOLLOWS)
            .related_back_count(&9)
            .await
            .unwrap()
    );
    for follower in [7u64, 8] {
        let u = store.get::<User>(&follower).await.unwrap().unwrap();
        assert_eq!(u.following_count, 1);
        assert_eq!(
            store.timeline(&PUSHED).ids(follower, 0, 10).await.unwrap(),
            [1]
        );
    }
}

/// One rule for every push: an owner that does not exist (never saved,
/// deleted, expired) is skipped, no list is made for it, and the push says
/// how many lists got the post; alike in `push`, `push_related` and a
/// unit's `push` (where an owner saved earlier in the unit exists).
#[tokio::test]
async fn a_push_skips_owners_that_do_not_exist() {
    let server = Target::start();
    let store = server.store().await;
    store.save_all(&users()).await.unwrap();
    store.save(&post(1, 9)).await.unwrap();
    let pushed = store.timeline(&PUSHED).push(&1, [8u64, 404]).await.unwrap();
    assert_eq!(pushed, 1, "8 exists, 404 does not");
    assert_eq!(store.timeline(&PUSHED).ids(&8, 0, 10).await.unwrap(), [1]);
    let left: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| of_user(&store, 404, k))
        .collect();
    assert!(left.is_empty(), "keys made for a missing owner: {left:?}");
    // A follower that expired (its relation sets are kept until a sweep).
    store.relation(&FOLLOWS).relate(&7, &9).await.unwrap();
    store.relation(&FOLLOWS).relate(&8, &9).await.unwrap();
    store
        .expiry::<User>()
        .expire(&7, Duration::from_millis(20))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    let pushed = store
        .timeline(&PUSHED)
        .push_related(&1, &FOLLOWS, &9)
        .await
        .unwrap();
    assert_eq!(pushed, 1, "only 8: 7 expired");
    assert!(!server.keys().contains(&user_key(&store, 7, "pushed")));
    // In a unit: 6 is saved by the unit's first operation, 405 never is.
    let mut six = users()[0].clone();
    six.userid = 6;
    store
        .transaction()
        .save(&six)
        .push(&PUSHED, 1, [6u64, 405])
        .exec()
        .await
        .unwrap();
    assert_eq!(store.timeline(&PUSHED).ids(&6, 0, 10).await.unwrap(), [1]);
    assert!(!server.keys().iter().any(|k| of_user(&store, 405, k)));
}

#[tokio::test]
async fn mutual_follows_of_two_big_sets_come_in_pages_never_one_sinter() {
    let server = RedisServer::start();
    // Pages of about 10: 600 follows each way is big for this store (and
    // more than a set of ids Redis keeps as one block, which SSCAN
    // returns whole).
    let store = Store::builder()
        .members_per_call(10)
        .connect(&server.url())
        .await
        .unwrap();
    let mut all = users();
    let template = all[0].clone();
    for id in 100..1000u64 {
        let mut u = template.clone();
        u.userid = id;
        u.username = format!("user{id}");
        all.push(u);
    }
    store.save_all(&all).await.unwrap();
    let follows = store.relation(&FOLLOWS);
    // 8 follows 100..700, and is followed by 400..1000 and by 7: the
    // mutual ones are 400..700.
    for id in 100..700u64 {
        follows.relate(&8, &id).await.unwrap();
    }
    for id in (400..1000u64).chain([7]) {
        follows.relate(&id, &8).await.unwrap();
    }
    let sinter = server.calls("sinter");
    let got = follows.mutual(&8).await.unwrap();
    assert_eq!(got, (400..700u64).collect::<Vec<_>>());
    assert_eq!(server.calls("sinter"), sinter, "no SINTER of two big sets");
    assert!(server.calls("sscan") >= 3, "the smaller set in pages");
    assert!(server.calls("smismember") >= 3, "each page looked up");
    // A small side is one SINTER (it walks the smaller set).
    follows.relate(&9, &8).await.unwrap();
    follows.relate(&8, &9).await.unwrap();
    assert_eq!(follows.mutual(&9).await.unwrap(), [8]);
    assert_eq!(server.calls("sinter"), sinter + 1);
}
