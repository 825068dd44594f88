//! Units of work on a 3-master Redis Cluster: a unit whose keys share one
//! slot (types of one group) commits atomically; any other unit is refused
//! before anything is sent, naming the two slots and how to group the types.

use redis_entity::{Error, RedisEntity, Store};
use support::RedisCluster;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "corder", group = "shop")]
struct Order {
    #[pk]
    id: u64,
    #[index]
    status: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "cstock", group = "shop")]
struct Stock {
    #[pk]
    id: u64,
    left: i64,
}

/// A type of another group: its keys are in another slot.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "cmail", group = "mail")]
struct Mail {
    #[pk]
    id: u64,
    to: String,
}

/// A type without group or indexes: each entity in its own slot.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "cnote")]
struct Note {
    #[pk]
    id: u64,
    text: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_in_one_slot_group_commits_and_one_across_slots_is_refused_before_sending() {
    let cluster = RedisCluster::start(3);
    let store = Store::builder()
        .connect_cluster(&cluster.urls())
        .await
        .unwrap();
    store.save(&Stock { id: 1, left: 3 }).await.unwrap();
    let order = Order {
        id: 7,
        status: "paid".into(),
    };
    // One group: an order and the stock it takes, both or neither.
    store
        .transaction()
        .save(&order)
        .update::<Stock>(&1, |u| u.incr_within(Stock::LEFT, -1, 0..))
        .exec()
        .await
        .unwrap();
    assert_eq!(store.get::<Order>(&7).await.unwrap(), Some(order));
    assert_eq!(store.get::<Stock>(&1).await.unwrap().unwrap().left, 2);

    let before = cluster.snapshot();
    let err = store
        .transaction()
        .save(&Order {
            id: 8,
            status: "paid".into(),
        })
        .save(&Mail {
            id: 1,
            to: "a@b.c".into(),
        })
        .exec()
        .await
        .unwrap_err();
    match &err {
        Error::InvalidTransaction { reason } => {
            assert!(reason.contains("{shop:0}:corder:8"), "{reason}");
            assert!(reason.contains("{mail:0}:cmail:1"), "{reason}");
            assert!(
                reason.contains("slot") && reason.contains("group"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    let err = store
        .transaction()
        .save(&Note {
            id: 1,
            text: "a".into(),
        })
        .save(&Note {
            id: 2,
            text: "b".into(),
        })
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidTransaction { .. }), "{err:?}");
    assert_eq!(cluster.snapshot(), before, "nothing was sent");
}
