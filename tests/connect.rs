//! Connecting fails fast and recovers fast: an unreachable server, a wrong
//! password or an unknown database is an error within about a second (the
//! last two at once, never retried); a call to a stopped server fails
//! within about a second; a restarted server is used again as soon as it
//! answers; a reply that does not come in time is a timeout error whose
//! outcome is unknown.
//!
//! One server: it stops and restarts the server (a cluster's topology changes
//! are tests/cluster_topology.rs).

use redis_entity::{RedisEntity, Store};
use std::time::{Duration, Instant};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    name: String,
}

fn user(id: u64) -> User {
    User {
        id,
        name: format!("u{id}"),
    }
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_within_a_second() {
    let t = Instant::now();
    let err = Store::connect(&format!("redis://127.0.0.1:{}/", support::free_port()))
        .await
        .unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert!(err.is_connection(), "{err:?}");
}

/// Connects to `url`, which must fail at once (within 500 ms: not retried,
/// since waiting cannot fix it) with an error that is not the connection's.
async fn refused_at_once(url: &str) -> redis_entity::Error {
    let t = Instant::now();
    let err = Store::connect(url).await.unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert!(!err.is_connection(), "{err:?}");
    err
}

#[tokio::test]
async fn a_wrong_password_is_an_error_at_once_and_the_right_one_works() {
    let server = RedisServer::start_with(&["--requirepass", "secret"]);
    let port = server.port();
    refused_at_once(&format!("redis://:wrong@127.0.0.1:{port}/")).await;
    let store = Store::connect(&format!("redis://:secret@127.0.0.1:{port}/"))
        .await
        .unwrap();
    store.save(&user(1)).await.unwrap();
    assert_eq!(store.get::<User>(&1).await.unwrap(), Some(user(1)));
}

#[tokio::test]
async fn no_password_for_a_server_that_requires_one_is_an_error_at_connect() {
    let server = RedisServer::start_with(&["--requirepass", "secret"]);
    // The connection itself is accepted: only its first command is refused
    // (NOAUTH), so connect runs one to prove it can.
    let err = refused_at_once(&format!("redis://127.0.0.1:{}/", server.port())).await;
    assert!(err.to_string().contains("NOAUTH"), "{err}");
}

#[tokio::test]
async fn an_unknown_database_is_an_error_at_once() {
    let server = RedisServer::start();
    refused_at_once(&format!("redis://127.0.0.1:{}/99", server.port())).await;
}

#[tokio::test]
async fn a_stopped_server_fails_calls_fast_and_a_restarted_one_is_used_again() {
    let mut server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&user(1)).await.unwrap();

    server.stop();
    let t = Instant::now();
    let err = store.get::<User>(&1).await.unwrap_err();
    assert!(err.is_connection(), "{err:?}");
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );

    // `restart` returns once the new server answers PING.
    server.restart();
    let back = Instant::now();
    loop {
        if store.save(&user(2)).await.is_ok() {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(2),
            "the store did not use the restarted server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The reconnection waits at most the longest reconnect delay (250 ms);
    // the bound leaves room for a loaded machine.
    assert!(
        back.elapsed() < Duration::from_secs(1),
        "{:?}",
        back.elapsed()
    );
    assert_eq!(store.get::<User>(&2).await.unwrap(), Some(user(2)));
}

#[tokio::test]
async fn a_reply_that_comes_too_late_is_a_timeout_of_unknown_outcome() {
    let server = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let store = Store::builder()
        .response_timeout(Some(Duration::from_millis(200)))
        .connect(&server.url())
        .await
        .unwrap();
    store.save(&user(1)).await.unwrap();
    let sleeper = std::thread::spawn({
        let mut c = server.conn();
        move || {
            let () = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("0.6")
                .query(&mut c)
                .unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    let err = store.save(&user(2)).await.unwrap_err();
    assert!(err.is_timeout() && err.is_connection(), "{err:?}");
    sleeper.join().unwrap();
    // The server ran the write once it woke: the outcome was unknown, not
    // "nothing happened".
    let mut found = None;
    for _ in 0..50 {
        if let Ok(u) = store.get::<User>(&2).await {
            found = u;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(found, Some(user(2)));
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "meter")]
struct Meter {
    #[pk]
    id: u64,
    #[index]
    site: String,
    reading: i64,
}

/// A store whose replies time out after 200 ms and that retries writes.
async fn retrying_store(server: &RedisServer) -> Store {
    Store::builder()
        .response_timeout(Some(Duration::from_millis(200)))
        .write_retries(5)
        .connect(&server.url())
        .await
        .unwrap()
}

/// Holds the server for `secs` from another thread.
fn sleep_server(server: &RedisServer, secs: f64) -> std::thread::JoinHandle<()> {
    let mut c = server.conn();
    let t = std::thread::spawn(move || {
        let () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(secs)
            .query(&mut c)
            .unwrap();
    });
    std::thread::sleep(Duration::from_millis(50));
    t
}

#[tokio::test]
async fn a_retried_increment_counts_once() {
    let server = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let store = retrying_store(&server).await;
    let m = Meter {
        id: 1,
        site: "a".into(),
        reading: 0,
    };
    store.save(&m).await.unwrap();
    let retries = store.metrics().retries;
    let sleeper = sleep_server(&server, 0.6);
    // The first attempt times out while the server sleeps; the retries carry
    // the same request token, so the one applied is not applied again.
    store
        .update::<Meter>(&1)
        .incr(Meter::READING, 1)
        .exec()
        .await
        .unwrap();
    sleeper.join().unwrap();
    assert!(
        store.metrics().retries > retries,
        "the increment was not retried: the test proves nothing"
    );
    assert_eq!(store.get::<Meter>(&1).await.unwrap().unwrap().reading, 1);
}

#[tokio::test]
async fn a_retried_insert_does_not_find_itself() {
    let server = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let store = retrying_store(&server).await;
    // A first write records the layout marker; the insert's retries follow.
    store
        .save(&Meter {
            id: 1,
            site: "a".into(),
            reading: 0,
        })
        .await
        .unwrap();
    let retries = store.metrics().retries;
    let sleeper = sleep_server(&server, 0.6);
    let m = Meter {
        id: 2,
        site: "b".into(),
        reading: 5,
    };
    store.insert(&m).await.unwrap();
    sleeper.join().unwrap();
    assert!(
        store.metrics().retries > retries,
        "the insert was not retried: the test proves nothing"
    );
    assert_eq!(store.get::<Meter>(&2).await.unwrap(), Some(m.clone()));
    // A later insert of the same entity, with a new token, is refused.
    assert!(matches!(
        store.insert(&m).await,
        Err(redis_entity::Error::AlreadyExists { .. })
    ));
    // The request record is kept for a while, under the entity's key.
    let records: Vec<String> = redis::cmd("KEYS")
        .arg("meter:2:@req:*")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
}

#[tokio::test]
async fn without_retries_a_write_of_unknown_outcome_is_an_error_and_no_token_is_kept() {
    let server = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let store = Store::builder()
        .response_timeout(Some(Duration::from_millis(200)))
        .connect(&server.url())
        .await
        .unwrap();
    let sleeper = sleep_server(&server, 0.6);
    let m = Meter {
        id: 3,
        site: "c".into(),
        reading: 1,
    };
    let err = store.insert(&m).await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    sleeper.join().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("meter:3:@req:*")
        .query(&mut server.conn())
        .unwrap();
    assert!(keys.is_empty());
}

#[tokio::test]
async fn while_a_restarted_server_loads_its_data_calls_are_transient_errors_then_work() {
    let mut server = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&user(1)).await.unwrap();
    // 200,000 keys on disk, loaded at 10 µs a key: about two seconds.
    let mut c = server.conn();
    let () = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(200_000)
        .query(&mut c)
        .unwrap();
    let () = redis::cmd("SAVE").query(&mut c).unwrap();
    // Answering clients every 1 KiB loaded, not every 2 MiB.
    server.restart_loading(&[
        "--key-load-delay",
        "10",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);

    let restarted = Instant::now();
    // The first call may meet the old connection's end; the store then
    // reconnects to the loading server, whose refusals are transient.
    let err = loop {
        let err = store.get::<User>(&1).await.unwrap_err();
        if !err.is_connection() || restarted.elapsed() > Duration::from_secs(1) {
            break err;
        }
    };
    assert!(
        err.is_transient(),
        "{err:?} after {:?}",
        restarted.elapsed()
    );
    assert!(!err.is_timeout(), "{err:?}");
    assert!(err.to_string().contains("loading the dataset"), "{err}");
    let err = store.save(&user(2)).await.unwrap_err();
    assert!(err.is_transient(), "a write refused while loading: {err:?}");

    // Once loaded, the same store works again, with the data. (The load
    // takes 2 s of key delays, but each `usleep(10)` costs far more on a
    // loaded VM: allow for it.)
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match store.get::<User>(&1).await {
            Ok(found) => {
                assert_eq!(found, Some(user(1)));
                break;
            }
            Err(e) if e.is_transient() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    store.save(&user(2)).await.unwrap();
    assert_eq!(store.get::<User>(&2).await.unwrap(), Some(user(2)));
}
