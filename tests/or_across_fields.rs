//! An OR across different fields (`any_of`), alone and with other
//! conditions, on the native path and in the query script, with stale
//! entries kept out of the answer. Runs on one server, and with
//! `REDIS_ENTITY_TEST_CLUSTER` set on a 3-master cluster, where `Book` is
//! split into 16 index shards (`{book:<shard>}:book:@author:knuth`) and a
//! query asks every shard.

use redis_entity::{AnyConnection, RedisEntity, Store, Term};
use std::collections::BTreeSet;
use std::time::Duration;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    #[index]
    author: String,
    #[index]
    tags: BTreeSet<String>,
    #[index(sorted)]
    year: i64,
    #[index(prefix)]
    title: String,
}

fn book(id: u64, author: &str, tags: &[&str], year: i64) -> Book {
    Book {
        id,
        author: author.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        year,
        title: format!("book {id}"),
    }
}

async fn library(server: &Target) -> Store<AnyConnection> {
    let store = server.store().await;
    store
        .save_all(&[
            book(1, "knuth", &["algorithms"], 1968),
            book(2, "knuth", &["typesetting"], 1984),
            book(3, "sedgewick", &["algorithms"], 1983),
            book(4, "kernighan", &["c"], 1978),
            book(5, "pike", &["go", "c"], 2015),
        ])
        .await
        .unwrap();
    store
}

fn ids(books: &[Book]) -> Vec<u64> {
    books.iter().map(|b| b.id).collect()
}

#[tokio::test]
async fn any_of_unions_terms_of_different_fields() {
    let server = Target::start();
    let store = library(&server).await;
    let q = || {
        store.query::<Book>().any_of([
            Term::eq(Book::AUTHOR, "knuth"),
            Term::eq(Book::TAGS, "algorithms"),
        ])
    };
    assert_eq!(ids(&q().fetch().await.unwrap()), [1, 2, 3]);
    assert_eq!(q().count().await.unwrap(), 3);
    let plan = q().explain().unwrap();
    if !server.is_cluster() {
        assert_eq!(
            plan.round_trips[0][3], "SUNION book:@author:knuth book:@tags:algorithms",
            "{plan}"
        );
    } else {
        // One native SUNION per index shard, of that shard's two keys.
        let unions: Vec<&String> = plan.round_trips[0]
            .iter()
            .filter(|c| c.starts_with("SUNION "))
            .collect();
        assert_eq!(unions.len(), 16, "{plan}");
        for s in 0..16 {
            let want = format!(
                "SUNION {{book:{s}}}:book:@author:knuth {{book:{s}}}:book:@tags:algorithms"
            );
            assert!(unions.contains(&&want), "{want} in {plan}");
        }
    }
    // ANDed with other conditions: (knuth OR c) AND year range, in the script.
    let found = store
        .query::<Book>()
        .any_of([Term::eq(Book::AUTHOR, "knuth"), Term::eq(Book::TAGS, "c")])
        .range(Book::YEAR, 1970..2000)
        .order_asc(Book::YEAR)
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&found), [4, 2]);
    // Two ORs: (knuth OR pike) AND (c OR typesetting).
    let found = store
        .query::<Book>()
        .any_of([
            Term::eq(Book::AUTHOR, "knuth"),
            Term::eq(Book::AUTHOR, "pike"),
        ])
        .any_of([
            Term::eq(Book::TAGS, "c"),
            Term::eq(Book::TAGS, "typesetting"),
        ])
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&found), [2, 5]);
    // With `none`.
    let found = store
        .query::<Book>()
        .any_of([
            Term::eq(Book::AUTHOR, "knuth"),
            Term::eq(Book::TAGS, "algorithms"),
        ])
        .none(Book::TAGS, ["typesetting"])
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&found), [1, 3]);
    // Nothing to OR: nothing matches.
    let none: [Term<Book>; 0] = [];
    assert!(store
        .query::<Book>()
        .any_of(none)
        .fetch()
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_prefix_field_is_refused_and_stale_entries_stay_out() {
    let server = Target::start();
    let store = library(&server).await;
    let err = store
        .query::<Book>()
        .any_of([
            Term::eq(Book::TITLE, "book 1"),
            Term::eq(Book::AUTHOR, "knuth"),
        ])
        .fetch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("title"), "{err}");

    // A stale entry: book 4 listed under author knuth (in book 4's index
    // shard on a cluster, where a query of its shard finds it).
    let base = store.keys().of::<Book>(4).base;
    let space = base.strip_suffix(&Book::key(&4)).unwrap();
    let knuth = format!("{space}{}", Book::AUTHOR.key("knuth"));
    if !server.is_cluster() {
        assert_eq!(knuth, "book:@author:knuth");
    }
    let added: i64 = redis::cmd("SADD")
        .arg(&knuth)
        .arg(4)
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(added, 1);
    assert!(!store
        .maintenance::<Book>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let found = store
        .query::<Book>()
        .any_of([Term::eq(Book::AUTHOR, "knuth"), Term::eq(Book::TAGS, "go")])
        .fetch()
        .await
        .unwrap();
    assert_eq!(
        ids(&found),
        [1, 2, 5],
        "book 4 is not knuth's, whatever the index says"
    );
    // The read cleaned it.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(store
        .maintenance::<Book>()
        .verify()
        .await
        .unwrap()
        .is_clean());

    // With an expiring entity, the script path skips expired ones.
    store
        .expiry()
        .save_with_ttl(
            &book(6, "knuth", &["tex"], 1986),
            Duration::from_millis(100),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let found = store
        .query::<Book>()
        .any_of([Term::eq(Book::AUTHOR, "knuth"), Term::eq(Book::TAGS, "go")])
        .fetch()
        .await
        .unwrap();
    assert_eq!(ids(&found), [1, 2, 5]);
}
