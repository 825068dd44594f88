//! Conditional writes: an update or delete that requires something of the
//! stored values (`when(Packet::STATUS.is(0))`, `incr_within(STOCK, -1,
//! 0..)`), checked in the same atomic write. A condition that does not hold
//! is `Error::ConditionFailed` carrying the stored value, and nothing is
//! written. Runs on one server, and with `scripts/test.sh --cluster` on a
//! 3-master cluster.

use redis_entity::{Error, RedisEntity};
use std::sync::Arc;
use support::Target;

/// A red packet: claimable (status 0) by exactly one user.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "packet")]
struct Packet {
    #[pk]
    id: u64,
    #[index]
    status: u8,
    owner: Option<u64>,
}

/// An item with a stock that must never go below 0.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "item")]
struct Item {
    #[pk]
    id: u64,
    #[index(sorted)]
    stock: i64,
    label: Option<String>,
    big: u64,
}

/// The same, one string key per field.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "sitem", layout = "strings")]
struct StringsItem {
    #[pk]
    id: u64,
    #[index(sorted)]
    stock: i64,
    label: Option<String>,
    big: u64,
}

/// The same, one JSON document (which takes no indexes).
#[derive(RedisEntity, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[redis(prefix = "jitem", layout = "json")]
struct JsonItem {
    #[pk]
    id: u64,
    stock: i64,
    label: Option<String>,
    big: u64,
}

#[tokio::test]
async fn of_32_tasks_claiming_one_packet_exactly_one_succeeds() {
    let server = Target::start();
    let store = Arc::new(server.store().await);
    store
        .save(&Packet {
            id: 7,
            status: 0,
            owner: None,
        })
        .await
        .unwrap();
    let tasks: Vec<_> = (0..32u64)
        .map(|user| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .update::<Packet>(&7)
                    .when(Packet::STATUS.is(0))
                    .set(Packet::STATUS, 1)
                    .set(Packet::OWNER, Some(user))
                    .exec()
                    .await
                    .map(|()| user)
            })
        })
        .collect();
    let (mut winners, mut refused) = (Vec::new(), 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(user) => winners.push(user),
            Err(Error::ConditionFailed {
                field,
                condition,
                found,
                ..
            }) => {
                assert_eq!((field, condition.as_str()), ("status", "status = 0"));
                assert_eq!(found.as_deref(), Some("1"), "the stored status");
                refused += 1;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(refused, 31);
    let stored = store.get::<Packet>(&7).await.unwrap().unwrap();
    assert_eq!(stored.owner, Some(winners[0]));
    assert_eq!(
        store.find(Packet::STATUS, 1u8).await.unwrap(),
        vec![stored],
        "the status index follows the one claim"
    );
    assert!(store.find(Packet::STATUS, 0u8).await.unwrap().is_empty());
    let report = store.maintenance::<Packet>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
}

#[tokio::test]
async fn a_stock_of_100_sold_to_1000_buyers_sells_exactly_100_and_never_goes_negative() {
    let server = Target::start();
    let store = Arc::new(server.store().await);
    store
        .save(&Item {
            id: 1,
            stock: 100,
            label: None,
            big: 0,
        })
        .await
        .unwrap();
    // 1,000 buyers from 50 tasks of 20 purchases each.
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let (mut sold, mut sold_out) = (0, 0);
                for _ in 0..20 {
                    let buy = store
                        .update::<Item>(&1)
                        .incr_within(Item::STOCK, -1, 0..)
                        .exec()
                        .await;
                    match buy {
                        Ok(()) => sold += 1,
                        Err(Error::ConditionFailed { found, .. }) => {
                            assert_eq!(found.as_deref(), Some("0"));
                            sold_out += 1;
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
                (sold, sold_out)
            })
        })
        .collect();
    let (mut sold, mut sold_out) = (0, 0);
    for t in tasks {
        let (s, o) = t.await.unwrap();
        sold += s;
        sold_out += o;
    }
    assert_eq!((sold, sold_out), (100, 900));
    assert_eq!(store.get::<Item>(&1).await.unwrap().unwrap().stock, 0);
    // The sorted index holds the final stock.
    assert_eq!(
        store.board(Item::STOCK).top(1).await.unwrap()[0].1,
        0.0,
        "the sorted index's score"
    );
    let report = store.maintenance::<Item>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
}

/// The conditions of one item type, checked on `ItemType`: every test and
/// its refusal, with the stored value in the error and nothing written.
macro_rules! conditions_of_layout {
    ($name:ident, $ty:ident) => {
        #[tokio::test]
        async fn $name() {
            let server = Target::start();
            let store = server.store().await;
            let item = $ty {
                id: 3,
                stock: 5,
                label: None,
                big: u64::MAX - 1,
            };
            store.save(&item).await.unwrap();
            let before = server.snapshot();

            // Each refused update writes nothing and names the stored value.
            let refused = [
                ($ty::STOCK.is(4), "stock = 4", Some("5")),
                ($ty::STOCK.is_not(5), "stock != 5", Some("5")),
                ($ty::STOCK.at_least(6), "stock >= 6", Some("5")),
                ($ty::STOCK.at_most(4), "stock <= 4", Some("5")),
                ($ty::STOCK.above(5), "stock > 5", Some("5")),
                ($ty::STOCK.below(5), "stock < 5", Some("5")),
                ($ty::LABEL.is(Some("x".to_owned())), "label = x", None),
                // Integers compare exactly, beyond a float's 53 bits.
                ($ty::BIG.at_least(u64::MAX), "big >= 18446744073709551615", None),
            ];
            for (condition, words, found) in refused {
                let err = store
                    .update::<$ty>(&3)
                    .when(condition)
                    .set($ty::STOCK, 99)
                    .exec()
                    .await
                    .unwrap_err();
                match err {
                    Error::ConditionFailed {
                        condition,
                        found: stored,
                        ..
                    } => {
                        // (The json layout shows values as JSON: `label = "x"`.)
                        assert_eq!(condition.replace('"', ""), words);
                        let want = found.map(str::to_owned).or_else(|| {
                            // The big number's stored form, per layout.
                            (words.starts_with("big")).then(|| (u64::MAX - 1).to_string())
                        });
                        assert_eq!(stored, want, "{words}");
                    }
                    other => panic!("{words}: {other:?}"),
                }
                assert_eq!(server.snapshot(), before, "{words}: nothing written");
            }

            // Conditions that hold: all must, and the write happens.
            store
                .update::<$ty>(&3)
                .when($ty::STOCK.is(5))
                .when($ty::STOCK.at_least(5))
                .when($ty::STOCK.below(6))
                .when($ty::LABEL.is(None))
                .when($ty::BIG.above(u64::MAX - 2))
                .set($ty::LABEL, Some("sale".to_owned()))
                .incr_within($ty::STOCK, -5, 0..=10)
                .exec()
                .await
                .unwrap();
            let stored = store.get::<$ty>(&3).await.unwrap().unwrap();
            assert_eq!((stored.stock, stored.label.as_deref()), (0, Some("sale")));
            // A bounded increment past either end is refused.
            for (delta, words) in [(-1, "stock - 1 >= 0"), (11, "stock + 11 <= 10")] {
                let err = store
                    .update::<$ty>(&3)
                    .incr_within($ty::STOCK, delta, 0..=10)
                    .exec()
                    .await
                    .unwrap_err();
                assert!(
                    matches!(&err, Error::ConditionFailed { condition, .. } if condition == words),
                    "{err:?}"
                );
            }

            // A conditional delete: refused while the label is "sale", then done.
            let err = store
                .delete_if::<$ty>(&3, [$ty::LABEL.is(None)])
                .await
                .unwrap_err();
            assert!(matches!(err, Error::ConditionFailed { .. }), "{err:?}");
            assert!(store.exists::<$ty>(&3).await.unwrap());
            assert!(store
                .delete_if::<$ty>(&3, [$ty::LABEL.is(Some("sale".to_owned())), $ty::STOCK.at_most(0)])
                .await
                .unwrap());
            assert!(!store.exists::<$ty>(&3).await.unwrap());
            assert!(server.keys().is_empty(), "{:?}", server.keys());
            // On a missing entity the conditions see nothing stored.
            let err = store
                .delete_if::<$ty>(&3, [$ty::STOCK.is(0)])
                .await
                .unwrap_err();
            assert!(
                matches!(&err, Error::ConditionFailed { found: None, .. }),
                "{err:?}"
            );
            assert!(!store.delete_if::<$ty>(&3, [$ty::LABEL.is(None)]).await.unwrap());
        }
    };
}

conditions_of_layout!(conditions_on_the_hash_layout, Item);
conditions_of_layout!(conditions_on_the_strings_layout, StringsItem);
conditions_of_layout!(conditions_on_the_json_layout, JsonItem);

#[tokio::test]
async fn an_update_of_a_missing_entity_is_not_found_before_its_conditions() {
    let server = Target::start();
    let store = server.store().await;
    let err = store
        .update::<Packet>(&9)
        .when(Packet::STATUS.is(0))
        .set(Packet::STATUS, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(server.keys().is_empty());
}

#[test]
fn the_blocking_store_takes_the_same_conditions() {
    let server = support::RedisServer::start();
    let store = redis_entity::blocking::Store::connect(&server.url()).unwrap();
    store
        .save(&Packet {
            id: 1,
            status: 0,
            owner: None,
        })
        .unwrap();
    let claim = || {
        store
            .update::<Packet>(&1)
            .when(Packet::STATUS.is(0))
            .set(Packet::STATUS, 1)
            .exec()
    };
    claim().unwrap();
    assert!(matches!(claim(), Err(Error::ConditionFailed { .. })));
    assert!(matches!(
        store.delete_if::<Packet>(&1, [Packet::STATUS.is(0)]),
        Err(Error::ConditionFailed { .. })
    ));
    assert!(store
        .delete_if::<Packet>(&1, [Packet::STATUS.is(1)])
        .unwrap());
}
