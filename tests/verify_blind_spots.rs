//! What verify reports and repair leaves alone: a key under the type's
//! prefix that no pk produces (never decoded, never indexed), a relation set
//! of an entity that has no relations, and a register or relation set of
//! the wrong type (a type problem, not a one-sided relation).

use redis_entity::relation::Relation;
use redis_entity::verify::Violation;
use redis_entity::{RedisEntity, Store};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "product")]
struct Product {
    #[pk]
    sku: String,
    #[index]
    color: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "acct")]
struct Acct {
    #[pk]
    id: u64,
    name: String,
}

const FOLLOWS: Relation<Acct, Acct> = Relation::many_to_many("following", "followers");

fn cmd(server: &RedisServer, args: &[&str]) {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    let _: redis::Value = c.query(&mut server.conn()).unwrap();
}

/// A private server with accounts 1 and 2, unrelated.
async fn two_accounts() -> (RedisServer, Store) {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for id in [1, 2] {
        store
            .save(&Acct {
                id,
                name: format!("a{id}"),
            })
            .await
            .unwrap();
    }
    (server, store)
}

#[tokio::test]
async fn a_key_no_pk_produces_is_reported_and_never_indexed() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let p = Product {
        sku: "{X}".into(),
        color: "red".into(),
    };
    store.save(&p).await.unwrap();
    assert_eq!(store.keys().of::<Product>("{X}").base, "product:%7BX%7D");
    // Written around the library: a brace, a glob character, an escape of a letter.
    for key in ["product:{X}", "product:a*b", "product:%41"] {
        cmd(&server, &["HSET", key, "color", "red"]);
    }
    let before = server.snapshot();
    let report = store.maintenance::<Product>().verify().await.unwrap();
    let mut foreign: Vec<&str> = report
        .violations
        .iter()
        .filter_map(|v| match v {
            Violation::ForeignKey { key } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    foreign.sort();
    assert_eq!(
        foreign,
        ["product:%41", "product:a*b", "product:{X}"],
        "{report:?}"
    );
    assert_eq!(report.violations.len(), 3, "{report:?}");
    let repaired = store
        .maintenance::<Product>()
        .repair(&report)
        .await
        .unwrap();
    assert_eq!((repaired.fixed, repaired.left.len()), (0, 3));
    assert_eq!(store.maintenance::<Product>().reindex().await.unwrap(), 1);
    assert_eq!(
        server.snapshot(),
        before,
        "repair and reindex wrote nothing"
    );
    assert_eq!(store.find(Product::COLOR, "red").await.unwrap(), vec![p]);
}

#[tokio::test]
async fn a_relation_set_of_an_entity_without_relations_is_reported() {
    let (server, store) = two_accounts().await;
    cmd(&server, &["SADD", "acct:1:following", "77"]);
    let report = store.maintenance::<Acct>().verify().await.unwrap();
    assert_eq!(
        report.violations,
        vec![Violation::UnlistedKey {
            key: "acct:1:following".into(),
            member: "1".into()
        }]
    );
    // With a live relation the set is listed, and its stray member found.
    store.relation(&FOLLOWS).relate(1, 2).await.unwrap();
    let report = store.maintenance::<Acct>().verify().await.unwrap();
    assert!(
        report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::DanglingMember { member, .. } if member == "77")),
        "{report:?}"
    );
}

#[tokio::test]
async fn a_relation_set_or_register_of_the_wrong_type_is_a_type_problem() {
    let (server, store) = two_accounts().await;
    store.relation(&FOLLOWS).relate(1, 2).await.unwrap();
    cmd(&server, &["DEL", "acct:1:following"]);
    cmd(&server, &["SET", "acct:1:following", "x"]);
    let report = store.maintenance::<Acct>().verify().await.unwrap();
    assert_eq!(
        report.violations,
        vec![Violation::WrongType {
            key: "acct:1:following".into(),
            wanted: "set"
        }],
        "{report:?}"
    );
    cmd(&server, &["DEL", "acct:1:following", "acct:2:@rel"]);
    cmd(&server, &["SET", "acct:2:@rel", "x"]);
    let report = store.maintenance::<Acct>().verify().await.unwrap();
    assert!(
        report.violations.contains(&Violation::WrongType {
            key: "acct:2:@rel".into(),
            wanted: "hash"
        }),
        "{report:?}"
    );
    let repaired = store.maintenance::<Acct>().repair(&report).await.unwrap();
    assert!(repaired
        .left
        .iter()
        .any(|u| matches!(&u.violation, Violation::WrongType { .. })));
}
