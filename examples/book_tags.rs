//! Books and tags: the SQL self-join over a tag table, replaced by set
//! algebra. `#[index]` on a `BTreeSet<String>` keeps one set per tag
//! (`book:@tags:PHP -> {5}`); `all`, `any` and `none` answer "every tag",
//! "any tag" and "without the tag" as `SINTER`, `SUNION` and `SDIFF` do, and
//! saving a book without a tag takes it out of that tag's set.
//! Run: `cargo run --example book_tags`.

use redis_entity::{RedisEntity, Store};
use std::collections::BTreeSet;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
pub struct Book {
    #[pk]
    pub id: u64,
    pub title: String,
    #[index]
    pub tags: BTreeSet<String>,
}

pub fn books() -> Vec<Book> {
    let book = |id, title: &str, tags: &[&str]| Book {
        id,
        title: title.into(),
        tags: tags.iter().map(|t| t.to_string()).collect(),
    };
    vec![
        book(5, "PHP Bible", &["PHP", "WEB"]),
        book(6, "Ruby in Practice", &["WEB", "RUBY"]),
        book(7, "MySQL Operations", &["DATABASE"]),
        book(8, "Ruby Server Programming", &["RUBY", "SERVER"]),
    ]
}

fn titles(books: &[Book]) -> Vec<&str> {
    books.iter().map(|b| b.title.as_str()).collect()
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== book_tags: tags as sets, SINTER / SUNION / SDIFF");
    let store = Store::builder().connect_any(url).await?;
    println!("{}", Book::layout());
    store.save_all(&books()).await?;
    println!(
        "save_all(4 books)  -> keys {:?}",
        store.keys().scan("book:*").await?
    );

    // select distinct bookid from tag where content='PHP' and content='WEB'  (a self-join in SQL)
    let both = store
        .query::<Book>()
        .all(Book::TAGS, ["PHP", "WEB"])
        .fetch()
        .await?;
    println!(
        "PHP and WEB        -> {:?}   (SINTER book:@tags:PHP book:@tags:WEB)",
        titles(&both)
    );

    // select distinct bookid from tag where content in ('PHP', 'WEB')
    let either = store
        .query::<Book>()
        .any(Book::TAGS, ["PHP", "WEB"])
        .fetch()
        .await?;
    println!("PHP or WEB         -> {:?}   (SUNION)", titles(&either));

    // select distinct bookid from tag where content='RUBY'
    //   and bookid not in (select bookid from tag where content='WEB')
    let ruby_not_web = store
        .query::<Book>()
        .eq(Book::TAGS, "RUBY")
        .none(Book::TAGS, ["WEB"])
        .fetch()
        .await?;
    println!(
        "RUBY but not WEB   -> {:?}   (SDIFF)",
        titles(&ruby_not_web)
    );

    // select count(*) from book where bookid not in (select bookid from tag where content='RUBY')
    let not_ruby = store
        .query::<Book>()
        .none(Book::TAGS, ["RUBY"])
        .count()
        .await?;
    println!(
        "not RUBY, counted  -> {not_ruby}   (all ids minus SUNION; the universe is the buckets of book:@ids)"
    );

    // Removing a tag from the book removes the book from that tag's set.
    let mut bible = books()[0].clone();
    bible.tags.remove("WEB");
    store.save(&bible).await?;
    let web = store.find(Book::TAGS, "WEB").await?;
    println!("untag WEB from 5   -> WEB: {:?}\n", titles(&web));
    for b in books() {
        store.delete::<Book>(&b.id).await?;
    }
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    // The server to run against: `REDIS_URL`, or a local one; or a Redis
    // Cluster: `REDIS_CLUSTER_URLS` (node URLs separated by commas).
    let url = std::env::var("REDIS_CLUSTER_URLS")
        .or_else(|_| std::env::var("REDIS_URL"))
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    run(&url).await
}
