//! Book tags: all / any / except over tag relations, and
//! what a query does with stale index entries. Runs on one server, and with
//! `scripts/test.sh --cluster` on a 3-master cluster, where each tag set is
//! split over the type's index shards (`{book:<n>}:book:@tags:WEB`).

#[allow(dead_code)]
#[path = "../examples/book_tags.rs"]
mod example;

use example::{books, Book};
use redis::Commands;
use redis_entity::{blocking, AnyConnection, RedisEntity, Store};
use std::collections::BTreeSet;
use support::Target;

fn ids(books: &[Book]) -> Vec<u64> {
    books.iter().map(|b| b.id).collect()
}

async fn seeded(server: &Target) -> Store<AnyConnection> {
    let store = server.store().await;
    store.save_all(&books()).await.unwrap();
    store
}

/// The space an entity key `base` (in the store's layout) lives in, given
/// its standalone spelling: empty on one server, its index shard's
/// `{<prefix>:<n>}:` on a cluster.
fn space(base: &str, standalone: &str) -> String {
    base.strip_suffix(standalone)
        .unwrap_or_else(|| panic!("{base} does not end with {standalone}"))
        .to_string()
}

/// The index key spelled `index` on one server (`Book::TAGS.key("WEB")`)
/// in the space of book `id`: where that book's entry lives.
fn book_index(store: &Store<AnyConnection>, id: u64, index: &str) -> String {
    format!(
        "{}{index}",
        space(&store.keys().of::<Book>(id).base, &Book::key(&id))
    )
}

/// Every stored key of the index spelled `index` on one server: that key
/// itself, or on a cluster its part in each index shard's space.
fn index_keys(server: &Target, index: &str) -> Vec<String> {
    let in_shard = format!("}}:{index}");
    server
        .keys()
        .into_iter()
        .filter(|k| {
            if server.is_cluster() {
                k.starts_with('{') && k.ends_with(&in_shard)
            } else {
                k == index
            }
        })
        .collect()
}

/// The members of the set index spelled `index` on one server, over every
/// shard, sorted.
fn set_members<T: redis::FromRedisValue + Ord>(server: &Target, index: &str) -> Vec<T> {
    let mut c = server.conn();
    let mut all = Vec::new();
    for key in index_keys(server, index) {
        let part: Vec<T> = c.smembers(&key).unwrap();
        all.extend(part);
    }
    all.sort();
    all
}

#[tokio::test]
async fn tag_sets_are_written_per_tag() {
    let server = Target::start();
    let store = seeded(&server).await;
    assert_eq!(Book::TAGS.key("WEB"), "book:@tags:WEB");
    if !server.is_cluster() {
        let mut web: Vec<u64> = server.conn().smembers("book:@tags:WEB").unwrap();
        web.sort();
        assert_eq!(web, [5, 6]);
    }
    let web: Vec<u64> = set_members(&server, &Book::TAGS.key("WEB"));
    assert_eq!(web, [5, 6]);
    // Each book's entry is in its own space, with the book.
    for id in [5, 6] {
        let key = book_index(&store, id, &Book::TAGS.key("WEB"));
        let is: bool = server.conn().sismember(&key, id).unwrap();
        assert!(is, "{id} in {key}");
    }
    let stored: String = server
        .conn()
        .hget(&store.keys().of::<Book>(5).base, "tags")
        .unwrap();
    assert_eq!(stored, "PHP:WEB", "the tag list as stored in the hash");
}

#[tokio::test]
async fn all_any_none_match_the_seed_sql() {
    let server = Target::start();
    let store = seeded(&server).await;
    let q = || store.query::<Book>();
    assert_eq!(
        ids(&q().all(Book::TAGS, ["PHP", "WEB"]).fetch().await.unwrap()),
        [5]
    );
    // Counted as one `SINTERCARD` while nothing can have expired.
    assert_eq!(
        q().all(Book::TAGS, ["PHP", "WEB"]).count().await.unwrap(),
        1
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
    let server = Target::start();
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
    let server = Target::start();
    let store = server.store().await;
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
    // A whole result is ordered by the client: by number, 9 before 10.
    assert_eq!(
        ids(&q().fetch().await.unwrap()),
        (1..=25).collect::<Vec<u64>>(),
        "a whole result in numeric order"
    );
    let page1 = q().limit(5, 5).ids().await.unwrap();
    assert_eq!(
        page1,
        q().limit(5, 5).ids().await.unwrap(),
        "same page every time"
    );
}

#[tokio::test]
async fn removing_a_tag_removes_the_book_from_its_set() {
    let server = Target::start();
    let store = seeded(&server).await;
    let mut b = books()[0].clone();
    b.tags = BTreeSet::from(["PHP".to_string(), "NEW".to_string()]);
    store.save(&b).await.unwrap();
    let web: Vec<u64> = set_members(&server, &Book::TAGS.key("WEB"));
    assert_eq!(web, [6]);
    let new: Vec<u64> = set_members(&server, &Book::TAGS.key("NEW"));
    assert_eq!(new, [5]);
    let new_of_5 = book_index(&store, 5, &Book::TAGS.key("NEW"));
    assert_eq!(index_keys(&server, &Book::TAGS.key("NEW")), [new_of_5]);
    store
        .update::<Book>(&5)
        .set(Book::TAGS, BTreeSet::new())
        .exec()
        .await
        .unwrap();
    let keys = server.keys();
    if !server.is_cluster() {
        assert!(!keys.contains(&"book:@tags:PHP".to_string()), "{keys:?}");
        assert!(!keys.contains(&"book:@tags:NEW".to_string()), "{keys:?}");
    }
    for tag in ["PHP", "NEW"] {
        let left = index_keys(&server, &Book::TAGS.key(tag));
        assert!(left.is_empty(), "{tag}: {left:?} in {keys:?}");
    }
}

#[tokio::test]
async fn a_stale_entry_is_never_returned_and_is_cleaned() {
    let server = Target::start();
    let store = seeded(&server).await;
    let mut c = server.conn();
    let web_key = |id| book_index(&store, id, &Book::TAGS.key("WEB"));
    // Plant stale entries: book 7 is not tagged WEB, book 99 does not exist
    // (each where its entry would be), and a member no book can have.
    let _: () = c.sadd(web_key(7), 7).unwrap();
    let _: () = c.sadd(web_key(99), 99).unwrap();
    let _: () = c.sadd(web_key(5), "garbage{").unwrap();
    let web = store.find(Book::TAGS, "WEB").await.unwrap();
    assert_eq!(ids(&web), [5, 6]);
    let left: Vec<String> = set_members(&server, &Book::TAGS.key("WEB"));
    assert_eq!(left, ["5", "6"], "stale entries removed");
    // A missing entry (book 7 should be excluded by `none` but is not indexed)
    // is not returned either, and the read repairs the index.
    let _: () = c
        .srem(book_index(&store, 7, &Book::TAGS.key("DATABASE")), 7)
        .unwrap();
    let not_db = store
        .query::<Book>()
        .eq(Book::TAGS, "DATABASE")
        .fetch()
        .await
        .unwrap();
    assert!(not_db.is_empty());
    let _: () = c
        .hset(
            &store.keys().of::<Book>(6).base,
            "tags",
            "WEB:RUBY:DATABASE",
        )
        .unwrap();
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
    let db: Vec<u64> = set_members(&server, &Book::TAGS.key("DATABASE"));
    assert_eq!(db, [6], "the missing entry was added back");
    let db_of_6 = book_index(&store, 6, &Book::TAGS.key("DATABASE"));
    let is: bool = c.sismember(&db_of_6, 6).unwrap();
    assert!(is, "in {db_of_6}, with book 6");
}

#[test]
fn blocking_queries_match_async() {
    let server = Target::start();
    blocking_queries(
        &blocking::Store::builder()
            .connect_any(&server.url())
            .unwrap(),
    );
}

fn blocking_queries<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &blocking::Store<C>,
) {
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
    let server = Target::start();
    let store = server.store().await;
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
    if !server.is_cluster() {
        let members: Vec<String> = server.conn().smembers("post:@topics:1").unwrap();
        assert_eq!(members, ["hello%3Aworld"]);
    }
    let base = store.keys().of::<Post>("hello:world".to_string()).base;
    let key = format!(
        "{}{}",
        space(&base, &Post::key(&p.id)),
        Post::TOPICS.key(1u32)
    );
    assert_eq!(
        index_keys(&server, &Post::TOPICS.key(1u32)),
        std::slice::from_ref(&key)
    );
    let members: Vec<String> = server.conn().smembers(&key).unwrap();
    assert_eq!(members, ["hello%3Aworld"]);
}
