//! Streams over a query's matches: a cursor over the smallest known source
//! (an `eq` value's set, a range's sorted index, or every id), each page
//! checked against the whole query, in bounded pages, resumable. Runs on
//! one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master
//! cluster, where `Order` is split into 16 index shards walked one after
//! another. `a_range_query_walks_the_sorted_index_and_reads_only_what_is_in_range`
//! stays on one server: it counts round trips with `counted_store`.

use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use std::collections::BTreeSet;
use support::{RedisServer, Target};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "order")]
struct Order {
    #[pk]
    id: u64,
    #[index]
    status: String,
    #[index(sorted)]
    total: f64,
    #[index]
    tags: BTreeSet<String>,
}

fn order(id: u64) -> Order {
    Order {
        id,
        status: if id.is_multiple_of(2) { "open" } else { "paid" }.into(),
        total: (id % 300) as f64,
        tags: if id.is_multiple_of(5) {
            BTreeSet::from(["gift".to_string()])
        } else {
            BTreeSet::new()
        },
    }
}

const N: u64 = 1500;

async fn seeded(server: &Target) -> Store<AnyConnection> {
    let store = server.store().await;
    seed(&store).await;
    store
}

async fn seed<C: redis::aio::ConnectionLike + Clone + Send + Sync>(store: &Store<C>) {
    let orders: Vec<Order> = (1..=N).map(order).collect();
    store.save_all(&orders).await.unwrap();
}

/// Walks a scan to its end; the ids seen and the number of pages.
async fn walk<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    mut scan: redis_entity::Scan<'_, Order, C>,
) -> (Vec<Order>, usize) {
    let (mut all, mut pages) = (Vec::new(), 0);
    while let Some(page) = scan.next_page().await.unwrap() {
        pages += 1;
        all.extend(page.into_iter().map(Result::unwrap));
    }
    assert_eq!(scan.cursor(), 0);
    (all, pages)
}

fn ids(orders: &[Order]) -> BTreeSet<u64> {
    orders.iter().map(|o| o.id).collect()
}

fn expected(f: impl Fn(&Order) -> bool) -> BTreeSet<u64> {
    (1..=N).map(order).filter(|o| f(o)).map(|o| o.id).collect()
}

#[tokio::test]
async fn an_eq_query_walks_its_value_set_and_checks_the_other_conditions() {
    let server = Target::start();
    let store = seeded(&server).await;
    let (all, pages) = walk(
        store
            .query::<Order>()
            .eq(Order::STATUS, "open")
            .range(Order::TOTAL, 100.0..200.0)
            .scan(100),
    )
    .await;
    assert!(
        pages >= 5,
        "750 open orders in pages of ~100: {pages} pages"
    );
    let want = expected(|o| o.status == "open" && (100.0..200.0).contains(&o.total));
    assert_eq!(ids(&all), want);
    assert_eq!(all.len(), want.len(), "each match once");
    assert!(all.iter().all(|o| *o == order(o.id)), "whole entities");
}

#[tokio::test]
async fn a_range_query_walks_the_sorted_index_and_reads_only_what_is_in_range() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    seed(&store).await;
    let (all, _) = walk(
        store
            .query::<Order>()
            .range(Order::TOTAL, 250.0..)
            .scan(200),
    )
    .await;
    assert_eq!(ids(&all), expected(|o| o.total >= 250.0));

    // A page costs two round trips: the cursor, then only the in-range records.
    let (counted, trips) = support::counted_store(&server).await;
    let mut scan = counted
        .query::<Order>()
        .range(Order::TOTAL, 299.0..)
        .scan(5000);
    let page = scan.next_page().await.unwrap().unwrap();
    assert_eq!(trips.take(), 2);
    assert_eq!(
        ids(&page.into_iter().map(Result::unwrap).collect::<Vec<_>>()),
        expected(|o| o.total >= 299.0)
    );
}

#[tokio::test]
async fn a_query_of_only_exclusions_walks_every_id() {
    let server = Target::start();
    let store = seeded(&server).await;
    let (all, _) = walk(store.query::<Order>().none(Order::TAGS, ["gift"]).scan(300)).await;
    assert_eq!(ids(&all), expected(|o| !o.tags.contains("gift")));
    assert_eq!(all.len(), 1200);
}

#[tokio::test]
async fn a_query_scan_resumes_from_its_cursor() {
    let server = Target::start();
    let store = seeded(&server).await;
    let query = || store.query::<Order>().eq(Order::STATUS, "paid");
    let mut first = query().scan(100);
    let mut seen = ids(&first
        .next_page()
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect::<Vec<_>>());
    let cursor = first.cursor();
    assert_ne!(cursor, 0, "750 members do not fit one page of 100");
    drop(first);
    let (rest, _) = walk(query().scan(100).resume_at(cursor)).await;
    seen.extend(ids(&rest));
    assert_eq!(seen, expected(|o| o.status == "paid"));
}

#[tokio::test]
async fn a_scan_drops_entities_that_stopped_matching_or_are_gone() {
    let server = Target::start();
    let store = seeded(&server).await;
    // Changed and deleted after the query was built, before it walks.
    let mut scan = store
        .query::<Order>()
        .eq(Order::STATUS, "open")
        .scan(10_000);
    store
        .update::<Order>(2)
        .set(Order::STATUS, "paid")
        .exec()
        .await
        .unwrap();
    store.delete::<Order>(4).await.unwrap();
    let (all, _) = {
        let mut all = Vec::new();
        while let Some(page) = scan.next_page().await.unwrap() {
            all.extend(page.into_iter().map(Result::unwrap));
        }
        (all, ())
    };
    let got = ids(&all);
    assert!(!got.contains(&2) && !got.contains(&4));
    assert_eq!(got.len(), 748);
}

#[tokio::test]
async fn an_ordered_or_limited_query_cannot_be_scanned() {
    let server = Target::start();
    let store = seeded(&server).await;
    let mut scan = store.query::<Order>().order_desc(Order::TOTAL).scan(10);
    let err = scan.next_page().await.unwrap_err();
    assert!(matches!(err, Error::InvalidQuery { .. }), "{err}");
    assert!(
        scan.next_page().await.unwrap().is_none(),
        "the walk is over"
    );
    let err = store
        .query::<Order>()
        .eq(Order::STATUS, "open")
        .limit(0, 10)
        .scan(10)
        .next_page()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
}

#[test]
fn the_blocking_scan_is_an_iterator_of_entities() {
    let server = Target::start();
    blocking_scan(
        &redis_entity::blocking::Store::builder()
            .connect_any(&server.url())
            .unwrap(),
    );
}

fn blocking_scan<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &redis_entity::blocking::Store<C>,
) {
    store
        .save_all(&(1..=600).map(order).collect::<Vec<_>>())
        .unwrap();
    let gifts: BTreeSet<u64> = store
        .query::<Order>()
        .all(Order::TAGS, ["gift"])
        .scan(50)
        .map(|o| o.unwrap().id)
        .collect();
    assert_eq!(gifts, (1..=600).filter(|id| id % 5 == 0).collect());
    let every: usize = store
        .query::<Order>()
        .scan(100)
        .map(|o| o.map(|_| 1).unwrap())
        .sum();
    assert_eq!(every, 600);
}
