//! Walking every entity of a type with a cursor (bounded pages, resumable,
//! no rereading), and deleting what a query matches in atomic batches.
//! Runs on one server, and with `scripts/test.sh --cluster` on a 3-master
//! cluster, where sessions are walked shard after shard and notes master
//! after master.

use redis_entity::{AnyConnection, RedisEntity, Store};
use std::collections::BTreeSet;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "session")]
struct Session {
    #[pk]
    id: u64,
    #[index]
    user: u64,
    #[index(sorted)]
    at: f64,
}

/// No index: walked by SCAN of its keys.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", prefix = "note")]
struct Note {
    #[pk]
    id: u64,
    text: String,
    tag: Option<String>,
}

fn session(id: u64) -> Session {
    Session {
        id,
        user: id % 3,
        at: id as f64,
    }
}

async fn walk<E: redis_entity::Entity>(
    store: &Store<AnyConnection>,
    count: usize,
) -> (Vec<E>, usize) {
    let mut scan = store.query::<E>().scan(count);
    let (mut all, mut pages) = (Vec::new(), 0);
    while let Some(page) = scan.next_page().await.unwrap() {
        pages += 1;
        // SCAN may give a few times COUNT while Redis rehashes a table
        // that just grew (it walks both tables): near, not exactly.
        assert!(
            page.len() <= count * 8,
            "a page stays near its size: {} for {count}",
            page.len()
        );
        all.extend(page.into_iter().map(Result::unwrap));
    }
    assert_eq!(scan.cursor(), 0);
    assert!(scan.next_page().await.unwrap().is_none());
    (all, pages)
}

#[tokio::test]
async fn a_scan_walks_every_entity_once_in_bounded_pages() {
    let server = Target::start();
    let store = server.store().await;
    let sessions: Vec<Session> = (1..=1200).map(session).collect();
    store.save_all(&sessions).await.unwrap();
    let (all, pages) = walk::<Session>(&store, 100).await;
    assert!(pages >= 6, "{pages} pages");
    let ids: BTreeSet<u64> = all.iter().map(|s| s.id).collect();
    assert_eq!(ids, (1..=1200).collect());
    assert_eq!(all.len(), 1200, "SSCAN of a set returns each member once");

    // Without indexes: by SCAN of the keys (columns name their entity too).
    let notes: Vec<Note> = (1..=300)
        .map(|id| Note {
            id,
            text: format!("n{id}"),
            tag: (id % 2 == 0).then(|| "even".into()),
        })
        .collect();
    store.save_all(&notes).await.unwrap();
    let (all, _) = walk::<Note>(&store, 50).await;
    let got: BTreeSet<u64> = all.iter().map(|n| n.id).collect();
    assert_eq!(got, (1..=300).collect());
    assert!(all.iter().all(|n| notes[(n.id - 1) as usize] == *n));
}

#[tokio::test]
async fn a_scan_resumes_from_its_cursor_and_keeps_going_past_a_corrupt_record() {
    // More than 512 integer ids: Redis keeps them in a hash table, which
    // SSCAN pages (a small set comes back whole, whatever COUNT says).
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&(1..=1000).map(session).collect::<Vec<_>>())
        .await
        .unwrap();
    let seven = store.keys().of::<Session>(7).base;
    if !server.is_cluster() {
        assert_eq!(seven, "session:7");
    }
    let () = redis::cmd("HSET")
        .arg(&seven)
        .arg("at")
        .arg("soon")
        .query(&mut server.conn())
        .unwrap();
    let mut first = store.query::<Session>().scan(50);
    let page = first.next_page().await.unwrap().unwrap();
    let cursor = first.cursor();
    assert_ne!(cursor, 0);
    let mut seen: Vec<u64> = page
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|s| s.id)
        .collect();
    let mut bad = page.iter().filter(|r| r.is_err()).count();
    // Later, from the cursor.
    let mut rest = store.query::<Session>().scan(50).resume_at(cursor);
    while let Some(page) = rest.next_page().await.unwrap() {
        for r in page {
            match r {
                Ok(s) => seen.push(s.id),
                Err(e) => {
                    assert!(e.to_string().contains(&seven), "{e}");
                    bad += 1;
                }
            }
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(bad, 1);
    assert_eq!(seen.len(), 999);
    assert!(!seen.contains(&7));
}

#[tokio::test]
async fn delete_by_query_removes_every_match_and_its_entries() {
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&(1..=1100).map(session).collect::<Vec<_>>())
        .await
        .unwrap();
    // user 1: ids 1, 4, 7, ... (367 of them), more than one batch.
    let deleted = store
        .query::<Session>()
        .eq(Session::USER, 1u64)
        .delete()
        .await
        .unwrap();
    assert_eq!(deleted, 367);
    assert_eq!(
        store
            .query::<Session>()
            .eq(Session::USER, 1u64)
            .count()
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.get::<Session>(&4).await.unwrap(), None);
    assert_eq!(store.get::<Session>(&5).await.unwrap(), Some(session(5)));
    let keys = server.keys();
    if !server.is_cluster() {
        assert!(
            !keys.contains(&"session:@user:1".to_string()),
            "emptied index set"
        );
    }
    // No part of the set in any shard's space either.
    let user_1 = Session::USER.key(1u64);
    let in_shard = format!("}}:{user_1}");
    let left: Vec<&String> = keys
        .iter()
        .filter(|k| **k == user_1 || (k.starts_with('{') && k.ends_with(&in_shard)))
        .collect();
    assert!(left.is_empty(), "emptied index set: {left:?}");
    // The sets of the users left are there (so the filter finds them).
    let user_2 = Session::USER.key(2u64);
    assert!(
        keys.iter()
            .any(|k| *k == user_2 || (k.starts_with('{') && k.ends_with(&format!("}}:{user_2}")))),
        "{keys:?}"
    );
    // A range with a page deletes that page only.
    let deleted = store
        .query::<Session>()
        .range(Session::AT, ..=10.0)
        .order_asc(Session::AT)
        .limit(0, 3)
        .delete()
        .await
        .unwrap();
    assert_eq!(deleted, 3);
    assert!(store
        .maintenance::<Session>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let (left, _) = walk::<Session>(&store, 200).await;
    assert_eq!(left.len(), 1100 - 367 - 3);
}
