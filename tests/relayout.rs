//! Moving a keyspace between the two key layouts: from one server to a
//! 3-master cluster and back, entities (maps, TTLs, every index), relations
//! and timelines, resumable by cursor, and through the admin command line.

use redis_entity::admin::Admin;
use redis_entity::relation::{Relation, Timeline};
use redis_entity::{Error, RedisEntity, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{RedisCluster, RedisServer};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user", shards = 4)]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    email: String,
    #[index]
    city: String,
    #[index(sorted)]
    score: f64,
    #[hash]
    settings: BTreeMap<String, String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "post")]
struct Post {
    #[pk]
    id: u64,
    text: String,
}

const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
const FEED: Timeline<User, Post> = Timeline::new("feed", 100);

fn user(id: u64) -> User {
    User {
        id,
        email: format!("u{id}@x"),
        city: ["Rome", "Oslo", "Lima"][(id % 3) as usize].into(),
        score: (id % 7) as f64,
        settings: BTreeMap::from([("theme".to_string(), format!("t{id}"))]),
    }
}

async fn all_users<C>(store: &Store<C>) -> Vec<User>
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync,
{
    let mut users: Vec<User> = store
        .get_many::<User>((1..=700u64).collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    users.sort_by_key(|u| u.id);
    users
}

async fn seed<C>(store: &Store<C>)
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync,
{
    store
        .save_all(&(1..=600).map(user).collect::<Vec<_>>())
        .await
        .unwrap();
    store
        .expiry()
        .save_with_ttl(&user(601), Duration::from_secs(600))
        .await
        .unwrap();
    for id in 2..=20u64 {
        store.relation(&FOLLOWS).relate(id, 1).await.unwrap();
    }
    store.relation(&FOLLOWS).relate(1, 2).await.unwrap();
    for id in [1u64, 2] {
        store
            .save(&Post {
                id,
                text: format!("post {id}"),
            })
            .await
            .unwrap();
    }
    store.timeline(&FEED).push(1, [3u64, 4]).await.unwrap();
    store.timeline(&FEED).push(2, [3u64]).await.unwrap();
}

/// What a keyspace holds, as the API reads it, for comparing two.
#[allow(clippy::type_complexity)]
async fn summary<C>(
    store: &Store<C>,
) -> (Vec<User>, Vec<u64>, Vec<u64>, u64, Vec<u64>, bool, Vec<u64>)
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync,
{
    let mut rome: Vec<u64> = store
        .find(User::CITY, "Rome")
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    rome.sort();
    let mut followers = store.relation(&FOLLOWS).related_back(1).await.unwrap();
    followers.sort();
    let top: Vec<u64> = store
        .board(User::SCORE)
        .top(5)
        .await
        .unwrap()
        .into_iter()
        .map(|(u, _)| u.id)
        .collect();
    let feed: Vec<u64> = store
        .timeline(&FEED)
        .page(3, 0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let ttl = store.expiry::<User>().ttl(601).await.unwrap();
    let owner = store.find_unique(User::EMAIL, "u7@x").await.unwrap();
    (
        all_users(store).await,
        rome,
        followers,
        store.query::<User>().count().await.unwrap(),
        feed,
        ttl.is_some_and(|t| t > Duration::from_secs(500)) && owner.is_some_and(|u| u.id == 7),
        top,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyspace_moves_to_a_cluster_and_back() {
    let server = RedisServer::start();
    let one = Store::connect(&server.url()).await.unwrap();
    seed(&one).await;
    let before = summary(&one).await;
    assert_eq!(before.0.len(), 601);
    assert!(before.5, "ttl and unique lookup before the move");

    let cluster = RedisCluster::start(3);
    let many = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    // Resumable: batch after batch from the reported cursor.
    let (mut cursor, mut copied, mut batches) = (0, 0, 0);
    loop {
        let b = one
            .maintenance::<User>()
            .relayout_batch(&many, cursor, 100)
            .await
            .unwrap();
        assert!(b.failed.is_empty(), "{:?}", b.failed);
        copied += b.migrated;
        batches += 1;
        cursor = b.cursor;
        if b.done {
            break;
        }
    }
    assert_eq!(copied, 601);
    assert!(batches > 1, "walked in pages");
    let posts = one
        .maintenance::<Post>()
        .relayout(&many, 0, 100, |_| {})
        .await
        .unwrap();
    assert_eq!(posts.migrated, 2);
    let pairs = one.relation(&FOLLOWS).relayout(&many, 100).await.unwrap();
    assert_eq!(pairs.migrated, 20);
    assert!(pairs.failed.is_empty());
    let feeds = one.timeline(&FEED).relayout(&many, 100).await.unwrap();
    assert_eq!(feeds.migrated, 2);

    assert_eq!(summary(&many).await, before);
    assert!(many.keys().of::<User>(9).base.starts_with('{'));
    for report in [
        many.maintenance::<User>().verify().await.unwrap(),
        many.maintenance::<Post>().verify().await.unwrap(),
    ] {
        assert!(report.is_clean(), "{:?}", report.violations);
    }

    // And back, to a fresh server, with the admin's command line.
    let back_server = RedisServer::start();
    let admin = Admin::new(many)
        .register::<User>()
        .unwrap()
        .register::<Post>()
        .unwrap();
    let out = admin
        .run(&["relayout".into(), "--to".into(), back_server.url()])
        .await
        .unwrap();
    assert!(
        out.contains("User: 601 entities copied to the standalone layout, 0 failed"),
        "{out}"
    );
    assert!(out.contains("Post: 2 entities copied"), "{out}");
    assert!(
        out.contains("User: compared: 601 in the source, 601 in the destination: 0 missing, 0 extra, 0 differing, 0 unreadable; the same"),
        "{out}"
    );
    let back = Store::connect(&back_server.url()).await.unwrap();
    let keys: BTreeSet<String> = back_server.keys().into_iter().collect();
    assert!(
        keys.contains("user:9") && keys.contains("user:9:settings"),
        "{keys:?}"
    );
    let mut summary_back = summary(&back).await;
    // Relations and timelines move with the typed calls, not the admin.
    summary_back.2 = before.2.clone();
    summary_back.4 = before.4.clone();
    assert_eq!(summary_back, before);
    assert!(back
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

/// An account of the relayout-under-writes scenario: a unique username the
/// writers rename, a balance they increment.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "account", shards = 4)]
struct Account {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    city: String,
    balance: i64,
}

/// The accounts stored, and the ids the writers touch (a few beyond them:
/// saves create accounts while the relayout runs).
const ACCOUNTS: u64 = 3_000;
const IDS: u64 = 3_300;
/// Usernames the writers choose from: a few more than accounts, so a rename
/// often takes a name another account gave up moments before (A->B while
/// B->C) and often collides.
const NAMES: u64 = 3_600;

/// xorshift: deterministic per writer, no extra dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn account(id: u64, name: u64) -> Account {
    Account {
        id,
        username: format!("n{name}"),
        city: ["Rome", "Oslo", "Lima"][(id % 3) as usize].into(),
        balance: 0,
    }
}

/// One writer: saves, renames, deletes and increments on the source until
/// told to stop; returns the writes that succeeded.
async fn writer(store: Store, seed: u64, stop: Arc<AtomicBool>) -> u64 {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((seed + 1) * 7919));
    let mut done = 0;
    while !stop.load(Ordering::Relaxed) {
        let id = 1 + rng.next() % IDS;
        let name = format!("n{}", rng.next() % NAMES);
        let r = match rng.next() % 8 {
            0 | 1 => store.save(&account(id, rng.next() % NAMES)).await.map(drop),
            2 | 3 => {
                store
                    .update::<Account>(&id)
                    .set(Account::USERNAME, name)
                    .exec()
                    .await
            }
            4 => store.delete::<Account>(&id).await.map(drop),
            _ => {
                store
                    .update::<Account>(&id)
                    .incr(Account::BALANCE, 1)
                    .exec()
                    .await
            }
        };
        match r {
            Ok(()) => done += 1,
            Err(Error::UniqueViolation { .. } | Error::NotFound { .. }) => {}
            Err(e) => panic!("writer {seed}: {e}"),
        }
    }
    done
}

/// Every account a store holds, by id.
async fn accounts<C>(store: &Store<C>) -> BTreeMap<u64, Account>
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync,
{
    store
        .get_many::<Account>((1..=IDS).collect::<Vec<_>>())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .map(|a| (a.id, a))
        .collect()
}

/// Missing, extra and differing accounts of `to` against `from`, read
/// through the API (independently of the library's own compare).
fn differences(
    from: &BTreeMap<u64, Account>,
    to: &BTreeMap<u64, Account>,
) -> (usize, usize, usize) {
    let missing = from.keys().filter(|id| !to.contains_key(id)).count();
    let extra = to.keys().filter(|id| !from.contains_key(id)).count();
    let differing = from
        .iter()
        .filter(|(id, a)| to.get(id).is_some_and(|b| b != *a))
        .count();
    (missing, extra, differing)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_relayout_under_eight_writers_converges_after_the_final_pass() {
    let server = RedisServer::start();
    let source = Store::connect(&server.url()).await.unwrap();
    let seeded: Vec<Account> = (1..=ACCOUNTS).map(|id| account(id, id)).collect();
    source.save_all(&seeded).await.unwrap();
    let cluster = RedisCluster::start(3);
    let dest = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();

    // Pass 1 while 8 writers save, rename, delete and increment.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|w| tokio::spawn(writer(source.clone(), w, stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pass1 = source
        .maintenance::<Account>()
        .relayout(&dest, 0, 200, |_| {})
        .await
        .unwrap();
    let during = source
        .maintenance::<Account>()
        .relayout_compare(&dest, 200)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Cut-over: the writers stop, a final pass runs.
    stop.store(true, Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    assert!(
        written > 1_000,
        "the writers wrote during pass 1 ({written})"
    );
    eprintln!(
        "pass 1 under {written} writes: {} copied, {} deleted, {} failed; compared then: {during}",
        pass1.migrated,
        pass1.deleted,
        pass1.failed.len()
    );
    let last = source
        .maintenance::<Account>()
        .relayout(&dest, 0, 200, |_| {})
        .await
        .unwrap();
    assert!(last.failed.is_empty(), "final pass: {:?}", last.failed);

    // The compare proves the destination equal to the source, entity by
    // entity; the API's own reads of both sides agree.
    let compared = source
        .maintenance::<Account>()
        .relayout_compare(&dest, 200)
        .await
        .unwrap();
    assert!(compared.is_clean(), "{compared}");
    let (from, to) = (accounts(&source).await, accounts(&dest).await);
    assert!(from.len() > 1_000, "{} accounts", from.len());
    assert_eq!(compared.source, from.len() as u64);
    assert_eq!(compared.destination, from.len() as u64);
    assert_eq!(
        differences(&from, &to),
        (0, 0, 0),
        "missing, extra, differing after pass 1 ({} failed) and the final pass",
        pass1.failed.len()
    );
    let report = dest.maintenance::<Account>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, from.len());
    for a in from.values().take(50) {
        let owner = dest
            .find_unique(Account::USERNAME, a.username.clone())
            .await
            .unwrap();
        assert_eq!(owner.as_ref(), Some(a));
    }

    // A pass with nothing left to do writes nothing.
    let again = source
        .maintenance::<Account>()
        .relayout(&dest, 0, 200, |_| {})
        .await
        .unwrap();
    assert_eq!((again.migrated, again.deleted), (0, 0), "{again:?}");
    assert_eq!(again.skipped, from.len() as u64);
}

/// A handle of the rename-chain scenario: a unique name and a version.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "handle")]
struct Handle {
    #[pk]
    id: u64,
    #[index(unique)]
    name: String,
    #[version]
    version: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_pass_follows_swaps_rename_chains_deletes_and_versions() {
    let server = RedisServer::start();
    let source = Store::connect(&server.url()).await.unwrap();
    for id in 1..=6u64 {
        let h = Handle {
            id,
            name: format!("h{id}"),
            version: 0,
        };
        source.save(&h).await.unwrap();
    }
    source
        .expiry::<Handle>()
        .expire(6, Duration::from_secs(600))
        .await
        .unwrap();
    let cluster = RedisCluster::start(3);
    let dest = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    let first = source
        .maintenance::<Handle>()
        .relayout(&dest, 0, 100, |_| {})
        .await
        .unwrap();
    assert_eq!((first.migrated, first.failed.len()), (6, 0));
    // The version is copied as stored, not bumped by the copy.
    assert_eq!(dest.get::<Handle>(1).await.unwrap().unwrap().version, 1);

    // Since: 1 and 2 swap names (through a third), 3 takes 4's name while 4
    // takes a new one (a chain), 5 goes, 7 comes, 6 loses its TTL.
    let rename = |id: u64, name: &'static str| {
        let source = source.clone();
        async move {
            source
                .update::<Handle>(&id)
                .set(Handle::NAME, name)
                .exec()
                .await
                .unwrap()
        }
    };
    rename(1, "tmp").await;
    rename(2, "h1").await;
    rename(1, "h2").await;
    rename(4, "h9").await;
    rename(3, "h4").await;
    source.delete::<Handle>(5).await.unwrap();
    let seven = Handle {
        id: 7,
        name: "h3".into(),
        version: 0,
    };
    source.save(&seven).await.unwrap();
    source.expiry::<Handle>().persist(6).await.unwrap();
    let stale = source
        .maintenance::<Handle>()
        .relayout_compare(&dest, 100)
        .await
        .unwrap();
    assert_eq!(
        (stale.missing, stale.extra, stale.differing),
        (1, 1, 5),
        "{stale}"
    );
    assert!(
        stale.examples.iter().any(|e| e.ends_with("handle:5")),
        "{stale}"
    );

    let second = source
        .maintenance::<Handle>()
        .relayout(&dest, 0, 100, |_| {})
        .await
        .unwrap();
    assert!(second.failed.is_empty(), "{:?}", second.failed);
    // 5 gone; 1, 2, 3 and 4 released their old names first.
    assert_eq!(second.deleted, 5, "{second:?}");
    let compared = source
        .maintenance::<Handle>()
        .relayout_compare(&dest, 100)
        .await
        .unwrap();
    assert!(compared.is_clean(), "{compared}");
    assert_eq!((compared.source, compared.destination), (6, 6));
    for id in 1..=7u64 {
        assert_eq!(
            dest.get::<Handle>(id).await.unwrap(),
            source.get::<Handle>(id).await.unwrap()
        );
    }
    let owner = dest.find_unique(Handle::NAME, "h1").await.unwrap();
    assert_eq!(owner.map(|h| h.id), Some(2));
    assert_eq!(dest.expiry::<Handle>().ttl(6).await.unwrap(), None);
    assert!(dest
        .maintenance::<Handle>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}
