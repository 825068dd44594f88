//! Hybrid fan-out: a timeline that pulls the posts of authors with many
//! followers (`Timeline::pull_above`) gives every reader the page a timeline
//! that pushes everything gives, while a pulled author's post is one write.
//!
//! A model comparison: the same posts go through a push-only timeline and
//! a hybrid one (pulling above 3 followers, both capped at 10) over one
//! follow graph; every reader's `ids`, `page` and `len` must be equal, at
//! every offset. Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER`
//! set on a 3-master cluster (authors and readers in many slots).

use redis_entity::relation::{Relation, Timeline};
use redis_entity::{AnyConnection, RedisEntity, Store};
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "person")]
struct Person {
    #[pk]
    id: u64,
    name: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note")]
struct Note {
    #[pk]
    id: u64,
    text: String,
}

const FOLLOWS: Relation<Person, Person> = Relation::many_to_many("following", "followers");
const PUSHED: Timeline<Person, Note> = Timeline::new("pushed", 10);
const HYBRID: Timeline<Person, Note> = Timeline::new("hybrid", 10).pull_above(3, &FOLLOWS);
const PEOPLE: u64 = 12;

/// Who follows whom: 0 has 11 followers and 1 has 5 (both pulled), 2 has
/// 2 and 3 has 3 (pushed: not above 3).
fn graph() -> Vec<(u64, u64)> {
    let mut follows = Vec::new();
    follows.extend((1..PEOPLE).map(|f| (f, 0)));
    follows.extend((2..=6).map(|f| (f, 1)));
    follows.extend([(3, 2), (4, 2), (0, 3), (5, 3), (7, 3)]);
    follows
}

async fn world(target: &Target) -> Store<AnyConnection> {
    let store = target.store().await;
    let people: Vec<Person> = (0..PEOPLE)
        .map(|id| Person {
            id,
            name: format!("p{id}"),
        })
        .collect();
    store.save_all(&people).await.unwrap();
    for (follower, author) in graph() {
        store
            .relation(&FOLLOWS)
            .relate(&follower, &author)
            .await
            .unwrap();
    }
    store
}

/// 40 notes by authors 0-3 in a fixed shuffled order, each through both
/// timelines.
async fn post_all(store: &Store<AnyConnection>) {
    for id in 1..=40u64 {
        let author = (id * 7 + id / 3) % 4;
        store
            .save(&Note {
                id,
                text: format!("note {id} by {author}"),
            })
            .await
            .unwrap();
        let pushed = store
            .timeline(&PUSHED)
            .push_related(&id, &FOLLOWS, &author)
            .await
            .unwrap();
        let hybrid = store
            .timeline(&HYBRID)
            .push_related(&id, &FOLLOWS, &author)
            .await
            .unwrap();
        assert_eq!(pushed, hybrid, "note {id}: both reach every follower");
    }
}

#[tokio::test]
async fn a_hybrid_timeline_reads_as_a_pushed_one() {
    let target = Target::start();
    let store = world(&target).await;
    post_all(&store).await;
    // A note deleted since: both lists keep its entry, both pages skip it.
    store.delete::<Note>(&39).await.unwrap();
    let (pushed, hybrid) = (store.timeline(&PUSHED), store.timeline(&HYBRID));
    for reader in 0..PEOPLE {
        assert_eq!(
            hybrid.len(&reader).await.unwrap(),
            pushed.len(&reader).await.unwrap(),
            "len of {reader}"
        );
        for (offset, n) in [(0, 10), (0, 3), (2, 5), (7, 10), (10, 5)] {
            let want = pushed.ids(&reader, offset, n).await.unwrap();
            assert_eq!(
                hybrid.ids(&reader, offset, n).await.unwrap(),
                want,
                "ids of {reader} at {offset}+{n}"
            );
            let ids = |notes: Vec<Note>| notes.into_iter().map(|n| n.id).collect::<Vec<_>>();
            assert_eq!(
                ids(hybrid.page(&reader, offset, n).await.unwrap()),
                ids(pushed.page(&reader, offset, n).await.unwrap()),
                "page of {reader} at {offset}+{n}"
            );
        }
    }
    // Reader 5 follows 0, 1 (pulled) and 3 (pushed): the first page mixes
    // them, and only 3's notes were written to 5's own hybrid list.
    let first = hybrid.ids(&5, 0, 10).await.unwrap();
    let authors: std::collections::BTreeSet<u64> =
        first.iter().map(|id| (id * 7 + id / 3) % 4).collect();
    assert_eq!(authors, [0, 1, 3].into(), "{first:?}");
    let mut conn = target.conn();
    let own: Vec<String> = redis::cmd("LRANGE")
        .arg(HYBRID.key(store.keys().namespace(), 5))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    let own_authors: std::collections::BTreeSet<u64> = own
        .iter()
        .map(|id| id.parse::<u64>().unwrap())
        .map(|id| (id * 7 + id / 3) % 4)
        .collect();
    assert_eq!(own_authors, [3].into(), "{own:?}");
}

#[tokio::test]
async fn a_pulled_post_is_one_write_whatever_the_followers() {
    let target = Target::start();
    let store = world(&target).await;
    store
        .save(&Note {
            id: 1,
            text: "hello".into(),
        })
        .await
        .unwrap();
    // Author 0's 11 followers: the post goes to 0's own list alone.
    let reached = store
        .timeline(&HYBRID)
        .push_related(&1, &FOLLOWS, &0)
        .await
        .unwrap();
    assert_eq!(
        reached, 11,
        "the count is of the followers who will read it"
    );
    let lists: Vec<String> = target
        .keys()
        .into_iter()
        .filter(|k| k.contains("hybrid") && !k.contains("timeline"))
        .collect();
    assert_eq!(lists.len(), 1, "{lists:?}");
    assert!(lists[0].ends_with("hybrid@posts"), "{lists:?}");
    for reader in 1..PEOPLE {
        assert_eq!(
            store.timeline(&HYBRID).ids(&reader, 0, 10).await.unwrap(),
            [1],
            "reader {reader}"
        );
    }
    assert!(store
        .timeline(&HYBRID)
        .ids(&0, 0, 10)
        .await
        .unwrap()
        .is_empty());
    // The author's own list goes with the author; `verify` is clean.
    let report = store.maintenance::<Person>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    store.delete::<Person>(&0).await.unwrap();
    assert!(!target.keys().iter().any(|k| k.ends_with("hybrid@posts")));
}
