//! With the `tracing` feature, every operation of a store is a span with
//! the entity type, the operation, the key, the round trips and the
//! outcome. Its own test binary: tracing caches per call site whether any
//! subscriber listens, and another test running without one would settle
//! that first. Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER` set
//! on a 3-master cluster, where the key is the entity's in its index shard.
#![cfg(feature = "tracing")]

use redis_entity::RedisEntity;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "book")]
struct Book {
    #[pk]
    id: u64,
    #[index]
    genre: String,
}

fn book(id: u64) -> Book {
    Book {
        id,
        genre: "sf".into(),
    }
}

use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};

/// A span's name and its fields as text.
type Seen = (String, Vec<(String, String)>);

/// Every span.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Seen>>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);
impl Visit for Fields<'_> {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0.push((f.name().to_owned(), format!("{v:?}")));
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.push((f.name().to_owned(), v.to_owned()));
    }
}

impl tracing::Subscriber for Collect {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::always()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, a: &Attributes<'_>) -> Id {
        let mut all = self.0.lock().unwrap();
        let mut fields = Vec::new();
        a.record(&mut Fields(&mut fields));
        all.push((a.metadata().name().to_owned(), fields));
        Id::from_u64(all.len() as u64)
    }
    fn record(&self, id: &Id, r: &Record<'_>) {
        let mut all = self.0.lock().unwrap();
        let i = id.into_u64() as usize - 1;
        r.record(&mut Fields(&mut all[i].1));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

#[tokio::test]
async fn every_operation_is_a_span_with_its_entity_keys_and_outcome() {
    let server = Target::start();
    let store = server.store().await;
    let collect = Collect::default();
    let _guard = tracing::subscriber::set_default(collect.clone());
    store.save(&book(1)).await.unwrap();
    let _ = store.insert(&book(1)).await;
    store.get::<Book>(&1).await.unwrap();
    store.find(Book::GENRE, "sf").await.unwrap();
    let spans = collect.0.lock().unwrap().clone();
    let names: Vec<&str> = spans.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "redis_entity.write",
            "redis_entity.write",
            "redis_entity.read",
            "redis_entity.query",
            "redis_entity.read"
        ]
    );
    let save = &spans[0].1;
    assert_eq!(field(save, "entity"), "Book");
    assert_eq!(field(save, "operation"), "Save");
    // The key in the store's layout: `book:1` on one server, in book 1's
    // index shard on a cluster (`{book:<n>}:book:1`).
    assert_eq!(field(save, "key"), store.keys().of::<Book>(1).base);
    if !server.is_cluster() {
        assert_eq!(field(save, "key"), "book:1");
    } else {
        let key = field(save, "key");
        assert!(
            key.starts_with("{book:") && key.ends_with("}:book:1"),
            "{key}"
        );
    }
    assert_eq!(field(save, "round_trips"), "1");
    assert_eq!(field(save, "outcome"), "ok");
    let insert = &spans[1].1;
    assert_eq!(field(insert, "operation"), "Insert");
    assert!(
        field(insert, "outcome").contains("already stored"),
        "{insert:?}"
    );
    assert_eq!(field(&spans[2].1, "records"), "1");
    assert_eq!(field(&spans[3].1, "outcome"), "ok");
}
