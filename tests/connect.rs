//! Connecting fails fast and recovers fast: an unreachable server, a wrong
//! password or an unknown database is an error within about a second (the
//! last two at once, never retried); a call to a stopped server fails
//! within about a second; a restarted server is used again as soon as it
//! answers; a reply that does not come in time is a timeout error whose
//! outcome is unknown.

use redis_entity::{ConnectOptions, RedisEntity, Store};
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

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_within_a_second() {
    let t = Instant::now();
    let err = Store::connect(&format!("redis://127.0.0.1:{}/", closed_port()))
        .await
        .unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert!(err.is_connection(), "{err:?}");
}

#[tokio::test]
async fn a_wrong_password_is_an_error_at_once_and_the_right_one_works() {
    let server = RedisServer::start_with(&["--requirepass", "secret"]);
    let port = server.port();
    let t = Instant::now();
    let err = Store::connect(&format!("redis://:wrong@127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    // Not retried: an authentication error does not go away by waiting.
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert!(!err.is_connection(), "{err:?}");
    let store = Store::connect(&format!("redis://:secret@127.0.0.1:{port}/"))
        .await
        .unwrap();
    store.save(&user(1)).await.unwrap();
    assert_eq!(store.get::<User>(&1).await.unwrap(), Some(user(1)));
}

#[tokio::test]
async fn an_unknown_database_is_an_error_at_once() {
    let server = RedisServer::start();
    let t = Instant::now();
    let err = Store::connect(&format!("redis://127.0.0.1:{}/99", server.port()))
        .await
        .unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert!(!err.is_connection(), "{err:?}");
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
    let store = Store::connect_with(
        &server.url(),
        ConnectOptions::default().response_timeout(Some(Duration::from_millis(200))),
    )
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
