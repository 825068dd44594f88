//! Seeds 000 and 003, book tags: all / any / except over tag relations, and
//! what a query does with stale index entries.

#[allow(dead_code)]
#[path = "../examples/book_tags.rs"]
mod example;

use example::{books, Book};
use redis::Commands;
use redis_entity::{blocking, RedisEntity, Store};
use std::collections::BTreeSet;
use support::RedisServer;

fn ids(books: &[Book]) -> Vec<u64> {
    books.iter().map(|b| b.id).collect()
}

async fn seeded(server: &RedisServer) -> Store {
    let store = Store::connect(&server.url()).await.unwrap();
    store.save_all(&books()).await.unwrap();
    store
}

#[tokio::test]
async fn tag_sets_are_written_per_tag() {
    let server = RedisServer::start();
    seeded(&server).await;
    let mut web: Vec<u64> = server.conn().smembers("book:@tags:WEB").unwrap();
    web.sort();
    assert_eq!(web, [5, 6]);
    let stored: String = server.conn().hget("book:5", "tags").unwrap();
    assert_eq!(stored, "PHP:WEB", "the tag list as stored in the hash");
}

#[tokio::test]
async fn all_any_none_match_the_seed_sql() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    let q = || store.query::<Book>();
    assert_eq!(
        ids(&q().all(Book::TAGS, ["PHP", "WEB"]).fetch().await.unwrap()),
        [5]
    );
    assert_eq!(
        ids(&q().any(Book::TAGS, ["PHP", "WEB"]).fetch().await.unwrap()),
        [5, 6]
    );
    assert_eq!(
        ids(&q()
            .eq(Book::TAGS, "RUBY")
            .none(Book::TAGS, ["WEB"])
            .fetch()
            .await
            .unwrap()),
        [8]
    );
    // Combined: (RUBY or DATABASE) and not SERVER.
    assert_eq!(
        ids(&q()
            .any(Book::TAGS, ["RUBY", "DATABASE"])
            .none(Book::TAGS, ["SERVER"])
            .fetch()
            .await
            .unwrap()),
        [6, 7]
    );
    // Unknown tags and empty lists.
    assert!(q()
        .all(Book::TAGS, ["PHP", "NOPE"])
        .fetch()
        .await
        .unwrap()
        .is_empty());
    assert!(q()
        .any(Book::TAGS, Vec::<String>::new())
        .fetch()
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_query_with_only_none_uses_every_id() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    let not_ruby = store
        .query::<Book>()
        .none(Book::TAGS, ["RUBY"])
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&not_ruby), [5, 7]);
    assert_eq!(
        store.query::<Book>().fetch().await.unwrap().len(),
        4,
        "no condition: all"
    );
}

#[tokio::test]
async fn ids_count_and_limit_in_a_stable_order() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let many: Vec<Book> = (1..=25)
        .map(|id| Book {
            id,
            title: format!("b{id}"),
            tags: BTreeSet::from(["X".to_string()]),
        })
        .collect();
    store.save_all(&many).await.unwrap();
    let q = || store.query::<Book>().eq(Book::TAGS, "X");
    assert_eq!(q().count().await.unwrap(), 25);
    assert_eq!(
        q().limit(0, 5).count().await.unwrap(),
        25,
        "count ignores limit"
    );
    assert_eq!(
        q().limit(0, 3).ids().await.unwrap(),
        [1, 2, 3],
        "numeric order"
    );
    assert_eq!(q().limit(9, 3).ids().await.unwrap(), [10, 11, 12]);
    assert_eq!(ids(&q().limit(23, 10).fetch().await.unwrap()), [24, 25]);
    assert_eq!(q().ids().await.unwrap().len(), 25, "no hidden page size");
    let page1 = q().limit(5, 5).ids().await.unwrap();
    assert_eq!(
        page1,
        q().limit(5, 5).ids().await.unwrap(),
        "same page every time"
    );
}

#[tokio::test]
async fn removing_a_tag_removes_the_book_from_its_set() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    let mut b = books()[0].clone();
    b.tags = BTreeSet::from(["PHP".to_string(), "NEW".to_string()]);
    store.save(&b).await.unwrap();
    let web: Vec<u64> = server.conn().smembers("book:@tags:WEB").unwrap();
    assert_eq!(web, [6]);
    let new: Vec<u64> = server.conn().smembers("book:@tags:NEW").unwrap();
    assert_eq!(new, [5]);
    store
        .update::<Book>(&5)
        .set(Book::TAGS, BTreeSet::new())
        .exec()
        .await
        .unwrap();
    let keys = server.keys();
    assert!(!keys.contains(&"book:@tags:PHP".to_string()), "{keys:?}");
    assert!(!keys.contains(&"book:@tags:NEW".to_string()), "{keys:?}");
}

#[tokio::test]
async fn a_stale_entry_is_never_returned_and_is_cleaned() {
    let server = RedisServer::start();
    let store = seeded(&server).await;
    let mut c = server.conn();
    // Plant stale entries: book 7 is not tagged WEB, book 99 does not exist.
    let _: () = c.sadd("book:@tags:WEB", 7).unwrap();
    let _: () = c.sadd("book:@tags:WEB", 99).unwrap();
    let _: () = c.sadd("book:@tags:WEB", "garbage{").unwrap();
    let web = store.find(Book::TAGS, "WEB").await.unwrap();
    assert_eq!(ids(&web), [5, 6]);
    let mut left: Vec<String> = c.smembers("book:@tags:WEB").unwrap();
    left.sort();
    assert_eq!(left, ["5", "6"], "stale entries removed");
    // A missing entry (book 7 should be excluded by `none` but is not indexed)
    // is not returned either, and the read repairs the index.
    let _: () = c.srem("book:@tags:DATABASE", 7).unwrap();
    let not_db = store
        .query::<Book>()
        .eq(Book::TAGS, "DATABASE")
        .fetch()
        .await
        .unwrap();
    assert!(not_db.is_empty());
    let _: () = c.hset("book:6", "tags", "WEB:RUBY:DATABASE").unwrap();
    let no_db = store
        .query::<Book>()
        .eq(Book::TAGS, "WEB")
        .none(Book::TAGS, ["DATABASE"])
        .fetch()
        .await
        .unwrap();
    assert_eq!(
        ids(&no_db),
        [5],
        "6 has DATABASE now though the index missed it"
    );
    let db: Vec<u64> = c.smembers("book:@tags:DATABASE").unwrap();
    assert_eq!(db, [6], "the missing entry was added back");
}

#[test]
fn blocking_queries_match_async() {
    let server = RedisServer::start();
    let store = blocking::Store::connect(&server.url()).unwrap();
    store.save_all(&books()).unwrap();
    let both = store
        .query::<Book>()
        .all(Book::TAGS, ["PHP", "WEB"])
        .fetch()
        .unwrap();
    assert_eq!(ids(&both), [5]);
    assert_eq!(
        store
            .query::<Book>()
            .none(Book::TAGS, ["RUBY"])
            .count()
            .unwrap(),
        2
    );
    assert_eq!(store.find(Book::TAGS, "RUBY").unwrap().len(), 2);
    assert_eq!(
        store
            .query::<Book>()
            .any(Book::TAGS, ["SERVER"])
            .ids()
            .unwrap(),
        [8]
    );
}

/// Tags need not be strings, and a `Vec` keeps its order.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
struct Post {
    #[pk]
    id: String,
    #[index]
    topics: Vec<u32>,
}

#[tokio::test]
async fn numeric_tags_in_a_vec_and_text_pks() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let p = Post {
        id: "hello:world".into(),
        topics: vec![3, 1, 2],
    };
    store.save(&p).await.unwrap();
    assert_eq!(
        store.find(Post::TOPICS, 1u32).await.unwrap(),
        vec![p.clone()]
    );
    assert_eq!(
        store
            .query::<Post>()
            .all(Post::TOPICS, [1u32, 3])
            .ids()
            .await
            .unwrap(),
        vec!["hello:world".to_string()]
    );
    let members: Vec<String> = server.conn().smembers("post:@topics:1").unwrap();
    assert_eq!(members, ["hello%3Aworld"]);
}
