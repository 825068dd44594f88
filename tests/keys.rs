//! Keys built from pks are injective and round-trip, for every value
//! (property tests; the escaping itself is unit-tested in the runtime), and
//! the layout listing and registry describe and protect them.

use proptest::prelude::*;
use redis_entity::{Entity, Error, KeyPart, Namespace, RedisEntity, Registry};
use std::collections::BTreeMap;

/// Text with a high share of the characters that matter.
fn tricky() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just(':'),
            Just('{'),
            Just('}'),
            Just('*'),
            Just('?'),
            Just('['),
            Just(']'),
            Just('\\'),
            Just('%'),
            Just('_'),
            Just('中'),
            Just('李'),
            Just('é'),
            Just('\0'),
            any::<char>(),
        ],
        0..12,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

#[derive(RedisEntity)]
#[redis(key = "red_package:{program_id}_{task_id}_{uid}")]
struct RedPackage {
    #[pk]
    program_id: String,
    #[pk]
    task_id: String,
    #[pk]
    uid: u64,
    status: u8,
}

#[derive(RedisEntity)]
struct Tagged {
    #[pk]
    name: String,
    n: u8,
}

proptest! {
    #[test]
    fn string_pks_round_trip_through_keys(s in tricky()) {
        let key = Tagged::key(&s);
        let inner = key.strip_prefix("tagged:").unwrap();
        prop_assert_eq!(String::read_key(inner, "@"), Some(s));
    }

    #[test]
    fn composite_keys_never_collide(
        a in (tricky(), tricky(), any::<u64>()),
        b in (tricky(), tricky(), any::<u64>()),
    ) {
        prop_assume!(a != b);
        prop_assert_ne!(RedPackage::key(&a), RedPackage::key(&b));
    }

    #[test]
    fn the_hash_tag_is_the_whole_pk_and_nothing_else(a in (tricky(), tricky(), any::<u64>())) {
        // The cluster layout: Redis Cluster hashes the text between the
        // first `{` and the next `}`.
        let cluster = redis_entity::Namespace::none().in_layout(redis_entity::KeyLayout::Cluster);
        let key = redis_entity::EntityKeys::for_pk::<RedPackage>(&cluster, &a).base;
        let open = key.find('{').unwrap();
        let close = key[open..].find('}').unwrap() + open;
        prop_assert_eq!(close, key.len() - 1);
        prop_assert_eq!(&key[..open], "red_package:");
    }

    #[test]
    fn integers_keep_one_spelling(n in any::<i64>()) {
        let mut s = String::new();
        n.write_key(&mut s, "");
        prop_assert_eq!(i64::read_key(&s, ""), Some(n));
    }
}

#[test]
fn seed_keys_are_readable() {
    assert_eq!(
        RedPackage::key(&("1".into(), "2".into(), 3)),
        "red_package:1_2_3"
    );
    // A separator inside a value is escaped, so `1_2` + `3` differs from `1` + `2_3`.
    assert_eq!(
        RedPackage::key(&("1_2".into(), "3".into(), 4)),
        "red_package:1%5F2_3_4"
    );
    assert_eq!(Tagged::key(&"李四".into()), "tagged:李四");
    assert_eq!(Tagged::key(&"".into()), "tagged:%_");
    assert_eq!(Tagged::key(&"a:b{c}*".into()), "tagged:a%3Ab%7Bc%7D%2A");
}

#[test]
fn namespaces_are_validated() {
    assert_eq!(Namespace::tenant("a:b").as_str(), "tenant:a%3Ab:");
    assert!(matches!(
        Namespace::trusted_prefix("a{b}"),
        Err(Error::InvalidKey { .. })
    ));
    assert!(matches!(
        Namespace::trusted_prefix("a::b"),
        Err(Error::InvalidKey { .. })
    ));
    assert_eq!(Namespace::trusted_prefix("").unwrap().as_str(), "");
    // A name is one escaped segment: an id cannot reach another tenant.
    assert_eq!(Namespace::new("1:acct").as_str(), "1%3Aacct:");
    assert_eq!(Namespace::new("").as_str(), "%_:");
}

#[derive(RedisEntity)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    username: String,
    email: Option<String>,
    #[hash]
    settings: BTreeMap<String, String>,
}

#[derive(RedisEntity)]
#[redis(layout = "strings", key = "user:userid:{id}")]
struct UserColumns {
    #[pk]
    id: u64,
    username: String,
    #[redis(ttl = 60)]
    code: Option<String>,
}

/// Another type under `user:<pk>`: its keys could equal `User`'s.
#[derive(RedisEntity)]
#[redis(prefix = "user")]
struct UserAgain {
    #[pk]
    id: String,
    n: u8,
}

#[test]
fn layout_lists_every_key_family_with_its_type() {
    let l = User::layout();
    let rows: Vec<(String, String)> = l
        .keys
        .iter()
        .map(|k| (k.pattern.clone(), k.redis_type.to_string()))
        .collect();
    assert_eq!(
        rows,
        [
            ("user:<id>".to_string(), "hash".to_string()),
            ("user:<id>:settings".to_string(), "hash".to_string()),
            // Relations, timelines and boards, once the type has any.
            ("user:<id>:<relation>".to_string(), "set".to_string()),
            ("user:<id>:<timeline>".to_string(), "list".to_string()),
            ("user:<id>:@rel".to_string(), "hash".to_string()),
            ("user:<id>:@req:<token>".to_string(), "string".to_string()),
            // The type's own keys: boards' buckets and its schema record.
            (
                "user:@board:<board>:<bucket>".to_string(),
                "zset".to_string()
            ),
            ("user:@schema".to_string(), "hash".to_string())
        ]
    );
    let l = UserColumns::layout();
    let patterns: Vec<&str> = l.keys.iter().map(|k| k.pattern.as_str()).collect();
    assert_eq!(
        patterns,
        [
            "user:userid:<id>",
            "user:userid:<id>:username",
            "user:userid:<id>:code",
            "user:userid:<id>:<relation>",
            "user:userid:<id>:<timeline>",
            "user:userid:<id>:@rel",
            "user:userid:<id>:@req:<token>",
            // Boards and index keys go under the type's prefix; the schema
            // record follows the entity keys' head.
            "user_columns:@board:<board>:<bucket>",
            "user:userid:@schema"
        ]
    );
    // The pk's own name, whatever it is.
    assert_eq!(UserAgain::layout().keys[0].pattern, "user:<id>");
    #[derive(RedisEntity)]
    #[redis(prefix = "product")]
    struct Product {
        #[pk]
        sku: String,
        #[index]
        tags: std::collections::BTreeSet<String>,
    }
    let patterns: Vec<String> = Product::layout()
        .keys
        .iter()
        .map(|k| k.pattern.clone())
        .collect();
    assert_eq!(patterns[0], "product:<sku>");
    assert!(
        patterns.contains(&"product:<sku>:@shadow".to_string()),
        "{patterns:?}"
    );
    assert!(
        patterns.contains(&"product:@ids".to_string()),
        "{patterns:?}"
    );
    let text = l.to_string();
    assert!(text.contains("expires 60s after each write"), "{text}");
    assert_eq!(
        <UserColumns as Entity>::DESC.key_pattern,
        "user:userid:{<id>}"
    );
}

#[test]
fn registry_refuses_overlapping_entities() {
    let reg = Registry::new()
        .register::<User>()
        .unwrap()
        .register::<UserColumns>()
        .unwrap()
        .register::<RedPackage>()
        .unwrap();
    assert_eq!(reg.layouts().len(), 3);
    let err = reg.clone().register::<UserAgain>().unwrap_err();
    assert!(matches!(err, Error::LayoutOverlap { .. }), "{err:?}");
    assert!(err.to_string().contains("UserAgain"), "{err}");

    // Without braces, `user:<text pk>` can spell `user:userid:9`'s head
    // (pk "userid"): refused; `user:<integer>` cannot (`User` above).
    let err = Registry::new()
        .register::<UserColumns>()
        .unwrap()
        .register::<Nick>()
        .unwrap_err();
    assert!(err.to_string().contains("Nick"), "{err}");
}

/// A text pk under `user:`.
#[derive(RedisEntity)]
#[redis(prefix = "user")]
struct Nick {
    #[pk]
    nick: String,
}
