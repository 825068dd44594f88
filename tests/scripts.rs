//! The server-side code, seen from outside: the write functions escape
//! values exactly as the Rust key builders do, read-only scripts run while
//! writes are paused, a batch call gives each entity its own result, one
//! function library per entity type is loaded in the first round trip, the
//! read scripts survive `SCRIPT FLUSH`, and a type without indexes writes
//! nothing outside its own keys.
//!
//! One server: it flushes and counts that server's scripts and functions and
//! pauses its writes (`scripts/test.sh --cluster` leaves it out).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Commands, Value};
use redis_entity::{Error, RedisEntity, Store};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    country: String,
    #[index]
    tags: BTreeSet<String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player")]
struct Player {
    #[pk]
    id: u64,
    #[index(sorted)]
    score: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "note")]
struct Note {
    #[pk]
    id: u64,
    text: String,
}

fn user(id: u64, name: &str, country: &str, tags: &[&str]) -> User {
    User {
        id,
        username: name.into(),
        country: country.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
    }
}

fn player(id: u64, score: i64) -> Player {
    Player { id, score }
}

/// Text with a high share of the characters that matter (as in tests/keys.rs).
fn tricky() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just(':'),
            Just('{'),
            Just('}'),
            Just('*'),
            Just('?'),
            Just('['),
            Just(']'),
            Just('\\'),
            Just('%'),
            Just('_'),
            Just('中'),
            Just('李'),
            Just('é'),
            Just('\0'),
            any::<char>(),
        ],
        0..12,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The set of all ids that holds `id`: its bucket of 100.
fn bucket(id: u64) -> String {
    match id / 100 {
        0 => "user:@ids:xx".to_owned(),
        hundreds => format!("user:@ids:{hundreds}xx"),
    }
}

/// Every key an indexed `User` gives the server, as the Rust key builders
/// spell them.
fn user_keys(u: &User) -> BTreeSet<String> {
    let mut keys = BTreeSet::from([
        User::key(&u.id),
        bucket(u.id),
        "user:@ids:@buckets".to_owned(),
        User::USERNAME.key(u.username.clone()),
        User::COUNTRY.key(u.country.clone()),
    ]);
    keys.extend(u.tags.iter().map(|t| User::TAGS.key(t.clone())));
    keys
}

/// What the unique key and the set keys of `u`'s values hold, for `u`.
fn assert_indexed(c: &mut redis::Connection, u: &User) {
    let member = u.id.to_string();
    let owner: Option<String> = c.get(User::USERNAME.key(u.username.clone())).unwrap();
    assert_eq!(owner.as_deref(), Some(&*member), "unique key of {u:?}");
    let set_keys = std::iter::once(User::COUNTRY.key(u.country.clone()))
        .chain(u.tags.iter().map(|t| User::TAGS.key(t.clone())))
        .chain([bucket(u.id)]);
    for k in set_keys {
        let there: bool = c.sismember(&k, &member).unwrap();
        assert!(there, "{member} in {k:?}");
    }
}

#[test]
fn lua_escaping_equals_rust_escaping() {
    // One server for every case; each case starts from an empty keyspace
    // (FLUSHALL keeps the function library) and uses a new pk.
    let server = RedisServer::start();
    let store = redis_entity::blocking::Store::connect(&server.url()).unwrap();
    let conn = RefCell::new(server.conn());
    let next_pk = Cell::new(0u64);
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let values = (
        tricky(),
        tricky(),
        tricky(),
        prop::collection::btree_set(tricky(), 0..4),
    );
    let outcome = runner.run(&values, |(name, renamed, country, tags)| {
        let c = &mut *conn.borrow_mut();
        let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
        let pk = next_pk.get() + 1;
        next_pk.set(pk);
        let mut u = User {
            id: pk,
            username: name.clone(),
            country: country.clone(),
            tags: tags.clone(),
        };

        // Save: the function escapes the unique and equality values itself.
        store.save(&u).unwrap();
        prop_assert_eq!(
            server.keys(),
            user_keys(&u).into_iter().collect::<Vec<_>>(),
            "the keys the function wrote are the keys Rust names"
        );
        assert_indexed(c, &u);
        prop_assert_eq!(
            store.find_unique(User::USERNAME, name.clone()).unwrap(),
            Some(u.clone())
        );
        prop_assert_eq!(
            store.find(User::COUNTRY, country.clone()).unwrap(),
            vec![u.clone()]
        );
        for t in &tags {
            prop_assert_eq!(
                store
                    .query::<User>()
                    .eq(User::TAGS, t.clone())
                    .ids()
                    .unwrap(),
                vec![pk]
            );
        }

        // Update: the old value is read from the hash and escaped in Lua to
        // find the entry to remove.
        store
            .update::<User>(&pk)
            .set(User::USERNAME, renamed.clone())
            .exec()
            .unwrap();
        u.username = renamed.clone();
        prop_assert_eq!(
            server.keys(),
            user_keys(&u).into_iter().collect::<Vec<_>>(),
            "after renaming {:?} to {:?}",
            name,
            renamed
        );
        assert_indexed(c, &u);
        prop_assert_eq!(
            store.find_unique(User::USERNAME, renamed.clone()).unwrap(),
            Some(u.clone())
        );

        // Delete: every entry the Lua side computes from the stored values
        // is one Rust named, so nothing is left behind.
        prop_assert!(store.delete::<User>(&pk).unwrap());
        prop_assert_eq!(server.keys(), Vec::<String>::new());
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// A store whose connection waits for replies as long as it takes.
async fn patient_store(server: &RedisServer) -> Store {
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = ConnectionManager::new_with_config(server.client(), config)
        .await
        .unwrap();
    Store::new(conn)
}

/// How long the test pauses writes: long enough that "the reads finished
/// before it ended" is about order, not speed (it is lifted explicitly).
const PAUSE_MS: u64 = 10_000;

#[tokio::test]
async fn reads_run_during_client_pause_write() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store
        .save_all(&[
            user(1, "lisi", "DE", &["a"]),
            user(2, "wang", "CN", &[]),
            user(3, "anna", "DE", &["a", "b"]),
        ])
        .await
        .unwrap();
    store
        .save_all(&[player(1, 10), player(2, 30), player(3, 20)])
        .await
        .unwrap();
    // A writer on its own connection (a paused write blocks every later
    // command of its connection), with the library already loaded, and
    // without redis-rs's default 500 ms response timeout (see the ignored
    // test below for what `Store::connect` does instead).
    let writer = patient_store(&server).await;
    writer.save(&user(4, "zhao", "FR", &[])).await.unwrap();

    let mut admin = server.conn();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(PAUSE_MS)
        .arg("WRITE")
        .query(&mut admin)
        .unwrap();
    let paused_at = Instant::now();
    let pending = tokio::spawn(async move { writer.save(&user(5, "qian", "FR", &[])).await });

    let de = store
        .query::<User>()
        .eq(User::COUNTRY, "DE")
        .fetch()
        .await
        .unwrap();
    assert_eq!(
        de,
        [
            user(1, "lisi", "DE", &["a"]),
            user(3, "anna", "DE", &["a", "b"])
        ]
    );
    // Twice: first with the script's text (EVAL_RO), then by SHA (EVALSHA_RO).
    for _ in 0..2 {
        let n = store
            .query::<User>()
            .eq(User::TAGS, "a")
            .count()
            .await
            .unwrap();
        assert_eq!(n, 2);
    }
    assert_eq!(
        store.find_unique(User::USERNAME, "wang").await.unwrap(),
        Some(user(2, "wang", "CN", &[]))
    );
    assert_eq!(
        store.board(Player::SCORE).top(2).await.unwrap(),
        [(player(2, 30), 30.0), (player(3, 20), 20.0)]
    );
    assert_eq!(store.board(Player::SCORE).rank(1).await.unwrap(), Some(2));
    assert_eq!(store.board(Player::SCORE).rank(2).await.unwrap(), Some(0));
    let reads_took = paused_at.elapsed();

    // Give the paused save time to reach the server (and to outlast a
    // default response timeout), then check it waits.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut probe = server.conn();
    let stored: bool = probe.exists(User::key(&5)).unwrap();
    let save_pending = !pending.is_finished();
    let still_paused = paused_at.elapsed() < Duration::from_millis(PAUSE_MS);
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut admin)
        .unwrap();
    assert!(still_paused, "the checks ran after the pause ended");
    assert!(
        reads_took < Duration::from_millis(PAUSE_MS / 2),
        "reads waited for the pause: {reads_took:?}"
    );
    assert!(save_pending, "a save finished while writes were paused");
    assert!(!stored, "a save wrote while writes were paused");

    let created = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("the save completes once writes resume")
        .unwrap()
        .unwrap();
    assert!(created);
    assert_eq!(
        store.find_unique(User::USERNAME, "qian").await.unwrap(),
        Some(user(5, "qian", "FR", &[]))
    );
}

/// A write the server holds for a while (`CLIENT PAUSE WRITE`, as `FAILOVER`
/// and cluster manual failovers issue) completes within the default response
/// timeout (5 s) and reports its real outcome. (With redis-rs' own default of
/// 500 ms it used to report `timed out` while the server applied it.)
#[tokio::test]
async fn a_save_paused_past_the_response_timeout_completes_after_the_pause() {
    let server = RedisServer::start();
    let writer = Store::connect(&server.url()).await.unwrap();
    writer.save(&user(4, "zhao", "FR", &[])).await.unwrap();

    let mut admin = server.conn();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(PAUSE_MS)
        .arg("WRITE")
        .query(&mut admin)
        .unwrap();
    // The writer lives on, as an application's store does.
    let w = writer.clone();
    let pending = tokio::spawn(async move { w.save(&user(5, "qian", "FR", &[])).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut admin)
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("the save completes once writes resume")
        .unwrap();
    // Let the server run what it had queued, then look.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stored: bool = server.conn().exists(User::key(&5)).unwrap();
    assert!(
        matches!(outcome, Ok(true)),
        "the save returned {outcome:?}, and the entity is {}stored",
        if stored { "" } else { "not " }
    );
    assert!(stored);
}

#[tokio::test]
async fn save_all_gives_each_entity_its_own_result() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    let owner = user(1000, "taken", "ZZ", &["owner"]);
    store.save(&owner).await.unwrap();

    let mut batch: Vec<User> = (0..250)
        .map(|i| {
            let country = ["DE", "CN", "FR"][i as usize % 3];
            user(i, &format!("n{i}"), country, &["all"])
        })
        .collect();
    batch[120] = user(120, "taken", "only120", &["only120"]);

    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut server.conn())
        .unwrap();
    trips.take();
    let err = store.save_all(&batch).await.unwrap_err();
    assert_eq!(trips.take(), 1, "one pipeline");
    assert_eq!(server.calls("fcall"), 5, "one call per 50 entities");
    match err {
        Error::UniqueViolation { field, value } => {
            assert_eq!(field, "username");
            assert_eq!(value, "taken");
        }
        other => panic!("expected UniqueViolation, got {other:?}"),
    }

    // Every other entity is stored with its entries; #120 wrote nothing.
    let stored: Vec<&User> = batch.iter().filter(|u| u.id != 120).collect();
    let pks: Vec<u64> = batch.iter().map(|u| u.id).collect();
    let got = store.get_many::<User>(&pks).await.unwrap();
    for (u, g) in batch.iter().zip(&got) {
        if u.id == 120 {
            assert_eq!(*g, None, "the conflicting entity");
        } else {
            assert_eq!(g.as_ref(), Some(u));
        }
    }
    let mut c = server.conn();
    for u in &stored {
        assert_indexed(&mut c, u);
    }
    assert_indexed(&mut c, &owner);
    let mut expected: BTreeSet<String> = user_keys(&owner);
    for u in &stored {
        expected.extend(user_keys(u));
    }
    assert_eq!(server.keys(), expected.into_iter().collect::<Vec<_>>());
    let in_ids: bool = c.sismember(bucket(120), "120").unwrap();
    assert!(!in_ids);
    assert_eq!(
        store.find_unique(User::USERNAME, "taken").await.unwrap(),
        Some(owner)
    );
}

/// The function libraries on the server: name -> function names.
fn libraries(server: &RedisServer) -> BTreeMap<String, BTreeSet<String>> {
    fn text(v: &Value) -> String {
        match v {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            other => panic!("not text: {other:?}"),
        }
    }
    fn fields(v: &Value) -> BTreeMap<String, &Value> {
        match v {
            Value::Map(m) => m.iter().map(|(k, v)| (text(k), v)).collect(),
            Value::Array(a) => a.chunks(2).map(|p| (text(&p[0]), &p[1])).collect(),
            other => panic!("not a map: {other:?}"),
        }
    }
    fn items(v: &Value) -> &[Value] {
        match v {
            Value::Array(a) | Value::Set(a) => a,
            other => panic!("not a list: {other:?}"),
        }
    }
    let list: Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .query(&mut server.conn())
        .unwrap();
    items(&list)
        .iter()
        .map(|lib| {
            let lib = fields(lib);
            let functions = items(lib["functions"])
                .iter()
                .map(|f| text(fields(f)["name"]))
                .collect();
            (text(lib["library_name"]), functions)
        })
        .collect()
}

#[tokio::test]
async fn a_new_store_loads_the_library_in_the_first_round_trip() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store.save(&user(1, "lisi", "DE", &[])).await.unwrap();
    assert_eq!(trips.take(), 1, "FUNCTION LOAD and FCALL in one pipeline");
    store.save(&player(1, 5)).await.unwrap();
    assert_eq!(trips.take(), 1, "the second type's library, same way");
    store.save(&user(2, "wang", "CN", &[])).await.unwrap();
    assert_eq!(trips.take(), 1);

    let libs = libraries(&server);
    assert_eq!(libs.len(), 2, "one library per entity type: {libs:?}");
    let ops = [
        "save", "insert", "update", "cas", "reindex", "delete", "expire", "persist", "clean",
        "sweep",
    ];
    for (name, functions) in &libs {
        assert!(name.starts_with("redis_entity_"), "{name}");
        // Both types are hash-layout types: each also has the straight-line
        // save, insert and update (script/fast.rs), and their batch forms.
        let straight_line = ["fast_save", "fast_insert", "fast_update"];
        let expected: BTreeSet<String> = ops
            .iter()
            .chain(&straight_line)
            .flat_map(|op| [format!("{name}_{op}"), format!("{name}_{op}_batch")])
            .collect();
        assert_eq!(
            *functions, expected,
            "one function per operation and batch form"
        );
    }

    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query(&mut server.conn())
        .unwrap();
    trips.take();
    store.save(&user(3, "anna", "DE", &[])).await.unwrap();
    assert_eq!(trips.take(), 2, "function not found, then load and call");
    assert_eq!(
        store.get::<User>(&3).await.unwrap(),
        Some(user(3, "anna", "DE", &[]))
    );
    trips.take();
    store.save(&user(4, "zhao", "FR", &[])).await.unwrap();
    assert_eq!(trips.take(), 1, "loaded again");
    let reloaded = libraries(&server);
    assert_eq!(reloaded.len(), 1, "only the type used since: {reloaded:?}");
    assert!(libs.keys().any(|n| reloaded.contains_key(n)), "same name");

    // A second store in the same process names the same libraries; the one
    // already there is not replaced, the other is loaded with the call.
    let (second, trips2) = support::counted_store(&server).await;
    second.save(&user(5, "qian", "FR", &[])).await.unwrap();
    assert_eq!(trips2.take(), 1, "a load refused as existing costs nothing");
    second.save(&player(2, 7)).await.unwrap();
    assert_eq!(trips2.take(), 1);
    assert_eq!(libraries(&server), libs);
    assert_eq!(
        second.board(Player::SCORE).top(5).await.unwrap(),
        [(player(2, 7), 7.0), (player(1, 5), 5.0)]
    );
}

/// `FUNCTION LOAD` calls the server has run (`INFO commandstats`).
fn function_loads(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_function|load:calls="))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[tokio::test]
async fn a_library_is_sent_once_whichever_operations_use_it() {
    // Every operation of a type (save, update, delete, their batch forms)
    // finds the library its first call sent: the type's description has
    // one address wherever the program names it, and the runtime knows the
    // library by that address.
    let server = RedisServer::start();
    let store = Store::new(
        server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap(),
    );
    store.save(&user(1, "lisi", "DE", &[])).await.unwrap();
    assert_eq!(
        function_loads(&server),
        1,
        "the first save sends the library"
    );
    store
        .update::<User>(&1)
        .set(User::COUNTRY, "FR")
        .exec()
        .await
        .unwrap();
    store
        .save_all(&[user(2, "wang", "CN", &["a"]), user(3, "zhao", "CN", &[])])
        .await
        .unwrap();
    store.delete::<User>(&2).await.unwrap();
    assert_eq!(
        function_loads(&server),
        1,
        "update, batch save and delete call the library already sent"
    );
    store.save(&player(1, 5)).await.unwrap();
    assert_eq!(function_loads(&server), 2, "a second type, its own library");
    assert_eq!(
        store.get::<User>(&1).await.unwrap(),
        Some(user(1, "lisi", "FR", &[]))
    );
}

#[tokio::test]
async fn scripts_survive_script_flush_for_reads() {
    let server = RedisServer::start();
    let (store, trips) = support::counted_store(&server).await;
    store
        .save_all(&[
            user(1, "lisi", "DE", &[]),
            user(2, "wang", "CN", &[]),
            user(3, "anna", "DE", &[]),
        ])
        .await
        .unwrap();
    store
        .save_all(&[player(1, 10), player(2, 30)])
        .await
        .unwrap();
    // A count the query script answers (a plain equality is a `SCARD`; an
    // exclusion is not).
    let de = || {
        store
            .query::<User>()
            .eq(User::COUNTRY, "DE")
            .none(User::TAGS, ["x"])
            .count()
    };
    trips.take();
    assert_eq!(de().await.unwrap(), 2);
    assert_eq!(trips.take(), 1, "the first call sends the text (EVAL_RO)");
    assert_eq!(store.board(Player::SCORE).rank(1).await.unwrap(), Some(1));
    assert_eq!(trips.take(), 1);

    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut server.conn())
        .unwrap();
    trips.take();
    assert_eq!(de().await.unwrap(), 2);
    assert_eq!(trips.take(), 2, "NOSCRIPT, then EVAL_RO");
    assert_eq!(de().await.unwrap(), 2);
    assert_eq!(trips.take(), 1, "cached again");
    assert_eq!(store.board(Player::SCORE).rank(1).await.unwrap(), Some(1));
    assert_eq!(trips.take(), 2, "rank: NOSCRIPT, then EVAL_RO");
    assert_eq!(store.board(Player::SCORE).rank(2).await.unwrap(), Some(0));
    assert_eq!(trips.take(), 1);

    // SCRIPT FLUSH leaves the function libraries alone.
    store.save(&user(4, "zhao", "DE", &[])).await.unwrap();
    assert_eq!(trips.take(), 1, "the write functions are still loaded");
    assert_eq!(de().await.unwrap(), 3);
}

#[tokio::test]
async fn a_plain_entity_without_indexes_writes_no_shared_key() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let note = |id: u64| Note {
        id,
        text: format!("note {id}"),
    };
    let all_keys = |server: &RedisServer| -> Vec<String> {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut server.conn())
            .unwrap();
        // The layout marker and the type's schema record are written once
        // per store (and heartbeat), not by every write: not shared keys
        // that writes contend on.
        sorted(
            keys.into_iter()
                .filter(|k| k != support::LAYOUT_MARKER && !k.ends_with(support::SCHEMA_RECORD))
                .collect(),
        )
    };

    store.save(&note(1)).await.unwrap();
    store.save(&note(2)).await.unwrap();
    store.save_all(&[note(3), note(4)]).await.unwrap();
    assert_eq!(
        all_keys(&server),
        sorted((1..=4).map(|id| Note::key(&id)).collect())
    );
    assert!(store.delete::<Note>(&1).await.unwrap());
    assert!(!store.delete::<Note>(&1).await.unwrap());
    assert_eq!(
        all_keys(&server),
        sorted((2..=4).map(|id| Note::key(&id)).collect())
    );

    // A TTL does not make it tracked either.
    store
        .expiry()
        .save_with_ttl(&note(5), Duration::from_secs(600))
        .await
        .unwrap();
    assert!(store
        .expiry::<Note>()
        .expire(&2, Duration::from_secs(600))
        .await
        .unwrap());
    assert!(store.expiry::<Note>().persist(&2).await.unwrap());
    store
        .update::<Note>(&5)
        .set(Note::TEXT, "changed".to_string())
        .exec()
        .await
        .unwrap();
    assert_eq!(
        all_keys(&server),
        sorted([2, 3, 4, 5].map(|id| Note::key(&id)).to_vec())
    );
    assert!(store.expiry::<Note>().ttl(&5).await.unwrap().is_some());
    for id in [2, 3, 4, 5] {
        assert!(store.delete::<Note>(&id).await.unwrap());
    }
    assert_eq!(all_keys(&server), Vec::<String>::new());
}
