//! The profile cache: a profile as one hash per user (HSET one field, HINCRBY,
//! EXPIRE), settings in their own hash (`user:1001:settings`), tenant prefixes.
//! Runs on one server, and with `scripts/test.sh --cluster` on a 3-master
//! cluster, where the same keys carry a hash tag (`user:{1001}:profile`).

use redis::Commands;
use redis_entity::{Error, Namespace, RedisEntity, Store};
use std::collections::BTreeMap;
use std::time::Duration;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user", key = "user:{id}:profile")]
struct Profile {
    #[pk]
    id: u64,
    name: String,
    visits: i64,
    score: f64,
    #[hash]
    settings: BTreeMap<String, String>,
}

/// A session that expires an hour after it is first stored.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(ttl = 3600)]
struct Session {
    #[pk]
    token: String,
    user: u64,
}

fn ada() -> Profile {
    Profile {
        id: 1001,
        name: "Ada".into(),
        visits: 0,
        score: 1.5,
        settings: BTreeMap::from([("theme".into(), "dark".into())]),
    }
}

#[tokio::test]
async fn profile_hash_and_settings_hash_share_one_hash_tag() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&ada()).await.unwrap();
    if !server.is_cluster() {
        assert_eq!(
            server.keys(),
            ["user:1001:profile", "user:1001:profile:settings"]
        );
    }
    let keys = store.keys().of::<Profile>(1001);
    let (profile, settings) = (keys.base.clone(), keys.maps[0].clone());
    if server.is_cluster() {
        assert_eq!(
            (profile.as_str(), settings.as_str()),
            ("user:{1001}:profile", "user:{1001}:profile:settings"),
            "one hash tag"
        );
    }
    assert_eq!(server.keys(), [profile.clone(), settings.clone()]);
    let theme: String = server.conn().hget(&settings, "theme").unwrap();
    assert_eq!(theme, "dark");
    let visits: i64 = server.conn().hget(&profile, "visits").unwrap();
    assert_eq!(visits, 0);
    assert_eq!(store.get::<Profile>(&1001).await.unwrap(), Some(ada()));
}

#[tokio::test]
async fn hset_one_field_and_hincrby_without_reading() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&ada()).await.unwrap();
    store
        .update::<Profile>(&1001)
        .set(Profile::NAME, "Ada L.")
        .incr(Profile::VISITS, 3)
        .incr(Profile::SCORE, 0.25)
        .hset(Profile::SETTINGS, "lang", "en")
        .exec()
        .await
        .unwrap();
    let p = store.get::<Profile>(&1001).await.unwrap().unwrap();
    assert_eq!(p.name, "Ada L.");
    assert_eq!(p.visits, 3);
    assert_eq!(p.score, 1.75);
    assert_eq!(p.settings.get("lang").map(String::as_str), Some("en"));
    assert_eq!(p.settings.get("theme").map(String::as_str), Some("dark"));
    assert_eq!(
        store
            .hget(Profile::SETTINGS, &1001, "lang")
            .await
            .unwrap()
            .as_deref(),
        Some("en")
    );

    store
        .update::<Profile>(&1001)
        .hdel(Profile::SETTINGS, "theme")
        .exec()
        .await
        .unwrap();
    assert_eq!(
        store.hget(Profile::SETTINGS, &1001, "theme").await.unwrap(),
        None
    );

    // `set` on a #[hash] field replaces the whole map.
    store
        .update::<Profile>(&1001)
        .set(
            Profile::SETTINGS,
            BTreeMap::from([("tz".into(), "UTC".into())]),
        )
        .exec()
        .await
        .unwrap();
    let p = store.get::<Profile>(&1001).await.unwrap().unwrap();
    assert_eq!(p.settings, BTreeMap::from([("tz".into(), "UTC".into())]));
}

#[tokio::test]
async fn expire_applies_to_every_key_and_save_keeps_the_remaining_ttl() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&ada()).await.unwrap();
    assert_eq!(store.expiry::<Profile>().ttl(&1001).await.unwrap(), None);
    assert!(store
        .expiry::<Profile>()
        .expire(&1001, Duration::from_secs(100))
        .await
        .unwrap());
    let mut c = server.conn();
    let keys = store.keys().of::<Profile>(1001);
    let (profile, settings) = (keys.base.clone(), keys.maps[0].clone());
    for key in [&profile, &settings] {
        let ttl: i64 = c.ttl(key).unwrap();
        assert!((95..=100).contains(&ttl), "{key} ttl {ttl}");
    }

    // A later save (which rewrites the settings hash) keeps the TTL.
    let mut changed = ada();
    changed.settings.insert("lang".into(), "fr".into());
    store.save(&changed).await.unwrap();
    for key in [&profile, &settings] {
        let ttl: i64 = c.ttl(key).unwrap();
        assert!((95..=100).contains(&ttl), "{key} ttl {ttl} after save");
    }
    let left = store.expiry::<Profile>().ttl(&1001).await.unwrap().unwrap();
    assert!(left > Duration::from_secs(95));

    // A save with a new TTL replaces it; persist removes it.
    store
        .expiry()
        .save_with_ttl(&changed, Duration::from_secs(10))
        .await
        .unwrap();
    let ttl: i64 = c.ttl(&settings).unwrap();
    assert!((8..=10).contains(&ttl), "ttl {ttl}");
    assert!(store.expiry::<Profile>().persist(&1001).await.unwrap());
    let ttl: i64 = c.ttl(&profile).unwrap();
    assert_eq!(ttl, -1);
    assert!(!store
        .expiry::<Profile>()
        .expire(&7, Duration::from_secs(1))
        .await
        .unwrap());
}

#[tokio::test]
async fn an_expired_profile_is_gone_and_cannot_be_updated() {
    let server = Target::start();
    let store = server.store().await;
    store
        .expiry()
        .save_with_ttl(&ada(), Duration::from_millis(50))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(store.get::<Profile>(&1001).await.unwrap(), None);
    let err = store
        .update::<Profile>(&1001)
        .incr(Profile::VISITS, 1)
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(
        server.keys().is_empty(),
        "no partial entity: {:?}",
        server.keys()
    );
}

#[tokio::test]
async fn container_ttl_is_set_on_creation_only() {
    let server = Target::start();
    let store = server.store().await;
    let s = Session {
        token: "abc".into(),
        user: 1001,
    };
    store.insert(&s).await.unwrap();
    let key = store.keys().of::<Session>("abc".to_string()).base;
    assert_eq!(
        key,
        if server.is_cluster() {
            "session:{abc}"
        } else {
            "session:abc"
        }
    );
    let mut c = server.conn();
    let ttl: i64 = c.ttl(&key).unwrap();
    assert!((3590..=3600).contains(&ttl), "ttl {ttl}");
    // Shorten it, then save again: the remaining TTL is kept, not reset to 3600.
    store
        .expiry::<Session>()
        .expire(&"abc".to_string(), Duration::from_secs(30))
        .await
        .unwrap();
    store.save(&s).await.unwrap();
    let ttl: i64 = c.ttl(&key).unwrap();
    assert!((25..=30).contains(&ttl), "ttl {ttl}");
}

#[tokio::test]
async fn tenant_prefix_applies_to_every_key() {
    let server = Target::start();
    let t42 = server
        .store_with(Store::builder().namespace(Namespace::tenant(42)))
        .await;
    let t43 = server
        .store_with(Store::builder().namespace(Namespace::tenant(43)))
        .await;
    t42.save(&ada()).await.unwrap();
    if !server.is_cluster() {
        assert_eq!(
            server.keys(),
            [
                "tenant:42:user:1001:profile",
                "tenant:42:user:1001:profile:settings"
            ]
        );
    }
    let keys = t42.keys().of::<Profile>(1001);
    if server.is_cluster() {
        assert_eq!(
            (keys.base.as_str(), keys.maps[0].as_str()),
            (
                "tenant:42:user:{1001}:profile",
                "tenant:42:user:{1001}:profile:settings"
            )
        );
    }
    assert_eq!(server.keys(), [keys.base.clone(), keys.maps[0].clone()]);
    assert_ne!(t43.keys().of::<Profile>(1001).base, keys.base);
    assert_eq!(t43.get::<Profile>(&1001).await.unwrap(), None);
    assert_eq!(t42.get::<Profile>(&1001).await.unwrap(), Some(ada()));
    t42.update::<Profile>(&1001)
        .incr(Profile::VISITS, 1)
        .exec()
        .await
        .unwrap();
    assert!(t42.delete::<Profile>(&1001).await.unwrap());
    assert!(server.keys().is_empty());
}
