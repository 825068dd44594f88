//! Relation, timeline, board and increment writes meet a key of the wrong
//! type the way entity saves do: the write fails with a typed error naming
//! the planted key, and nothing is written (a `DUMP` of every key before and
//! after is equal). Reads name the key of the wrong type too, never the
//! first key of their call, and never carry a script's location.
//!
//! One server: it compares the whole keyspace of that server with `DUMP`.

use redis_entity::board::Board;
use redis_entity::relation::{Relation, Timeline};
use redis_entity::{Error, RedisEntity, Store};
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
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "meter")]
struct Meter {
    #[pk]
    id: u64,
    #[index]
    bucket: i64,
    #[index(sorted)]
    reading: f64,
    #[index(prefix)]
    label: String,
}

const FOLLOWS: Relation<Acct, Acct> = Relation::many_to_many("following", "followers");
const MENTOR: Relation<Acct, Acct> = Relation::one_to_many("mentees", "mentor");
const FEED: Timeline<Acct, Acct> = Timeline::new("feed", 100);
const DAILY: Board<Acct> = Board::daily("daily", 3);

fn acct(id: u64) -> Acct {
    Acct {
        id,
        country: "DE".into(),
        score: id as f64,
    }
}

fn plant(server: &RedisServer, key: &str) {
    let () = redis::cmd("SET")
        .arg(key)
        .arg("x")
        .query(&mut server.conn())
        .unwrap();
}

/// Deletes what `plant` (or a test) put at `key`.
fn unplant(server: &RedisServer, key: &str) {
    let () = redis::cmd("DEL")
        .arg(key)
        .query(&mut server.conn())
        .unwrap();
}

/// Three accounts, 1 following 2 and 3, 1 mentoring 2.
async fn accounts() -> (RedisServer, Store) {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for id in 1..=4 {
        store.save(&acct(id)).await.unwrap();
    }
    store.relation(&FOLLOWS).relate(1, 2).await.unwrap();
    store.relation(&FOLLOWS).relate(1, 3).await.unwrap();
    store.relation(&MENTOR).relate(1, 2).await.unwrap();
    (server, store)
}

/// Asserts that `err` is a `WrongType` naming `key`, without script words.
fn names(what: &str, err: &Error, key: &str) {
    match err {
        Error::WrongType { key: named, .. } => assert_eq!(named, key, "{what}: {err}"),
        other => panic!("{what}: expected WrongType naming {key}, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        !text.contains("user_script") && !text.contains("script:"),
        "{what}: {text}"
    );
}

/// Plants `key`, runs `write`, and checks that it fails naming `key` and
/// that the keyspace is what it was.
async fn refused<F, Fut>(what: &str, key: &str, write: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = redis_entity::Result<()>>,
{
    let (server, store) = accounts().await;
    plant(&server, key);
    let before = server.snapshot();
    let err = write(store).await.expect_err(what);
    names(what, &err, key);
    assert_eq!(server.snapshot(), before, "{what}: the keyspace changed");
}

#[tokio::test]
async fn relation_writes_meeting_a_wrong_type_write_nothing() {
    refused(
        "relate: b's reverse set",
        "acct:4:followers",
        |s| async move { s.relation(&FOLLOWS).relate(1, 4).await.map(drop) },
    )
    .await;
    refused(
        "relate: a's forward set",
        "acct:4:following",
        |s| async move { s.relation(&FOLLOWS).relate(4, 1).await.map(drop) },
    )
    .await;
    refused("relate: a's register", "acct:4:@rel", |s| async move {
        s.relation(&FOLLOWS).relate(4, 1).await.map(drop)
    })
    .await;
    refused("relate: b's register", "acct:4:@rel", |s| async move {
        s.relation(&FOLLOWS).relate(1, 4).await.map(drop)
    })
    .await;
    // One-to-many: 2 leaves mentor 1 for 3; 1's set is written too.
    refused(
        "one-to-many: the previous owner's set",
        "acct:1:mentees",
        |s| async move { s.relation(&MENTOR).relate(3, 2).await.map(drop) },
    )
    .await;
    refused(
        "unrelate: b's reverse set",
        "acct:2:followers",
        |s| async move { s.relation(&FOLLOWS).unrelate(1, 2).await.map(drop) },
    )
    .await;
    refused("unrelate: b's register", "acct:3:@rel", |s| async move {
        s.relation(&FOLLOWS).unrelate(1, 3).await.map(drop)
    })
    .await;
}

#[tokio::test]
async fn a_delete_meeting_a_wrong_type_on_the_other_side_writes_nothing() {
    refused(
        "delete: another side's set",
        "acct:3:followers",
        |s| async move { s.delete::<Acct>(1).await.map(drop) },
    )
    .await;
    refused(
        "delete: another side's register",
        "acct:2:@rel",
        |s| async move { s.delete::<Acct>(1).await.map(drop) },
    )
    .await;
    refused("delete: its own register", "acct:4:@rel", |s| async move {
        s.delete::<Acct>(4).await.map(drop)
    })
    .await;
}

#[tokio::test]
async fn timeline_pushes_and_board_increments_meeting_a_wrong_type_write_nothing() {
    refused(
        "timeline push: one owner's list",
        "acct:3:feed",
        |s| async move { s.timeline(&FEED).push(4, [1, 2, 3]).await.map(drop) },
    )
    .await;
    refused(
        "timeline push: one owner's register",
        "acct:2:@rel",
        |s| async move { s.timeline(&FEED).push(4, [1, 2, 3]).await.map(drop) },
    )
    .await;
    // More owners than one call covers: the first calls write nothing either.
    let (server, store) = accounts().await;
    let owners: Vec<Acct> = (5..=2500).map(acct).collect();
    store.save_all(&owners).await.unwrap();
    plant(&server, "acct:2400:feed");
    let before = server.snapshot();
    let err = store
        .timeline(&FEED)
        .push(4, 1..=2500u64)
        .await
        .unwrap_err();
    names("timeline push to 2,500 owners", &err, "acct:2400:feed");
    assert_eq!(
        server.snapshot(),
        before,
        "2,500 owners: the keyspace changed"
    );
    let today = DAILY.key(
        &redis_entity::Namespace::none(),
        std::time::SystemTime::now(),
    );
    refused("board increment", &today, |s| async move {
        s.board(&DAILY).incr(1, 5.0).await.map(drop)
    })
    .await;
}

/// A private server with meter 1 (bucket 5) saved, then `key` planted.
async fn meter_with(key: &str) -> (RedisServer, Store) {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let m = Meter {
        id: 1,
        bucket: 5,
        reading: 1.0,
        label: "hall".into(),
    };
    store.save(&m).await.unwrap();
    plant(&server, key);
    (server, store)
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "gauge", layout = "strings")]
struct Gauge {
    #[pk]
    id: u64,
    #[index]
    level: Option<i64>,
}

/// The increment probe puts back a strings-layout column as it was, and
/// deletes a field the increment created.
#[tokio::test]
async fn an_increment_probe_leaves_columns_and_absent_fields_as_they_were() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store
        .save(&Gauge {
            id: 1,
            level: Some(5),
        })
        .await
        .unwrap();
    store.save(&Gauge { id: 2, level: None }).await.unwrap();
    for (id, planted) in [(1, "gauge:@level:6"), (2, "gauge:@level:1")] {
        plant(&server, planted);
        let before = server.snapshot();
        let err = store
            .update::<Gauge>(id)
            .incr(Gauge::LEVEL, 1)
            .exec()
            .await
            .expect_err(planted);
        names(planted, &err, planted);
        assert_eq!(server.snapshot(), before, "{planted}: the keyspace changed");
    }
}

#[tokio::test]
async fn increments_and_sets_into_an_index_meeting_a_wrong_type_write_nothing() {
    for (what, key) in [
        ("incr into an equality index", "meter:@bucket:6"),
        ("incr of a sorted index", "meter:@reading"),
    ] {
        let (server, store) = meter_with(key).await;
        let before = server.snapshot();
        let err = store
            .update::<Meter>(1)
            .incr(Meter::BUCKET, 1)
            .incr(Meter::READING, 0.5)
            .exec()
            .await
            .expect_err(what);
        names(what, &err, key);
        assert_eq!(server.snapshot(), before, "{what}: the keyspace changed");
        // Once the planted key is gone, the same increment goes through.
        unplant(&server, key);
        store
            .update::<Meter>(1)
            .incr(Meter::BUCKET, 1)
            .incr(Meter::READING, 0.5)
            .exec()
            .await
            .unwrap();
        let m = store.get::<Meter>(1).await.unwrap().unwrap();
        assert_eq!((m.bucket, m.reading), (6, 1.5));
        assert_eq!(
            store.find(Meter::BUCKET, 6).await.unwrap(),
            vec![m.clone()],
            "{what}"
        );
        assert!(
            store
                .maintenance::<Meter>()
                .verify()
                .await
                .unwrap()
                .is_clean(),
            "{what}"
        );
    }
    for (what, key) in [
        ("set of an equality index", "meter:@bucket:9"),
        ("set of a prefix index", "meter:@label"),
    ] {
        let (server, store) = meter_with(key).await;
        let before = server.snapshot();
        let err = store
            .update::<Meter>(1)
            .set(Meter::BUCKET, 9)
            .set(Meter::LABEL, "attic".to_string())
            .exec()
            .await
            .expect_err(what);
        names(what, &err, key);
        assert_eq!(server.snapshot(), before, "{what}: the keyspace changed");
    }
}

#[tokio::test]
async fn reads_name_the_key_of_the_wrong_type() {
    let (server, store) = accounts().await;
    plant(&server, "acct:@country:DE");
    let err = store
        .query::<Acct>()
        .eq(Acct::COUNTRY, "DE")
        .count()
        .await
        .unwrap_err();
    names("count", &err, "acct:@country:DE");
    let err = store
        .query::<Acct>()
        .eq(Acct::COUNTRY, "DE")
        .fetch()
        .await
        .unwrap_err();
    names("fetch", &err, "acct:@country:DE");
    let err = store.find(Acct::COUNTRY, "DE").await.unwrap_err();
    names("find", &err, "acct:@country:DE");

    plant(&server, "acct:@score");
    let err = store
        .query::<Acct>()
        .range(Acct::SCORE, 1.0..)
        .ids()
        .await
        .unwrap_err();
    names("range", &err, "acct:@score");
    let err = store.board(Acct::SCORE).rank(1).await.unwrap_err();
    names("rank", &err, "acct:@score");
    // A read sent as a pipeline maps its failing reply the same way.
    let err = store.board(Acct::SCORE).top(3).await.unwrap_err();
    names("top", &err, "acct:@score");
    let err = store.board(Acct::SCORE).top_each(3).await.unwrap_err();
    names("top_each", &err, "acct:@score");
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "route")]
struct Route {
    #[pk]
    id: u64,
    #[index]
    from: String,
    #[index]
    to: String,
    hops: i64,
}

fn route(id: u64, from: &str, to: &str) -> Route {
    Route {
        id,
        from: from.into(),
        to: to.into(),
        hops: 1,
    }
}

/// The straight-line write checks the sets of equal values and of ids by
/// writing them first: a later one of another type, or an increment of a
/// stored value that is not a number, puts back the entries it moved
/// before, so the write leaves nothing behind.
#[tokio::test]
async fn set_entries_moved_before_a_failing_write_are_put_back() {
    // Both values move; the second index's new set is a string.
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&route(1, "A", "B")).await.unwrap();
    store.save(&route(2, "A", "C")).await.unwrap();
    plant(&server, "route:@to:D");
    let before = server.snapshot();
    let err = store
        .save(&route(1, "C", "D"))
        .await
        .expect_err("the second set");
    names("a save moving two values", &err, "route:@to:D");
    assert_eq!(server.snapshot(), before, "the first move is put back");
    // A new entity: both sets written, then the set of ids is a string.
    plant(&server, "route:@ids:xx");
    let before = server.snapshot();
    let err = store
        .save(&route(3, "E", "F"))
        .await
        .expect_err("the ids set");
    names("a new entity", &err, "route:@ids:xx");
    assert_eq!(server.snapshot(), before, "the new entries are taken out");
    // The planted string replaced the set of ids: put the set back.
    unplant(&server, "route:@ids:xx");
    let _: i64 = redis::cmd("SADD")
        .arg("route:@ids:xx")
        .arg(1)
        .arg(2)
        .query(&mut server.conn())
        .unwrap();
    // The first id of a new bucket (100-199) lists it in the directory of
    // buckets: a string there refuses the save, and nothing is left of it.
    plant(&server, "route:@ids:@buckets");
    let before = server.snapshot();
    let err = store
        .save(&route(100, "E", "F"))
        .await
        .expect_err("the directory of buckets");
    names("a new bucket", &err, "route:@ids:@buckets");
    assert_eq!(server.snapshot(), before, "the new entries are taken out");
    unplant(&server, "route:@ids:@buckets");
    let _: i64 = redis::cmd("SADD")
        .arg("route:@ids:@buckets")
        .arg("xx")
        .query(&mut server.conn())
        .unwrap();
    // A move, then an increment of a stored value that is not a number.
    let () = redis::cmd("HSET")
        .arg("route:2")
        .arg("hops")
        .arg("many")
        .query(&mut server.conn())
        .unwrap();
    let before = server.snapshot();
    let err = store
        .update::<Route>(2)
        .set(Route::FROM, "Z".to_string())
        .incr(Route::HOPS, 1)
        .exec()
        .await
        .expect_err("not a number");
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert_eq!(server.snapshot(), before, "the move is put back");
    // With the planted keys gone, the same writes go through.
    unplant(&server, "route:@to:D");
    store.save(&route(1, "C", "D")).await.unwrap();
    store.save(&route(3, "E", "F")).await.unwrap();
    assert_eq!(
        store.find(Route::TO, "D".to_string()).await.unwrap(),
        vec![route(1, "C", "D")]
    );
    let () = redis::cmd("HSET")
        .arg("route:2")
        .arg("hops")
        .arg("1")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(
        store.find(Route::FROM, "A".to_string()).await.unwrap(),
        vec![route(2, "A", "C")]
    );
    let report = store.maintenance::<Route>().verify().await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "shelf")]
struct Shelf {
    #[pk]
    id: u64,
    #[index]
    room: String,
    #[index]
    tags: std::collections::BTreeSet<String>,
}

fn shelf(id: u64, room: &str, tags: &[&str]) -> Shelf {
    Shelf {
        id,
        room: room.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
    }
}

/// When the old value's set is missing (an index an earlier fault lost),
/// the move is an `SADD`, which checks the new set's type itself: a string
/// there refuses the write, and otherwise the entity is listed again.
#[tokio::test]
async fn a_move_from_a_missing_set_checks_the_new_set() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&route(1, "A", "B")).await.unwrap();
    unplant(&server, "route:@from:A");
    plant(&server, "route:@from:C");
    let before = server.snapshot();
    let err = store
        .save(&route(1, "C", "B"))
        .await
        .expect_err("the new set is a string");
    names("a move from a missing set", &err, "route:@from:C");
    assert_eq!(server.snapshot(), before, "nothing written");
    unplant(&server, "route:@from:C");
    store.save(&route(1, "C", "B")).await.unwrap();
    assert_eq!(
        store.find(Route::FROM, "C".to_string()).await.unwrap(),
        vec![route(1, "C", "B")]
    );
    let report = store.maintenance::<Route>().verify().await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// The same for tag sets: a move of the room and of one tag are put back
/// when the next tag's set is a string.
#[tokio::test]
async fn tag_entries_moved_before_a_failing_write_are_put_back() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store
        .save(&shelf(1, "hall", &["oak", "tall"]))
        .await
        .unwrap();
    store.save(&shelf(2, "hall", &["oak"])).await.unwrap();
    plant(&server, "shelf:@tags:pine");
    let before = server.snapshot();
    let err = store
        .save(&shelf(1, "attic", &["oak", "pine"]))
        .await
        .expect_err("the new tag's set");
    names("a save moving a room and tags", &err, "shelf:@tags:pine");
    assert_eq!(server.snapshot(), before, "the moves are put back");
    unplant(&server, "shelf:@tags:pine");
    store
        .save(&shelf(1, "attic", &["oak", "pine"]))
        .await
        .unwrap();
    assert_eq!(
        store.find(Shelf::TAGS, "pine".to_string()).await.unwrap(),
        vec![shelf(1, "attic", &["oak", "pine"])]
    );
    let report = store.maintenance::<Shelf>().verify().await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// The members of the set at `key`, sorted (none when it does not exist).
fn smembers(server: &RedisServer, key: &str) -> Vec<String> {
    let mut members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(key)
        .query(&mut server.conn())
        .unwrap();
    members.sort();
    members
}

/// The batch form puts back per entity: in one `save_all`, the route whose
/// second move meets a string fails naming it with its first move put
/// back, and the routes before and after it in the batch are saved.
#[tokio::test]
async fn a_batch_puts_back_the_failing_entity_and_saves_the_others() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&route(1, "A", "B")).await.unwrap();
    store.save(&route(2, "A", "C")).await.unwrap();
    plant(&server, "route:@to:D");
    let hash = server.snapshot()["route:1"].clone();
    let smoves = server.calls("smove");
    let err = store
        .save_all(&[route(2, "X", "C"), route(1, "C", "D"), route(3, "E", "F")])
        .await
        .expect_err("route 1's second set");
    names("a batch moving two values", &err, "route:@to:D");
    // Only the straight-line write moves a value with SMOVE: the batch ran it.
    assert!(server.calls("smove") > smoves, "the batch form ran");
    // Route 1 as it was: its hash, its old sets, and the set of ids.
    assert_eq!(server.snapshot()["route:1"], hash, "route 1's hash");
    assert_eq!(smembers(&server, "route:@from:A"), ["1"]);
    assert_eq!(smembers(&server, "route:@to:B"), ["1"]);
    assert!(smembers(&server, "route:@from:C").is_empty(), "moved back");
    assert_eq!(smembers(&server, "route:@ids:xx"), ["1", "2", "3"]);
    assert_eq!(
        store.get::<Route>(1).await.unwrap(),
        Some(route(1, "A", "B"))
    );
    // The others are saved, with their sets.
    assert_eq!(
        store.get::<Route>(2).await.unwrap(),
        Some(route(2, "X", "C"))
    );
    assert_eq!(
        store.get::<Route>(3).await.unwrap(),
        Some(route(3, "E", "F"))
    );
    assert_eq!(smembers(&server, "route:@from:X"), ["2"]);
    assert_eq!(smembers(&server, "route:@to:C"), ["2"]);
    assert_eq!(smembers(&server, "route:@from:E"), ["3"]);
    assert_eq!(smembers(&server, "route:@to:F"), ["3"]);
    unplant(&server, "route:@to:D");
    let report = store.maintenance::<Route>().verify().await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "lane")]
struct Lane {
    #[pk]
    code: String,
    #[index]
    from: String,
    #[index]
    to: String,
    hops: i64,
}

fn lane(code: &str, from: &str, to: &str) -> Lane {
    Lane {
        code: code.into(),
        from: from.into(),
        to: to.into(),
        hops: 1,
    }
}

/// Each key with its type, its contents and whether it has a TTL.
type Contents = std::collections::BTreeMap<String, (String, Vec<String>, i64)>;

/// The keyspace as a `snapshot` has it, but with a set's members and a
/// hash's fields and values (sorted) in place of their `DUMP` (escaped for
/// any other key): a put-back restores a set's members, not always its
/// bytes (docs/consistency.md).
fn contents(server: &RedisServer) -> Contents {
    let mut c = server.conn();
    server
        .snapshot()
        .into_iter()
        .map(|(key, (kind, dump, ttl))| {
            let value = match kind.as_str() {
                "set" => {
                    let mut members: Vec<String> =
                        redis::cmd("SMEMBERS").arg(&key).query(&mut c).unwrap();
                    members.sort();
                    members
                }
                "hash" => {
                    let fields: std::collections::BTreeMap<String, String> =
                        redis::cmd("HGETALL").arg(&key).query(&mut c).unwrap();
                    fields.into_iter().flat_map(|(f, v)| [f, v]).collect()
                }
                _ => vec![dump.escape_ascii().to_string()],
            };
            (key, (kind, value, ttl))
        })
        .collect()
}

/// The put-back with `String` pks, whose sets' members are not integers:
/// a failing move, a failing new entity and a refused increment leave
/// every set's members, every hash's fields and every other key's `DUMP`
/// as they were.
#[tokio::test]
async fn set_entries_of_string_pks_are_put_back() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    // `dock:1` is escaped in its keys and its sets (`dock%3A1`).
    store.save(&lane("dock:1", "A", "B")).await.unwrap();
    store.save(&lane("dock 2", "A", "C")).await.unwrap();
    store.save(&lane("dock-3", "C", "B")).await.unwrap();
    // Both values move; the second index's new set is a string.
    plant(&server, "lane:@to:D");
    let before = contents(&server);
    let err = store
        .save(&lane("dock:1", "C", "D"))
        .await
        .expect_err("the second set");
    names("a save moving two values", &err, "lane:@to:D");
    assert_eq!(contents(&server), before, "the first move is put back");
    // A new entity: both sets written, then the set of ids is a string.
    unplant(&server, "lane:@to:D");
    let ids = smembers(&server, "lane:@ids");
    plant(&server, "lane:@ids");
    let before = contents(&server);
    let err = store
        .save(&lane("dock:4", "A", "B"))
        .await
        .expect_err("the ids set");
    names("a new entity", &err, "lane:@ids");
    assert_eq!(contents(&server), before, "the new entries are taken out");
    unplant(&server, "lane:@ids");
    let _: i64 = redis::cmd("SADD")
        .arg("lane:@ids")
        .arg(&ids)
        .query(&mut server.conn())
        .unwrap();
    // A move, then an increment of a stored value that is not a number.
    let () = redis::cmd("HSET")
        .arg("lane:dock 2")
        .arg("hops")
        .arg("many")
        .query(&mut server.conn())
        .unwrap();
    let before = contents(&server);
    let err = store
        .update::<Lane>("dock 2")
        .set(Lane::FROM, "C".to_string())
        .incr(Lane::HOPS, 1)
        .exec()
        .await
        .expect_err("not a number");
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert_eq!(contents(&server), before, "the move is put back");
    let () = redis::cmd("HSET")
        .arg("lane:dock 2")
        .arg("hops")
        .arg("1")
        .query(&mut server.conn())
        .unwrap();
    // With the planted keys gone, the same writes go through.
    store.save(&lane("dock:1", "C", "D")).await.unwrap();
    store.save(&lane("dock:4", "A", "B")).await.unwrap();
    assert_eq!(
        store.find(Lane::TO, "D".to_string()).await.unwrap(),
        vec![lane("dock:1", "C", "D")]
    );
    let report = store.maintenance::<Lane>().verify().await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// Saves `seed` on a private server, plants both `keys`, and checks that
/// saving `e` fails naming one of them and changes nothing: every other
/// key's `DUMP` is as it was and both keys still hold their strings.
async fn refused_twice<E: redis_entity::Entity>(what: &str, keys: [&str; 2], seed: &[E], e: E) {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save_all(seed).await.unwrap();
    for key in keys {
        plant(&server, key);
    }
    let mut before = server.snapshot();
    let err = store.save(&e).await.expect_err(what);
    let named = keys
        .into_iter()
        .find(|k| matches!(&err, Error::WrongType { key, .. } if key == k))
        .unwrap_or_else(|| {
            panic!("{what}: expected WrongType naming one of {keys:?}, got {err:?}")
        });
    names(what, &err, named);
    let mut after = server.snapshot();
    for key in keys {
        let value: String = redis::cmd("GET")
            .arg(key)
            .query(&mut server.conn())
            .unwrap();
        assert_eq!(value, "x", "{what}: {key}");
        before.remove(key);
        after.remove(key);
    }
    assert_eq!(after, before, "{what}: the keyspace changed");
}

/// Two keys of the wrong type at once: the save names one of them (the
/// straight-line write may name another than the general code) and writes
/// nothing, whether or not sets were written before the first it met.
#[tokio::test]
async fn two_keys_of_the_wrong_type_write_nothing() {
    let routes = [route(1, "A", "B"), route(2, "A", "C")];
    refused_twice(
        "both new sets of a move",
        ["route:@from:C", "route:@to:D"],
        &routes,
        route(1, "C", "D"),
    )
    .await;
    refused_twice(
        "a new entity's second set and the ids set",
        ["route:@to:F", "route:@ids:xx"],
        &routes,
        route(3, "A", "F"),
    )
    .await;
    refused_twice(
        "a new entity's first set and the ids set",
        ["route:@from:E", "route:@ids:xx"],
        &routes,
        route(3, "E", "C"),
    )
    .await;
    let shelves = [
        shelf(1, "hall", &["oak", "tall"]),
        shelf(2, "hall", &["oak"]),
    ];
    refused_twice(
        "two new tags' sets, after a move of the room and a tag",
        ["shelf:@tags:pine", "shelf:@tags:elm"],
        &shelves,
        shelf(1, "attic", &["oak", "pine", "elm"]),
    )
    .await;
    refused_twice(
        "an equality set and the sorted set",
        ["acct:@country:FR", "acct:@score"],
        &[acct(1), acct(2)],
        Acct {
            id: 1,
            country: "FR".into(),
            score: 7.0,
        },
    )
    .await;
}

/// The shadow (`<key>:@shadow`, the index entries an entity with a TTL
/// leaves behind) is checked like every other key of the entity: a save
/// with a TTL, of an existing entity and of a new one, writes nothing.
#[tokio::test]
async fn a_shadow_of_the_wrong_type_writes_nothing() {
    let ttl = std::time::Duration::from_secs(60);
    refused(
        "save_with_ttl, existing",
        "acct:1:@shadow",
        |s| async move {
            s.expiry::<Acct>()
                .save_with_ttl(&acct(1), ttl)
                .await
                .map(drop)
        },
    )
    .await;
    refused("save_with_ttl, new", "acct:9:@shadow", |s| async move {
        s.expiry::<Acct>()
            .save_with_ttl(&acct(9), ttl)
            .await
            .map(drop)
    })
    .await;
    // A save of an entity that has a TTL (the shadow is rewritten).
    let (server, store) = accounts().await;
    store
        .expiry::<Acct>()
        .save_with_ttl(&acct(5), ttl)
        .await
        .unwrap();
    unplant(&server, "acct:5:@shadow");
    plant(&server, "acct:5:@shadow");
    let before = server.snapshot();
    let mut moved = acct(5);
    moved.country = "FR".into();
    let err = store
        .expiry::<Acct>()
        .save_with_ttl(&moved, ttl)
        .await
        .unwrap_err();
    names("save of an entity with a TTL", &err, "acct:5:@shadow");
    assert_eq!(server.snapshot(), before, "the keyspace changed");
    assert_eq!(
        store.get::<Acct>(&5).await.unwrap().unwrap().country,
        "DE",
        "the refused save wrote"
    );
}

/// Asserts that `read` fails with a `WrongType` naming `key`.
async fn read_names<T: std::fmt::Debug>(
    what: &str,
    key: &str,
    read: impl std::future::Future<Output = redis_entity::Result<T>>,
) {
    let err = read.await.expect_err(what);
    names(what, &err, key);
}

/// Every kind of read maps WRONGTYPE the same way, naming the planted key:
/// rotating boards, relations, timelines, counts and scans.
#[tokio::test]
async fn every_read_names_the_key_of_the_wrong_type() {
    let (server, store) = accounts().await;
    let today = DAILY.key(
        &redis_entity::Namespace::none(),
        std::time::SystemTime::now(),
    );
    plant(&server, &today);
    read_names("rotating top", &today, store.board(&DAILY).top(3)).await;
    read_names("rotating rank", &today, store.board(&DAILY).rank(1)).await;

    plant(&server, "acct:1:following");
    let follows = store.relation(&FOLLOWS);
    read_names("related", "acct:1:following", follows.related(1)).await;
    read_names(
        "related_count",
        "acct:1:following",
        follows.related_count(1),
    )
    .await;
    read_names("is_related", "acct:1:following", follows.is_related(1, 2)).await;
    read_names(
        "related_entities",
        "acct:1:following",
        follows.related_entities(1),
    )
    .await;
    read_names("mutual", "acct:1:following", follows.mutual(1)).await;
    plant(&server, "acct:2:followers");
    read_names("related_back", "acct:2:followers", follows.related_back(2)).await;

    plant(&server, "acct:1:feed");
    let feed = store.timeline(&FEED);
    read_names("timeline len", "acct:1:feed", feed.len(1)).await;
    read_names("timeline ids", "acct:1:feed", feed.ids(1, 0, 10)).await;
    read_names("timeline page", "acct:1:feed", feed.page(1, 0, 10)).await;

    plant(&server, "acct:@country:DE");
    let query = || store.query::<Acct>().eq(Acct::COUNTRY, "DE");
    read_names("scan", "acct:@country:DE", query().scan(10).next_page()).await;
    read_names("ids", "acct:@country:DE", query().ids()).await;
    read_names(
        "none count",
        "acct:@country:DE",
        store.query::<Acct>().none(Acct::COUNTRY, ["DE"]).count(),
    )
    .await;
}
