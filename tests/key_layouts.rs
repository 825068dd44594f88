//! The two key layouts of one schema: on one server the keys are exactly as
//! the struct names them; the cluster layout puts each entity's member in a
//! hash tag. A keyspace records its layout and a store of the other refuses it.

use redis::AsyncCommands;
use redis_entity::{Error, KeyLayout, RedisEntity, Store};
use std::collections::BTreeMap;
use support::{RedisServer, LAYOUT_MARKER};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    country: String,
    #[index(sorted)]
    score: f64,
    #[hash]
    settings: BTreeMap<String, String>,
}

/// The classic one-key-per-column table under a template.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{userid}")]
struct Account {
    #[pk]
    userid: u64,
    username: String,
}

/// A text pk that starts with `@`: escaped, so it never meets `user:@...`.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "handle")]
struct Handle {
    #[pk]
    name: String,
    #[index]
    owner: u64,
}

fn lisi() -> User {
    User {
        id: 9,
        username: "lisi".into(),
        country: "DE".into(),
        score: 1.5,
        settings: BTreeMap::from([("theme".into(), "dark".into())]),
    }
}

/// A store of the cluster layout over one server's connection (a one-node
/// cluster's keys), checking the layout as connected stores do:
/// `check_layout` is its first call, and its first write records the marker.
async fn cluster_layout_store(
    server: &RedisServer,
) -> redis_entity::Result<Store<redis::aio::MultiplexedConnection>> {
    let conn = server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let store = Store::builder().key_layout(KeyLayout::Cluster).build(conn);
    store.keys().check_layout().await?;
    Ok(store)
}

async fn marker(server: &RedisServer) -> Option<String> {
    let mut c = server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    c.get(LAYOUT_MARKER).await.unwrap()
}

#[tokio::test]
async fn one_server_keys_are_exactly_the_structs() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    assert_eq!(store.keys().layout(), KeyLayout::Standalone);
    store.save(&lisi()).await.unwrap();
    store
        .save(&Account {
            userid: 9,
            username: "lisi".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        server.keys(),
        [
            "user:9",
            "user:9:settings",
            "user:@country:DE",
            "user:@ids:@buckets",
            "user:@ids:xx",
            "user:@score",
            "user:@username:lisi",
            "user:userid:9:username",
        ]
    );
    assert_eq!(User::key(&9), "user:9");
    assert_eq!(User::USERNAME.key("lisi"), "user:@username:lisi");
    assert_eq!(marker(&server).await.as_deref(), Some("standalone"));
    assert_eq!(
        store.find_unique(User::USERNAME, "lisi").await.unwrap(),
        Some(lisi())
    );
    assert_eq!(store.find(User::COUNTRY, "DE").await.unwrap(), vec![lisi()]);
}

#[tokio::test]
async fn a_member_never_spells_an_index_family() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let h = Handle {
        name: "@ids".into(),
        owner: 1,
    };
    store.save(&h).await.unwrap();
    assert_eq!(
        server.keys(),
        ["handle:%40ids", "handle:@ids", "handle:@owner:1"]
    );
    assert_eq!(store.get::<Handle>("@ids").await.unwrap(), Some(h.clone()));
    assert_eq!(
        store
            .query::<Handle>()
            .scan(10)
            .next_page()
            .await
            .unwrap()
            .unwrap()
            .len(),
        1
    );
    assert!(store
        .maintenance::<Handle>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

/// Without a unique index (which a cluster cannot shard yet).
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "player", shards = 4)]
struct Player {
    #[pk]
    id: u64,
    #[index]
    country: String,
    #[index(sorted)]
    score: f64,
    #[hash]
    settings: BTreeMap<String, String>,
}

#[tokio::test]
async fn the_cluster_layout_tags_every_key_of_an_entity() {
    // One server holds the cluster layout too (a one-node cluster's keys).
    let server = RedisServer::start();
    let store = cluster_layout_store(&server).await.unwrap();

    // A type without indexes: the member is the hash tag.
    store
        .save(&Account {
            userid: 9,
            username: "lisi".into(),
        })
        .await
        .unwrap();
    assert_eq!(server.keys(), ["user:userid:{9}:username"]);
    assert!(store.delete::<Account>(9).await.unwrap());

    // An indexed type: the entity lives in its shard, whose tag its keys
    // and the shard's index entries share, spelled as on one server inside.
    let p = Player {
        id: 9,
        country: "DE".into(),
        score: 1.5,
        settings: BTreeMap::from([("theme".into(), "dark".into())]),
    };
    store.save(&p).await.unwrap();
    let base = store.keys().of::<Player>(9).base;
    let tag = base
        .strip_suffix("player:9")
        .expect("shard space, then the key");
    assert!(tag.starts_with("{player:") && tag.ends_with("}:"), "{tag}");
    assert_eq!(
        server.keys(),
        [
            format!("{tag}player:9"),
            format!("{tag}player:9:settings"),
            format!("{tag}player:@country:DE"),
            format!("{tag}player:@ids:@buckets"),
            format!("{tag}player:@ids:xx"),
            format!("{tag}player:@score"),
        ]
    );
    assert_eq!(store.get::<Player>(9).await.unwrap(), Some(p.clone()));
    // explain() shows one call per shard in the first round trip.
    let plan = store
        .query::<Player>()
        .eq(Player::COUNTRY, "DE")
        .explain()
        .unwrap();
    assert_eq!(
        plan.round_trips[0].len(),
        4 * 4,
        "ZCARD, the two SCARDs of the ids and SMEMBERS per shard: {plan}"
    );
    assert!(
        plan.round_trips[0]
            .iter()
            .any(|c| c.contains(&format!("{tag}player:@country:DE"))),
        "{plan}"
    );
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("reads every index shard (4)")),
        "{plan}"
    );
    assert_eq!(store.find(Player::COUNTRY, "DE").await.unwrap(), vec![p]);
    assert_eq!(store.board(Player::SCORE).rank(9).await.unwrap(), Some(0));
    assert!(store
        .maintenance::<Player>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert!(store.delete::<Player>(9).await.unwrap());
    assert!(server.keys().is_empty(), "{:?}", server.keys());
    assert_eq!(marker(&server).await.as_deref(), Some("cluster"));
}

#[tokio::test]
async fn a_store_refuses_a_keyspace_of_the_other_layout() {
    let server = RedisServer::start();
    let standalone = Store::connect(&server.url()).await.unwrap();
    standalone.save(&lisi()).await.unwrap();
    assert_eq!(marker(&server).await.as_deref(), Some("standalone"));
    let err = cluster_layout_store(&server).await.unwrap_err();
    assert!(
        matches!(&err, Error::LayoutMismatch { found, expected: "cluster" } if found == "standalone"),
        "{err:?}"
    );
    assert!(err.to_string().contains("standalone key layout"), "{err}");

    // And the other way round, from a fresh keyspace: the first write of
    // each store is where the marker is recorded and checked.
    let other = RedisServer::start();
    let cluster = cluster_layout_store(&other).await.unwrap();
    cluster.save(&lisi()).await.unwrap();
    let before = other.keys();
    let standalone = Store::connect(&other.url()).await.unwrap();
    let err = standalone.keys().check_layout().await.unwrap_err();
    assert!(matches!(err, Error::LayoutMismatch { .. }), "{err:?}");
    let err = standalone.save(&lisi()).await.unwrap_err();
    assert!(matches!(err, Error::LayoutMismatch { .. }), "{err:?}");
    assert_eq!(other.keys(), before, "a refused store writes nothing");
}

#[tokio::test]
async fn connecting_and_reading_write_nothing() {
    let server = RedisServer::start();
    let dbsize = || -> i64 { redis::cmd("DBSIZE").query(&mut server.conn()).unwrap() };
    let store = Store::connect(&server.url()).await.unwrap();
    store.keys().check_layout().await.unwrap();
    assert_eq!(store.get::<User>(9).await.unwrap(), None);
    assert!(store.find(User::COUNTRY, "DE").await.unwrap().is_empty());
    assert_eq!(store.query::<User>().count().await.unwrap(), 0);
    assert_eq!(dbsize(), 0, "connect, check_layout and reads wrote a key");
    // The first write records the marker, in the store's namespace.
    store.save(&lisi()).await.unwrap();
    assert_eq!(marker(&server).await.as_deref(), Some("standalone"));
}

#[tokio::test]
async fn a_tenant_limited_to_its_prefix_connects_reads_and_writes() {
    let server = RedisServer::start();
    let _: () = redis::cmd("ACL")
        .arg(
            &[
                "SETUSER",
                "t1",
                "on",
                ">pw",
                "~tenant:1:*",
                "+@all",
                "-@dangerous",
            ][..],
        )
        .query(&mut server.conn())
        .unwrap();
    let url = server.url().replace("redis://", "redis://t1:pw@");
    let store = Store::builder()
        .namespace(redis_entity::Namespace::tenant(1))
        .connect(&url)
        .await
        .unwrap();
    store.keys().check_layout().await.unwrap();
    assert_eq!(store.get::<User>(9).await.unwrap(), None);
    store.save(&lisi()).await.unwrap();
    assert_eq!(store.get::<User>(9).await.unwrap(), Some(lisi()));
    assert_eq!(store.find(User::COUNTRY, "DE").await.unwrap(), vec![lisi()]);
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    let mut all: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.conn())
        .unwrap();
    all.sort();
    assert!(
        all.iter().all(|k| k.starts_with("tenant:1:")),
        "a key outside the tenant's prefix: {all:?}"
    );
    assert!(
        all.contains(&format!("tenant:1:{LAYOUT_MARKER}")),
        "{all:?}"
    );
    assert!(store.delete::<User>(9).await.unwrap());
}

#[tokio::test]
async fn a_read_only_user_checks_the_marker_without_writing_it() {
    let server = RedisServer::start();
    // Read commands only.
    let reader = Store::connect(&server.read_only_url()).await.unwrap();
    reader.keys().check_layout().await.unwrap();
    assert_eq!(reader.get::<User>(9).await.unwrap(), None);
    assert_eq!(marker(&server).await, None, "a reader records nothing");

    cluster_layout_store(&server)
        .await
        .unwrap()
        .save(&lisi())
        .await
        .unwrap();
    let err = reader.keys().check_layout().await.unwrap_err();
    assert!(matches!(err, Error::LayoutMismatch { .. }), "{err:?}");
}

#[test]
fn layout_lists_both_layouts() {
    let text = User::layout().to_string();
    assert!(text.contains("user:<id>"), "{text}");
    assert!(text.contains("user:@country:<country>"), "{text}");
    // A unique index keeps the type in one shard (one slot) on a cluster.
    assert!(
        text.contains("under its index shard's tag, `{user:<shard>}:` (1 shard)"),
        "{text}"
    );
    let cluster = redis_entity::EntityLayout::of_layout(
        <User as redis_entity::Entity>::DESC,
        KeyLayout::Cluster,
    );
    assert_eq!(cluster.keys[0].pattern, "{user:<shard>}:user:<id>");
    assert!(cluster
        .to_string()
        .contains("{user:<shard>}:user:@country:<country>"));
    let plain = redis_entity::EntityLayout::of_layout(
        <Account as redis_entity::Entity>::DESC,
        KeyLayout::Cluster,
    );
    assert_eq!(plain.keys[0].pattern, "user:userid:{<userid>}");
    assert!(Player::layout().to_string().contains("(4 shards)"));
    // The type's own keys: the schema record (one slot of its own on a
    // cluster) and the boards' buckets (one key for every entity).
    let patterns = |l: &redis_entity::EntityLayout| -> Vec<String> {
        l.keys.iter().map(|k| k.pattern.clone()).collect()
    };
    assert!(patterns(&User::layout()).contains(&"user:@schema".to_owned()));
    assert!(patterns(&cluster).contains(&"{user:0}:user:@schema".to_owned()));
    assert!(patterns(&cluster).contains(&"user:board:<board>:<bucket>".to_owned()));
    assert!(patterns(&plain).contains(&"{account:0}:user:userid:@schema".to_owned()));
}

/// The same writes through a store without a namespace and through a
/// tenant's leave the same keys and values, the tenant's under its prefix:
/// the straight-line code reads the namespace from its call (where it
/// follows the column operations), in every form: a save of every column,
/// a change of an indexed field, an increment of a sorted one, a batch, a
/// unit of work, and the general code an entity with a TTL falls back to.
#[tokio::test]
async fn a_tenant_s_writes_are_the_plain_store_s_under_its_prefix() {
    use std::time::Duration;
    let server = RedisServer::start();
    let plain = Store::connect(&server.url()).await.unwrap();
    let tenant = Store::builder()
        .namespace(redis_entity::Namespace::tenant("a"))
        .connect(&server.url())
        .await
        .unwrap();
    let user = |id: u64, name: &str, country: &str| User {
        id,
        username: name.into(),
        country: country.into(),
        score: id as f64,
        settings: BTreeMap::new(),
    };
    for store in [&plain, &tenant] {
        store.save(&lisi()).await.unwrap();
        store.save(&user(2, "zhang", "CN")).await.unwrap();
        store
            .update::<User>(&9)
            .set(User::COUNTRY, "FR")
            .exec()
            .await
            .unwrap();
        store
            .update::<User>(&9)
            .incr(User::SCORE, 2.5)
            .exec()
            .await
            .unwrap();
        store
            .update::<User>(&2)
            .set(User::USERNAME, "zhang2")
            .exec()
            .await
            .unwrap();
        store
            .save_all(&[user(3, "wang", "CN"), user(4, "li", "DE")])
            .await
            .unwrap();
        store
            .transaction()
            .update::<User>(&3, |u| u.incr(User::SCORE, 1.0))
            .save(&user(5, "zhao", "FR"))
            .exec()
            .await
            .unwrap();
        // An entity with a TTL: the straight-line call hands the write to
        // the general code, which reads the namespace from that call.
        store
            .update::<User>(&4)
            .ttl(Duration::from_secs(600))
            .exec()
            .await
            .unwrap();
        store
            .update::<User>(&4)
            .incr(User::SCORE, 0.5)
            .set(User::COUNTRY, "CN")
            .exec()
            .await
            .unwrap();
        // A refused increment, in both.
        let err = store
            .update::<User>(&77)
            .incr(User::SCORE, 1.0)
            .exec()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
        store.delete::<User>(&5).await.unwrap();
    }
    let snapshot = server.snapshot();
    let (ours, theirs): (Vec<_>, Vec<_>) = snapshot
        .iter()
        .partition(|(k, _)| k.starts_with("tenant:a:"));
    let ours: Vec<_> = ours
        .into_iter()
        .map(|(k, v)| (k.strip_prefix("tenant:a:").unwrap().to_owned(), v))
        .collect();
    let theirs: Vec<_> = theirs.into_iter().map(|(k, v)| (k.clone(), v)).collect();
    assert!(
        theirs.iter().any(|(k, _)| k == "user:@country:CN"),
        "{theirs:?}"
    );
    assert!(
        theirs.iter().any(|(k, _)| k == "user:4:@shadow"),
        "{theirs:?}"
    );
    let names = |kv: &[(String, _)]| kv.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for ((k, a), (_, b)) in ours.iter().zip(&theirs) {
        if k == "user:@expiry" {
            // Its scores are the times the TTLs end, a few ms apart.
            let mut c = server.conn();
            let mut members = |key: &str| -> Vec<String> {
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(0)
                    .arg(-1)
                    .query(&mut c)
                    .unwrap()
            };
            assert_eq!(members("tenant:a:user:@expiry"), ["4"]);
            assert_eq!(members("user:@expiry"), ["4"]);
            continue;
        }
        assert_eq!(a, b, "{k}");
    }
    assert_eq!(
        tenant
            .get::<User>(9)
            .await
            .unwrap()
            .map(|u| (u.country, u.score)),
        Some(("FR".to_owned(), 4.0))
    );
    assert!(tenant
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
    assert!(plain
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}
