//! The `json` layout and every field codec, round-tripped through a real server.
//! Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master
//! cluster, where these types without indexes carry their member in a hash
//! tag (`everything:{-5}`, `User_{7}_Profile`, `user:userid:{9}:sms_code`).

use redis::Commands;
use redis_entity::{EntityKeys, RedisEntity};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use support::Target;

/// The column key of `field` among a `strings` entity's keys.
fn column<'a>(keys: &'a EntityKeys, field: &str) -> &'a str {
    let suffix = format!(":{field}");
    keys.columns
        .iter()
        .find(|c| c.ends_with(&suffix))
        .unwrap_or_else(|| panic!("no column {field} in {:?}", keys.columns))
}

/// `keys`, sorted (as `Target::keys` gives them).
fn sorted(mut keys: Vec<String>) -> Vec<String> {
    keys.sort();
    keys
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Address {
    city: String,
    zip: Option<String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Everything {
    #[pk]
    id: i32,
    a: i8,
    b: i16,
    c: i64,
    d: i128,
    e: u8,
    f: u16,
    g: u32,
    h: u64,
    i: u128,
    j: usize,
    k: isize,
    x: f32,
    y: f64,
    flag: bool,
    letter: char,
    text: String,
    bytes: Vec<u8>,
    maybe: Option<i64>,
    empty: Option<String>,
    #[redis(json)]
    address: Option<Address>,
    #[redis(json)]
    tags: Vec<String>,
    #[redis(rename = "n")]
    nickname: String,
    #[redis(skip)]
    cached: u32,
    #[redis(default)]
    added_later: i64,
    uuid: uuid::Uuid,
    at: chrono::DateTime<chrono::Utc>,
    day: chrono::NaiveDate,
    #[hash]
    counters: HashMap<String, i64>,
}

fn everything() -> Everything {
    Everything {
        id: -5,
        a: -8,
        b: -16,
        c: i64::MIN,
        d: i128::MAX,
        e: 255,
        f: 65535,
        g: u32::MAX,
        h: u64::MAX,
        i: u128::MAX,
        j: 7,
        k: -7,
        x: 0.1,
        y: -2.5e-300,
        flag: true,
        letter: '中',
        text: "李四 says \"hi\": {x}\n".into(),
        bytes: vec![0, 159, 146, 150, 255],
        maybe: None,
        empty: Some(String::new()),
        address: Some(Address {
            city: "Berlin".into(),
            zip: None,
        }),
        tags: vec!["a".into(), "b:c".into()],
        nickname: "nick".into(),
        cached: 0,
        added_later: 0,
        uuid: uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0),
        at: chrono::DateTime::from_timestamp(1_700_000_000, 123_000_000).unwrap(),
        day: chrono::NaiveDate::from_ymd_opt(2024, 2, 29).unwrap(),
        counters: HashMap::from([("a".into(), 1), ("b".into(), -2)]),
    }
}

#[tokio::test]
async fn every_codec_round_trips() {
    let server = Target::start();
    let store = server.store().await;
    let mut e = everything();
    e.cached = 99; // skipped: not stored, read back as Default
    store.save(&e).await.unwrap();
    let back = store.get::<Everything>(&-5).await.unwrap().unwrap();
    assert_eq!(back, everything());

    let mut c = server.conn();
    let keys = store.keys().of::<Everything>(-5);
    let (key, map) = (keys.base.as_str(), keys.maps[0].as_str());
    if !server.is_cluster() {
        assert_eq!((key, map), ("everything:-5", "everything:-5:counters"));
    } else {
        assert_eq!((key, map), ("everything:{-5}", "everything:{-5}:counters"));
    }
    assert_eq!(server.keys(), sorted(vec![key.to_owned(), map.to_owned()]));
    let raw: HashMap<String, Vec<u8>> = c.hgetall(key).unwrap();
    assert_eq!(raw["flag"], b"1");
    assert_eq!(raw["h"], b"18446744073709551615");
    assert_eq!(raw["bytes"], vec![0, 159, 146, 150, 255]);
    assert_eq!(raw["empty"], b"", "Some(\"\") is stored as an empty string");
    assert!(!raw.contains_key("maybe"), "None is not stored");
    assert!(!raw.contains_key("cached"), "skip is not stored");
    assert_eq!(raw["n"], b"nick", "rename");
    assert_eq!(raw["address"], br#"{"city":"Berlin","zip":null}"#);
    assert_eq!(raw["tags"], br#"["a","b:c"]"#);
    assert_eq!(raw["uuid"], b"12345678-9abc-def0-1234-56789abcdef0");
    assert_eq!(raw["at"], b"2023-11-14T22:13:20.123Z");
    assert_eq!(raw["day"], b"2024-02-29");
    let counters: HashMap<String, i64> = c.hgetall(map).unwrap();
    assert_eq!(counters, HashMap::from([("a".into(), 1), ("b".into(), -2)]));
}

#[tokio::test]
async fn a_default_field_reads_absent_as_default() {
    let server = Target::start();
    let store = server.store().await;
    let mut e = everything();
    e.added_later = 5;
    store.save(&e).await.unwrap();
    // A record written before the field existed.
    let key = store.keys().of::<Everything>(-5).base;
    let _: () = server.conn().hdel(&key, "added_later").unwrap();
    let back = store.get::<Everything>(&-5).await.unwrap().unwrap();
    assert_eq!(back.added_later, 0);
}

/// The legacy format of the migration scenario: one JSON string per user.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "json", key = "User_{id}_Profile")]
struct LegacyProfile {
    #[pk]
    id: u64,
    name: String,
    age: u32,
    big: u64,
    rating: f64,
    email: Option<String>,
    tags: Vec<String>,
    #[hash]
    prefs: BTreeMap<String, String>,
}

fn legacy() -> LegacyProfile {
    LegacyProfile {
        id: 7,
        name: "Grace".into(),
        age: 40,
        big: u64::MAX - 1,
        rating: 4.5,
        email: None,
        tags: vec!["x".into()],
        prefs: BTreeMap::from([("a".into(), "b".into())]),
    }
}

#[tokio::test]
async fn json_layout_stores_one_document() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&legacy()).await.unwrap();
    let keys = store.keys().of::<LegacyProfile>(7);
    assert_eq!(
        server.keys(),
        sorted(vec![keys.base.clone(), keys.maps[0].clone()])
    );
    if !server.is_cluster() {
        assert_eq!(server.keys(), ["User_7_Profile", "User_7_Profile:prefs"]);
    } else {
        assert_eq!(
            server.keys(),
            ["User_{7}_Profile", "User_{7}_Profile:prefs"]
        );
    }
    let doc: String = server.conn().get(&keys.base).unwrap();
    let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"name": "Grace", "age": 40, "big": u64::MAX - 1, "rating": 4.5, "tags": ["x"]})
    );
    assert_eq!(
        store.get::<LegacyProfile>(&7).await.unwrap(),
        Some(legacy())
    );
}

#[tokio::test]
async fn json_layout_update_changes_fields_exactly() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&legacy()).await.unwrap();
    store
        .update::<LegacyProfile>(&7)
        .incr(LegacyProfile::BIG, 1)
        .incr(LegacyProfile::RATING, 0.25)
        .set(LegacyProfile::EMAIL, Some("g@example.com".to_string()))
        .hset(LegacyProfile::PREFS, "c", "d")
        .exec()
        .await
        .unwrap();
    let p = store.get::<LegacyProfile>(&7).await.unwrap().unwrap();
    assert_eq!(p.big, u64::MAX, "no float rounding of large integers");
    assert_eq!(p.rating, 4.75);
    assert_eq!(p.email.as_deref(), Some("g@example.com"));
    assert_eq!(p.prefs.len(), 2);
}

#[tokio::test]
async fn json_layout_updates_from_many_tasks_all_land() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&legacy()).await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                for _ in 0..10 {
                    store
                        .update::<LegacyProfile>(&7)
                        .incr(LegacyProfile::AGE, 1)
                        .exec()
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let p = store.get::<LegacyProfile>(&7).await.unwrap().unwrap();
    assert_eq!(p.age, 40 + 80, "compare-and-set loses no increment");
}

/// Every column optional: the entity must still exist when all are None.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Sparse {
    #[pk]
    id: u32,
    note: Option<String>,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings")]
struct SparseColumns {
    #[pk]
    id: u32,
    note: Option<String>,
}

#[tokio::test]
async fn an_entity_with_only_none_fields_still_exists() {
    let server = Target::start();
    let store = server.store().await;
    let s = Sparse { id: 1, note: None };
    store.save(&s).await.unwrap();
    assert_eq!(store.get::<Sparse>(&1).await.unwrap(), Some(s));
    assert!(store.exists::<Sparse>(&1).await.unwrap());
    store
        .update::<Sparse>(&1)
        .set(Sparse::NOTE, Some("hi".to_string()))
        .exec()
        .await
        .unwrap();
    let sparse = store.keys().of::<Sparse>(1).base;
    let raw: HashMap<String, String> = server.conn().hgetall(&sparse).unwrap();
    assert_eq!(
        raw,
        HashMap::from([("note".into(), "hi".into())]),
        "marker gone"
    );

    let c = SparseColumns { id: 2, note: None };
    store.save(&c).await.unwrap();
    let columns = store.keys().of::<SparseColumns>(2);
    let (marker, note) = (columns.base.clone(), column(&columns, "note").to_owned());
    if !server.is_cluster() {
        assert_eq!(
            (sparse.as_str(), marker.as_str(), note.as_str()),
            ("sparse:1", "sparse_columns:2", "sparse_columns:2:note")
        );
        assert_eq!(server.keys(), ["sparse:1", "sparse_columns:2"]);
    } else {
        assert_eq!(
            (sparse.as_str(), marker.as_str(), note.as_str()),
            (
                "sparse:{1}",
                "sparse_columns:{2}",
                "sparse_columns:{2}:note"
            )
        );
    }
    assert_eq!(server.keys(), sorted(vec![sparse.clone(), marker.clone()]));
    assert_eq!(store.get::<SparseColumns>(&2).await.unwrap(), Some(c));
    store
        .update::<SparseColumns>(&2)
        .set(SparseColumns::NOTE, Some("x".to_string()))
        .exec()
        .await
        .unwrap();
    // The marker stays: it is the key that shows the entity exists.
    if !server.is_cluster() {
        assert_eq!(
            server.keys(),
            ["sparse:1", "sparse_columns:2", "sparse_columns:2:note"]
        );
    }
    assert_eq!(
        server.keys(),
        sorted(vec![sparse.clone(), marker.clone(), note.clone()])
    );
    store
        .update::<SparseColumns>(&2)
        .set(SparseColumns::NOTE, None)
        .exec()
        .await
        .unwrap();
    if !server.is_cluster() {
        assert_eq!(server.keys(), ["sparse:1", "sparse_columns:2"]);
    }
    assert_eq!(server.keys(), sorted(vec![sparse, marker]));
    assert!(store.exists::<SparseColumns>(&2).await.unwrap());
}

/// Users as one string key per column: a column with its own timeout.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{id}")]
struct Account {
    #[pk]
    id: u64,
    username: String,
    #[redis(ttl = 60)]
    sms_code: Option<String>,
}

#[tokio::test]
async fn strings_layout_column_ttl() {
    let server = Target::start();
    let store = server.store().await;
    let a = Account {
        id: 9,
        username: "lisi".into(),
        sms_code: Some("4711".into()),
    };
    store.save(&a).await.unwrap();
    let mut c = server.conn();
    let keys = store.keys().of::<Account>(9);
    let (code, name) = (column(&keys, "sms_code"), column(&keys, "username"));
    if !server.is_cluster() {
        assert_eq!(
            (code, name),
            ("user:userid:9:sms_code", "user:userid:9:username")
        );
    } else {
        assert_eq!(
            (code, name),
            ("user:userid:{9}:sms_code", "user:userid:{9}:username")
        );
    }
    let code_ttl: i64 = c.ttl(code).unwrap();
    assert!((55..=60).contains(&code_ttl), "{code_ttl}");
    let name_ttl: i64 = c.ttl(name).unwrap();
    assert_eq!(name_ttl, -1);
    // The code expiring leaves the account in place, with no code.
    let _: () = c.pexpire(code, 1).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let back = store.get::<Account>(&9).await.unwrap().unwrap();
    assert_eq!(back.sms_code, None);
    assert_eq!(back.username, "lisi");
    // An entity TTL does not override the column's own one.
    store
        .expiry()
        .save_with_ttl(&a, std::time::Duration::from_secs(1000))
        .await
        .unwrap();
    let name_ttl: i64 = c.ttl(name).unwrap();
    assert!((990..=1000).contains(&name_ttl));
    let code_ttl: i64 = c.ttl(code).unwrap();
    assert!((55..=60).contains(&code_ttl), "{code_ttl}");
}
