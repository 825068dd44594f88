//! A store's settings are made on its builder before it connects: the
//! namespace its keys go under, the key layout, the layout marker; the
//! blocking builder has the same settings. The walk of a whole type is a
//! query with no terms.

use redis::Commands;
use redis_entity::{KeyLayout, Namespace, RedisEntity, Store};
use std::collections::BTreeSet;
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    name: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    #[index]
    lang: String,
}

fn user(id: u64) -> User {
    User {
        id,
        name: format!("u{id}"),
    }
}

const MARKER: &str = "@redis-entity:layout";

#[tokio::test]
async fn the_builder_sets_namespace_layout_and_marker_before_the_store_connects() {
    let server = RedisServer::start();
    // A tenant's store that checks nothing: its keys and nothing else.
    let tenant = Store::builder()
        .namespace(Namespace::tenant(7))
        .layout_check(false)
        .connect(&server.url())
        .await
        .unwrap();
    tenant.save(&user(1)).await.unwrap();
    assert_eq!(server.keys(), ["tenant:7:user:1"]);
    assert_eq!(tenant.keys().namespace(), &Namespace::tenant(7));

    // The default builder checks: its first write records the layout.
    let checked = Store::builder().connect(&server.url()).await.unwrap();
    checked.save(&user(2)).await.unwrap();
    let marker: Option<String> = server.conn().get(MARKER).unwrap();
    assert_eq!(marker.as_deref(), Some("standalone"));
    assert_eq!(checked.get::<User>(&2).await.unwrap(), Some(user(2)));

    // Over a connection of one's own, in the cluster layout: the hash tag
    // of a type without indexes is its pk. Such a store, with the check,
    // refuses the namespace the first store marked standalone.
    let conn = server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let cluster = Store::builder()
        .key_layout(KeyLayout::Cluster)
        .build(conn.clone());
    let err = cluster.save(&user(3)).await.unwrap_err();
    assert!(
        matches!(err, redis_entity::Error::LayoutMismatch { .. }),
        "{err:?}"
    );
    assert!(!server.keys().contains(&"user:{3}".to_owned()));
    let unchecked = Store::builder()
        .key_layout(KeyLayout::Cluster)
        .layout_check(false)
        .build(conn.clone());
    unchecked.save(&user(3)).await.unwrap();
    assert!(server.keys().contains(&"user:{3}".to_owned()));
    assert_eq!(unchecked.keys().layout(), KeyLayout::Cluster);

    // `Store::new` is a store without settings: no marker of its own.
    let _: () = server.conn().del(MARKER).unwrap();
    Store::new(conn).save(&user(4)).await.unwrap();
    assert!(!server.keys().contains(&MARKER.to_owned()));
}

#[tokio::test]
async fn a_walk_of_a_whole_type_is_a_query_with_no_terms() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for id in 0..30 {
        store.save(&user(id)).await.unwrap();
        let lang = if id % 2 == 0 { "en" } else { "de" };
        store
            .save(&Book {
                id,
                lang: lang.into(),
            })
            .await
            .unwrap();
    }
    // Users have no index: SCAN of their keys. Books: SSCAN of their ids.
    let mut users = BTreeSet::new();
    let mut walk = store.query::<User>().scan(7);
    while let Some(page) = walk.next_page().await.unwrap() {
        users.extend(page.into_iter().map(|u| u.unwrap().id));
    }
    assert_eq!(users, (0..30).collect());
    let mut books = BTreeSet::new();
    let mut walk = store.query::<Book>().scan(7);
    while let Some(page) = walk.next_page().await.unwrap() {
        books.extend(page.into_iter().map(|b| b.unwrap().id));
    }
    assert_eq!(books, (0..30).collect());
    // With a term, only the matches.
    let mut en = BTreeSet::new();
    let mut walk = store.query().eq(Book::LANG, "en").scan(7);
    while let Some(page) = walk.next_page().await.unwrap() {
        en.extend(page.into_iter().map(|b| b.unwrap().id));
    }
    assert_eq!(en, (0..30).filter(|id| id % 2 == 0).collect());
}

#[test]
fn the_blocking_builder_has_the_same_settings() {
    let server = RedisServer::start();
    let store = redis_entity::blocking::Store::builder()
        .namespace(Namespace::new("shop"))
        .connect(&server.url())
        .unwrap();
    store.save(&user(1)).unwrap();
    assert!(server.keys().contains(&"shop:user:1".to_owned()));
    let marker: Option<String> = server.conn().get(format!("shop:{MARKER}")).unwrap();
    assert_eq!(marker.as_deref(), Some("standalone"));
    let walked: Vec<u64> = store
        .query::<User>()
        .scan(10)
        .map(|u| u.unwrap().id)
        .collect();
    assert_eq!(walked, [1]);
}
