//! A corrupt record never hides the others: reads of many records
//! (`get_many_each`, `fetch_each`, `top_each`) return the good ones and a
//! typed error in place of each bad one; the all-or-nothing forms
//! (`get_many`, `fetch`, `top`) fail with that record's precise error, the
//! same one `get` of it gives.

use redis_entity::{Error, RedisEntity, Store};
use std::collections::BTreeMap;
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "acct")]
struct Acct {
    #[pk]
    id: u64,
    #[index]
    country: String,
    #[index(sorted)]
    score: f64,
    #[hash]
    settings: BTreeMap<String, String>,
}

fn acct(id: u64) -> Acct {
    Acct {
        id,
        country: "DE".into(),
        score: id as f64,
        settings: [("theme".to_string(), format!("t{id}"))].into(),
    }
}

/// Four accounts; 2 holds a score that is not a number, 3's settings key
/// holds a string instead of a hash.
async fn corrupted() -> (RedisServer, Store) {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store
        .save_all(&(1..=4).map(acct).collect::<Vec<_>>())
        .await
        .unwrap();
    let mut c = server.conn();
    let () = redis::cmd("HSET")
        .arg("acct:2")
        .arg("score")
        .arg("fast")
        .query(&mut c)
        .unwrap();
    let () = redis::cmd("DEL")
        .arg("acct:3:settings")
        .query(&mut c)
        .unwrap();
    let () = redis::cmd("SET")
        .arg("acct:3:settings")
        .arg("oops")
        .query(&mut c)
        .unwrap();
    (server, store)
}

fn is_bad_score(e: &Error) -> bool {
    matches!(e, Error::Decode { key, field: "score", value, .. }
        if key == "acct:2" && value == "fast")
}

fn is_bad_settings(e: &Error) -> bool {
    matches!(e, Error::WrongType { key, .. } if key == "acct:3:settings")
}

#[tokio::test]
async fn get_many_each_returns_the_good_records_and_an_error_per_bad_one() {
    let (_server, store) = corrupted().await;
    let got = store.get_many_each::<Acct>(&[1, 2, 3, 4, 5]).await.unwrap();
    assert_eq!(got.len(), 5);
    assert_eq!(got[0].as_ref().unwrap(), &Some(acct(1)));
    assert!(is_bad_score(got[1].as_ref().unwrap_err()), "{:?}", got[1]);
    assert!(
        is_bad_settings(got[2].as_ref().unwrap_err()),
        "{:?}",
        got[2]
    );
    // The record after a bad map reply is read from its own replies.
    assert_eq!(got[3].as_ref().unwrap(), &Some(acct(4)));
    assert_eq!(got[4].as_ref().unwrap(), &None);

    // The all-or-nothing form fails with the first bad record's error,
    // which is what `get` of it says too.
    let all = store.get_many::<Acct>(&[1, 2, 3, 4]).await.unwrap_err();
    assert!(is_bad_score(&all), "{all}");
    assert!(is_bad_score(&store.get::<Acct>(&2).await.unwrap_err()));
    assert!(is_bad_settings(&store.get::<Acct>(&3).await.unwrap_err()));
    assert_eq!(
        all.to_string(),
        "field `score` of `acct:2` holds \"fast\", which does not parse: invalid float literal"
    );
}

#[tokio::test]
async fn fetch_each_and_top_each_keep_the_good_records() {
    let (_server, store) = corrupted().await;
    let page = store
        .query::<Acct>()
        .all(Acct::COUNTRY, ["DE"])
        .fetch_each()
        .await
        .unwrap();
    let good: Vec<u64> = page
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|a| a.id)
        .collect();
    assert_eq!(good, [1, 4]);
    let bad: Vec<&Error> = page.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(bad.len(), 2);
    assert!(bad.iter().any(|e| is_bad_score(e)) && bad.iter().any(|e| is_bad_settings(e)));
    let err = store
        .query::<Acct>()
        .all(Acct::COUNTRY, ["DE"])
        .fetch()
        .await
        .unwrap_err();
    assert!(is_bad_score(&err) || is_bad_settings(&err), "{err}");

    // Highest first: 4, 3 (bad), 2 (bad), 1.
    let top = store.top_each(Acct::SCORE, 10).await.unwrap();
    assert_eq!(top.len(), 4);
    assert_eq!(top[0].as_ref().unwrap(), &(acct(4), 4.0));
    assert!(is_bad_settings(top[1].as_ref().unwrap_err()));
    assert!(is_bad_score(top[2].as_ref().unwrap_err()));
    assert_eq!(top[3].as_ref().unwrap(), &(acct(1), 1.0));
    assert!(is_bad_settings(
        &store.top(Acct::SCORE, 10).await.unwrap_err()
    ));
    // A page that does not reach the bad records is whole.
    assert_eq!(store.top(Acct::SCORE, 1).await.unwrap(), [(acct(4), 4.0)]);
}

#[test]
fn the_blocking_store_has_the_same_reads() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (server, _async_store) = rt.block_on(corrupted());
    let store = redis_entity::blocking::Store::connect(&server.url()).unwrap();
    let got = store.get_many_each::<Acct>(&[2, 4]).unwrap();
    assert!(is_bad_score(got[0].as_ref().unwrap_err()));
    assert_eq!(got[1].as_ref().unwrap(), &Some(acct(4)));
    let page = store
        .query::<Acct>()
        .all(Acct::COUNTRY, ["DE"])
        .fetch_each()
        .unwrap();
    assert_eq!(page.iter().filter(|r| r.is_ok()).count(), 2);
    assert_eq!(store.top_each(Acct::SCORE, 10).unwrap().len(), 4);
}
