//! An index build at scale, with faults: 100,000 entities written by a
//! definition without indexes; the next definition adds a tag index and a
//! sorted index; while four tasks keep saving, updating and deleting, the
//! applying process is killed mid-walk and the server is killed (`kill -9`,
//! append-only file on) mid-walk; apply resumes and finishes. Queries during
//! the build get the typed error (or partial answers when asked); after it
//! `verify` reports 0 problems and queries equal a scan-and-filter of the
//! data. One server (it restarts the server).

use redis_entity::{Error, Store};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::RedisServer;

/// The deployed definition: its tags stored as a tag list, not yet
/// indexed (`#[redis(tags)]`).
mod before {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "post")]
    pub struct Post {
        #[pk]
        pub id: u64,
        #[redis(tags)]
        pub tags: Vec<String>,
        pub score: i64,
    }
}

/// The next one: a tag index and a sorted index.
mod after {
    #[derive(redis_entity::RedisEntity, Debug, Clone, PartialEq)]
    #[redis(prefix = "post")]
    pub struct Post {
        #[pk]
        pub id: u64,
        #[index]
        pub tags: Vec<String>,
        #[index(sorted)]
        pub score: i64,
    }
}

const N: u64 = 100_000;
const AOF: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

fn tags_of(n: u64) -> Vec<String> {
    (0..(n % 3) + 1)
        .map(|k| format!("t{}", (n + k) % 7))
        .collect()
}

fn post(id: u64, n: u64) -> after::Post {
    after::Post {
        id,
        tags: tags_of(n),
        score: (n % 1000) as i64,
    }
}

async fn connect(server: &RedisServer) -> Store {
    connect_with(server, false).await
}

/// A store announcing its definitions for 300 ms at a time, answering
/// queries on building indexes from what they hold when `partial`.
async fn connect_with(server: &RedisServer, partial: bool) -> Store {
    Store::builder()
        .schema_heartbeat(Duration::from_millis(300))
        .partial_indexes(partial)
        .connect(&server.url())
        .await
        .unwrap()
}

/// Every stored post, read by key through the definition without indexes.
async fn truth(store: &Store) -> Vec<before::Post> {
    let mut out = Vec::new();
    let ids: Vec<u64> = (0..N + 1000).collect();
    for chunk in ids.chunks(5000) {
        out.extend(
            store
                .get_many::<before::Post>(chunk.to_vec())
                .await
                .unwrap()
                .into_iter()
                .flatten(),
        );
    }
    out
}

/// `schema apply` of the new definition in a task of its own, returned
/// once its walk has indexed five pages.
async fn apply_for_five_pages(
    store: &Store,
) -> tokio::task::JoinHandle<redis_entity::Result<redis_entity::evolution::Applied>> {
    let applier = store.clone();
    let (tx, mut pages) = tokio::sync::mpsc::unbounded_channel();
    let run = tokio::spawn(async move {
        applier
            .schema()
            .apply_with::<after::Post>(move |p| {
                if p.step == "indexing stored entities" {
                    let _ = tx.send(p.done);
                }
            })
            .await
    });
    for _ in 0..5 {
        pages.recv().await.expect("a page of the walk");
    }
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_build_under_load_survives_killing_the_applier_and_the_server() {
    let mut server = RedisServer::start_with(&AOF);
    let old = connect(&server).await;
    let posts: Vec<before::Post> = (0..N)
        .map(|id| before::Post {
            id,
            tags: tags_of(id),
            score: (id % 1000) as i64,
        })
        .collect();
    for chunk in posts.chunks(2000) {
        old.save_all(chunk).await.unwrap();
    }
    drop(old);
    // The old processes are gone (their announcement lapses).
    tokio::time::sleep(Duration::from_millis(400)).await;

    let new = connect(&server).await;
    new.save(&post(N, N)).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for t in 0..4u64 {
        let store = new.clone();
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut n = t * 7919;
            let mut done = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 104_729;
                let id = n % (N + 1000);
                // Writes fail while the server restarts: retried by the
                // next round.
                let _ = match n % 4 {
                    0 => store.delete::<after::Post>(id).await.map(drop),
                    1 => store
                        .update::<after::Post>(id)
                        .set(after::Post::SCORE, (n % 5000) as i64)
                        .exec()
                        .await
                        .map(drop),
                    _ => store.save(&post(id, n)).await.map(drop),
                };
                done += 1;
            }
            done
        }));
    }

    // During the build: the typed error, or partial answers when asked.
    match new.find(after::Post::TAGS, "t1").await {
        Err(Error::IndexBuilding { index, .. }) => assert_eq!(index, "tags"),
        other => panic!("expected IndexBuilding, got {:?}", other.map(|v| v.len())),
    }
    // A walk of every post goes through the ids set, which the old
    // definition (no indexes) did not keep: refused as well.
    match new.query::<after::Post>().scan(100).next_page().await {
        Err(Error::IndexBuilding { .. }) => {}
        other => panic!(
            "expected IndexBuilding, got {:?}",
            other.map(|p| p.map(|v| v.len()))
        ),
    }
    let partial = connect_with(&server, true).await;
    let some = partial.find(after::Post::TAGS, "t1").await.unwrap();
    assert!(some.len() < N as usize / 2, "only what was written since");

    // The applying process dies after a few pages of its walk.
    let run = apply_for_five_pages(&new).await;
    run.abort();
    let _ = run.await;
    let walked = new
        .schema()
        .status::<after::Post>()
        .await
        .unwrap()
        .walked
        .expect("the walk's progress is recorded");
    assert!(walked > 0 && walked < N, "{walked}");

    // Resumed, then the server dies mid-walk and comes back from its AOF.
    let run = apply_for_five_pages(&new).await;
    // The restarted server lives to the end of the test (dropping it stops it).
    let _server = tokio::task::spawn_blocking(move || {
        server.restart_with(&AOF);
        server
    })
    .await
    .unwrap();
    // The apply under way failed with the connection, or rode it out.
    let _ = run.await.unwrap();
    let applied = loop {
        match new.schema().apply::<after::Post>().await {
            Ok(a) => break a,
            Err(e) if e.is_connection() => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("apply: {e}"),
        }
    };
    assert!(
        applied.built.is_empty() || applied.built == ["tags", "score"],
        "{applied:?}"
    );
    let status = new.schema().status::<after::Post>().await.unwrap();
    assert!(
        status
            .indexes
            .iter()
            .all(|(_, _, s)| *s == redis_entity::evolution::IndexState::Ready),
        "{status}"
    );

    stop.store(true, Ordering::Relaxed);
    for w in writers {
        assert!(w.await.unwrap() > 0, "every writer wrote");
    }
    let report = new.maintenance::<after::Post>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    let data = truth(&new).await;
    for tag in ["t0", "t3", "t6"] {
        let found: BTreeSet<u64> = new
            .query::<after::Post>()
            .eq(after::Post::TAGS, tag)
            .ids()
            .await
            .unwrap()
            .into_iter()
            .collect();
        let want: BTreeSet<u64> = data
            .iter()
            .filter(|p| p.tags.iter().any(|t| t == tag))
            .map(|p| p.id)
            .collect();
        assert_eq!(found, want, "posts tagged {tag}");
    }
    let found: BTreeSet<u64> = new
        .query::<after::Post>()
        .range(after::Post::SCORE, 100..200)
        .ids()
        .await
        .unwrap()
        .into_iter()
        .collect();
    let want: BTreeSet<u64> = data
        .iter()
        .filter(|p| (100..200).contains(&p.score))
        .map(|p| p.id)
        .collect();
    assert_eq!(found, want, "posts scored in 100..200");
}
