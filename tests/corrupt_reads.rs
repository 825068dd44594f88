//! A corrupt record never hides the others: reads of many records
//! (`get_many_each`, `fetch_each`, `top_each`) return the good ones and a
//! typed error in place of each bad one; the all-or-nothing forms
//! (`get_many`, `fetch`, `top`) fail with that record's precise error, the
//! same one `get` of it gives. Runs on one server, and with
//! `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster, where the records
//! are in `Acct`'s index shards (`{acct:<shard>}:acct:2`).

use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use std::collections::BTreeMap;
use support::Target;

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
async fn corrupted() -> (Target, Store<AnyConnection>) {
    let server = Target::start();
    let store = server.store().await;
    store
        .save_all(&(1..=4).map(acct).collect::<Vec<_>>())
        .await
        .unwrap();
    let (score, settings) = spoiled(&store);
    if !server.is_cluster() {
        assert_eq!(
            (score.as_str(), settings.as_str()),
            ("acct:2", "acct:3:settings")
        );
    } else {
        // In the accounts' index shards, spelled inside as on one server.
        assert!(
            score.starts_with("{acct:") && score.ends_with("}:acct:2"),
            "{score}"
        );
        assert!(
            settings.starts_with("{acct:") && settings.ends_with("}:acct:3:settings"),
            "{settings}"
        );
    }
    let mut c = server.conn();
    let () = redis::cmd("HSET")
        .arg(&score)
        .arg("score")
        .arg("fast")
        .query(&mut c)
        .unwrap();
    let () = redis::cmd("DEL").arg(&settings).query(&mut c).unwrap();
    let () = redis::cmd("SET")
        .arg(&settings)
        .arg("oops")
        .query(&mut c)
        .unwrap();
    (server, store)
}

/// The keys `corrupted` spoils, in the store's layout: account 2's hash and
/// account 3's settings map.
fn spoiled(store: &Store<AnyConnection>) -> (String, String) {
    (
        store.keys().of::<Acct>(2).base,
        store.keys().of::<Acct>(3).maps[0].clone(),
    )
}

/// The error of account 2, whose hash is at `key`.
fn is_bad_score(e: &Error, key: &str) -> bool {
    matches!(e, Error::Decode { key: k, field: "score", value, .. }
        if k == key && value == "fast")
}

/// The error of account 3, whose settings map is at `key`.
fn is_bad_settings(e: &Error, key: &str) -> bool {
    matches!(e, Error::WrongType { key: k, .. } if k == key)
}

#[tokio::test]
async fn get_many_each_returns_the_good_records_and_an_error_per_bad_one() {
    let (server, store) = corrupted().await;
    let (score, settings) = spoiled(&store);
    let got = store.get_many_each::<Acct>(&[1, 2, 3, 4, 5]).await.unwrap();
    assert_eq!(got.len(), 5);
    assert_eq!(got[0].as_ref().unwrap(), &Some(acct(1)));
    assert!(
        is_bad_score(got[1].as_ref().unwrap_err(), &score),
        "{:?}",
        got[1]
    );
    assert!(
        is_bad_settings(got[2].as_ref().unwrap_err(), &settings),
        "{:?}",
        got[2]
    );
    // The record after a bad map reply is read from its own replies.
    assert_eq!(got[3].as_ref().unwrap(), &Some(acct(4)));
    assert_eq!(got[4].as_ref().unwrap(), &None);

    // The all-or-nothing form fails with the first bad record's error,
    // which is what `get` of it says too.
    let all = store.get_many::<Acct>(&[1, 2, 3, 4]).await.unwrap_err();
    assert!(is_bad_score(&all, &score), "{all}");
    assert!(is_bad_score(
        &store.get::<Acct>(&2).await.unwrap_err(),
        &score
    ));
    assert!(is_bad_settings(
        &store.get::<Acct>(&3).await.unwrap_err(),
        &settings
    ));
    assert_eq!(
        all.to_string(),
        format!("field `score` of `{score}` holds \"fast\", which does not parse: invalid float literal")
    );
    if !server.is_cluster() {
        assert_eq!(
            all.to_string(),
            "field `score` of `acct:2` holds \"fast\", which does not parse: invalid float literal"
        );
    }
}

#[tokio::test]
async fn fetch_each_and_top_each_keep_the_good_records() {
    let (_server, store) = corrupted().await;
    let (score, settings) = spoiled(&store);
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
    assert!(
        bad.iter().any(|e| is_bad_score(e, &score))
            && bad.iter().any(|e| is_bad_settings(e, &settings))
    );
    let err = store
        .query::<Acct>()
        .all(Acct::COUNTRY, ["DE"])
        .fetch()
        .await
        .unwrap_err();
    assert!(
        is_bad_score(&err, &score) || is_bad_settings(&err, &settings),
        "{err}"
    );

    // Highest first: 4, 3 (bad), 2 (bad), 1.
    let top = store.board(Acct::SCORE).top_each(10).await.unwrap();
    assert_eq!(top.len(), 4);
    assert_eq!(top[0].as_ref().unwrap(), &(acct(4), 4.0));
    assert!(is_bad_settings(top[1].as_ref().unwrap_err(), &settings));
    assert!(is_bad_score(top[2].as_ref().unwrap_err(), &score));
    assert_eq!(top[3].as_ref().unwrap(), &(acct(1), 1.0));
    assert!(is_bad_settings(
        &store.board(Acct::SCORE).top(10).await.unwrap_err(),
        &settings
    ));
    // A page that does not reach the bad records is whole.
    assert_eq!(
        store.board(Acct::SCORE).top(1).await.unwrap(),
        [(acct(4), 4.0)]
    );
}

#[test]
fn the_blocking_store_has_the_same_reads() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (server, async_store) = rt.block_on(corrupted());
    let (score, _) = spoiled(&async_store);
    let store = redis_entity::blocking::Store::builder()
        .connect_any(&server.url())
        .unwrap();
    blocking_reads(&store, &score);
}

fn blocking_reads<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &redis_entity::blocking::Store<C>,
    score: &str,
) {
    assert_eq!(store.keys().of::<Acct>(2).base, score);
    let got = store.get_many_each::<Acct>(&[2, 4]).unwrap();
    assert!(is_bad_score(got[0].as_ref().unwrap_err(), score));
    assert_eq!(got[1].as_ref().unwrap(), &Some(acct(4)));
    let page = store
        .query::<Acct>()
        .all(Acct::COUNTRY, ["DE"])
        .fetch_each()
        .unwrap();
    assert_eq!(page.iter().filter(|r| r.is_ok()).count(), 2);
    assert_eq!(store.board(Acct::SCORE).top_each(10).unwrap().len(), 4);
}
