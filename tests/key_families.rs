//! The layout listings name every key the library writes: after a workout
//! of every feature that leaves keys (every index kind, `#[hash]` maps,
//! TTLs, relations, timelines, boards, request tokens, read-through caches,
//! the three storage layouts), each key of the keyspace matches a family of
//! `E::layout()` (in the store's key layout) or of `store.keys().families()`,
//! with that family's Redis type. Runs on one server, and with
//! `scripts/test.sh --cluster` on a 3-master cluster (where index shards,
//! schema records and unique owner keys live in slots of their own).

use redis_entity::board::Board;
use redis_entity::relation::{Relation, Timeline};
use redis_entity::{Cache, Entity, EntityLayout, KeyPattern, RedisEntity};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "kf", shards = 4)]
struct Member {
    #[pk]
    id: u64,
    #[index(unique)]
    email: String,
    #[index]
    country: String,
    #[index]
    tags: BTreeSet<String>,
    #[index(prefix)]
    name: String,
    #[index(sorted)]
    score: f64,
    #[hash]
    settings: BTreeMap<String, String>,
}

/// The classic one-key-per-column layout, without indexes.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "acct:id:{id}")]
struct Account {
    #[pk]
    id: u64,
    name: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "json", prefix = "doc")]
struct Doc {
    #[pk]
    id: String,
    body: String,
}

const FOLLOWS: Relation<Member, Member> = Relation::many_to_many("following", "followers");
const FEED: Timeline<Member, Member> = Timeline::new("feed", 10);
const DAILY: Board<Member> = Board::daily("daily", 2);

fn member(id: u64) -> Member {
    Member {
        id,
        email: format!("m{id}@example.com"),
        country: "DE".into(),
        tags: ["a".to_owned(), format!("t{id}")].into(),
        name: format!("name{id}"),
        score: id as f64,
        settings: [("theme".to_owned(), "dark".to_owned())].into(),
    }
}

/// Whether `key` is spelled by `pattern`, where each `<placeholder>` stands
/// for one or more characters other than `:` and braces, not starting with
/// `@` (an escaped member, value, tag, name, bucket or token: none holds
/// them, so a placeholder never swallows another family's mark).
fn spells(pattern: &str, key: &str) -> bool {
    match pattern.find('<') {
        None => pattern == key,
        Some(open) => {
            let close = open + pattern[open..].find('>').expect("a closed placeholder");
            let (literal, rest) = (&pattern[..open], &pattern[close + 1..]);
            let Some(tail) = key.strip_prefix(literal) else {
                return false;
            };
            let run = tail.find([':', '{', '}']).unwrap_or(tail.len());
            !tail.starts_with('@') && (1..=run).any(|n| spells(rest, &tail[n..]))
        }
    }
}

#[test]
fn a_placeholder_is_one_segment() {
    assert!(spells("kf:<id>", "kf:12"));
    assert!(spells("kf:<id>:<relation>", "kf:12:feed"));
    assert!(!spells("kf:<id>", "kf:12:feed"));
    assert!(!spells("kf:<id>", "kf:@schema"));
    assert!(spells("{kf:<shard>}:kf:@ids:<bucket>", "{kf:3}:kf:@ids:0x"));
    assert!(spells("cache:{<key>}:lock", "cache:{k}:lock"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_written_is_in_a_listed_family_with_its_type() {
    let server = Target::start();
    let store = server
        .store_with(redis_entity::Store::builder().write_retries(2))
        .await;
    for id in 1..=4 {
        store.save(&member(id)).await.unwrap();
    }
    let ttl = Duration::from_secs(600);
    store
        .expiry::<Member>()
        .save_with_ttl(&member(5), ttl)
        .await
        .unwrap();
    store.delete::<Member>(&4).await.unwrap();
    store.relation(&FOLLOWS).relate(&1, &2).await.unwrap();
    store.timeline(&FEED).push(&3, [1u64, 2]).await.unwrap();
    store.board(&DAILY).incr(&1, 5.0).await.unwrap();
    store
        .save(&Account {
            id: 7,
            name: "ann".into(),
        })
        .await
        .unwrap();
    store
        .save(&Doc {
            id: "readme".into(),
            body: "hello".into(),
        })
        .await
        .unwrap();
    for cache in [
        Cache::from_store(&store),
        Cache::from_store(&store).named("pages"),
    ] {
        let v: Option<String> = cache
            .get_or_load("home", ttl, || async {
                Ok::<_, std::io::Error>(Some("x".to_owned()))
            })
            .await
            .unwrap();
        assert_eq!(v.as_deref(), Some("x"));
    }

    let layout = store.keys().layout();
    let mut families: Vec<KeyPattern> = store.keys().families();
    for desc in [Member::DESC, Account::DESC, Doc::DESC] {
        families.extend(EntityLayout::of_layout(desc, layout).keys);
    }
    let keys = store.keys().scan("*").await.unwrap();
    // Every kind of key the workout leaves is there to be checked.
    for family in [
        "@schema",
        "@redis-entity:layout",
        ":@shadow",
        ":@req:",
        "cache:",
    ] {
        assert!(
            keys.iter().any(|k| k.contains(family)),
            "no {family} key in {keys:#?}"
        );
    }
    let mut conn = server.conn();
    let mut unlisted = Vec::new();
    for key in &keys {
        let found: String = redis::cmd("TYPE").arg(key).query(&mut conn).unwrap();
        let listed = families
            .iter()
            .any(|f| f.redis_type.to_string() == found && spells(&f.pattern, key));
        if !listed {
            unlisted.push(format!("{key} ({found})"));
        }
    }
    let listing: Vec<String> = families
        .iter()
        .map(|f| format!("{} ({})", f.pattern, f.redis_type))
        .collect();
    assert!(
        unlisted.is_empty(),
        "keys in no listed family: {unlisted:#?}\nlisted: {listing:#?}"
    );
}
