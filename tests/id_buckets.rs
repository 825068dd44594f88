//! The set of all ids of a type with an integer pk, kept in buckets of at
//! most 100 ids (`user:@ids:12xx` holds 1200-1299) that Redis stores as
//! intsets, listed in `user:@ids:@buckets`: what each write leaves, that
//! every reader (a query of `none` conditions, `count`, `scan`, `verify`)
//! walks the buckets, and that a store written before buckets, with its one
//! set `user:@ids`, is read and cleaned without a migration. Ids at the ends
//! of `u64` and `i64` (past 2^53, where Lua's numbers lose exactness) land
//! in the bucket Rust's verify looks in.
//! `every_reader_walks_the_buckets_and_deletes_leave_nothing` also runs on a
//! 3-master cluster with `REDIS_ENTITY_TEST_CLUSTER` set, in the type's shard.

use redis::Commands;
use redis_entity::{RedisEntity, Store};
use std::collections::BTreeSet;
use support::{RedisServer, Target};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index]
    country: String,
}

fn user(id: u64) -> User {
    User {
        id,
        country: if id.is_multiple_of(2) { "DE" } else { "CN" }.into(),
    }
}

/// Ids that fall in several buckets: 0-99 (`xx`), 100-199 (`1xx`), and
/// 1200-1299 (`12xx`).
const IDS: [u64; 6] = [7, 99, 100, 150, 1200, 1234];

fn smembers(server: &RedisServer, key: &str) -> BTreeSet<String> {
    server.conn().smembers(key).unwrap()
}

fn texts(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn each_id_goes_to_its_bucket_and_the_directory_lists_the_buckets() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    // One save at a time (the straight-line code) and a batch (the general
    // code) write the same layout.
    for id in &IDS[..3] {
        store.save(&user(*id)).await.unwrap();
    }
    store
        .save_all(&IDS[3..].iter().map(|id| user(*id)).collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(smembers(&server, "user:@ids:xx"), texts(&["7", "99"]));
    assert_eq!(smembers(&server, "user:@ids:1xx"), texts(&["100", "150"]));
    assert_eq!(
        smembers(&server, "user:@ids:12xx"),
        texts(&["1200", "1234"])
    );
    assert_eq!(
        smembers(&server, "user:@ids:@buckets"),
        texts(&["xx", "1xx", "12xx"])
    );
    // No single set of ids, and each bucket an intset.
    let exists: bool = server.conn().exists("user:@ids").unwrap();
    assert!(!exists, "no one set");
    let encoding: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("user:@ids:12xx")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(encoding, "intset");
    // An update writes no id; a bucket's last delete takes it out of the
    // directory, another delete leaves its bucket listed.
    store
        .save(&User {
            id: 7,
            country: "FR".into(),
        })
        .await
        .unwrap();
    assert!(store.delete::<User>(&1200).await.unwrap());
    assert!(store.delete::<User>(&1234).await.unwrap());
    assert!(store.delete::<User>(&150).await.unwrap());
    assert_eq!(
        smembers(&server, "user:@ids:@buckets"),
        texts(&["xx", "1xx"])
    );
    assert_eq!(smembers(&server, "user:@ids:1xx"), texts(&["100"]));
    let keys: Vec<String> = server.keys();
    assert!(!keys.contains(&"user:@ids:12xx".to_string()), "{keys:?}");
}

#[tokio::test]
async fn every_reader_walks_the_buckets_and_deletes_leave_nothing() {
    let server = Target::start();
    let store = server.store().await;
    // 250 users in three buckets, and a few far ones.
    let ids: Vec<u64> = (1..=250).chain(IDS[4..].iter().copied()).collect();
    let all: Vec<User> = ids.iter().map(|id| user(*id)).collect();
    store.save_all(&all).await.unwrap();
    let want: BTreeSet<u64> = ids.iter().copied().collect();
    // A query of `none` conditions starts from every id.
    let not_fr: BTreeSet<u64> = store
        .query::<User>()
        .none(User::COUNTRY, ["FR"])
        .ids()
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(not_fr, want);
    let not_de = store
        .query::<User>()
        .none(User::COUNTRY, ["DE"])
        .count()
        .await
        .unwrap();
    assert_eq!(
        not_de,
        want.iter().filter(|id| !id.is_multiple_of(2)).count() as u64
    );
    // A scan in pages of 20: the one set (none here), then one bucket a page
    // where the server answers the whole directory at once (Valkey keeps one
    // this small as a listpack), else each page of the directory's hash table.
    let mut scan = store.query::<User>().scan(20);
    let mut seen = BTreeSet::new();
    let mut pages = 0;
    while let Some(page) = scan.next_page().await.unwrap() {
        pages += 1;
        // One bucket, or the few a page of the directory's hash table names.
        assert!(page.len() <= 300, "a page of {} users", page.len());
        for u in page {
            let u = u.unwrap();
            assert_eq!(u, user(u.id));
            seen.insert(u.id);
        }
    }
    assert_eq!(seen, want);
    assert!(pages >= 3, "{pages} pages: the one set, then the buckets");
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, want.len());
    for id in &ids {
        assert!(store.delete::<User>(id).await.unwrap());
    }
    let left: Vec<String> = server
        .keys()
        .into_iter()
        .filter(|k| k.contains("user:"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `verify` finds nothing wrong.
async fn assert_clean(store: &Store) {
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
}

/// A store written before buckets: the same users, their ids moved into
/// the one set `user:@ids` and the buckets gone.
async fn written_before_buckets(server: &RedisServer, store: &Store) {
    for id in IDS {
        store.save(&user(id)).await.unwrap();
    }
    let mut c = server.conn();
    let buckets: Vec<String> = c.smembers("user:@ids:@buckets").unwrap();
    for b in buckets {
        let ids: Vec<String> = c.smembers(format!("user:@ids:{b}")).unwrap();
        let _: () = c.sadd("user:@ids", ids).unwrap();
        let _: () = c.del(format!("user:@ids:{b}")).unwrap();
    }
    let _: () = c.del("user:@ids:@buckets").unwrap();
}

/// Every user's id through a query of only `none` conditions.
async fn not_fr(store: &Store) -> BTreeSet<u64> {
    let q = store.query::<User>().none(User::COUNTRY, ["FR"]);
    q.ids().await.unwrap().into_iter().collect()
}

#[tokio::test]
async fn a_store_written_before_buckets_is_read_and_cleaned_without_a_migration() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    written_before_buckets(&server, &store).await;
    let every: BTreeSet<u64> = IDS.iter().copied().collect();
    assert_eq!(not_fr(&store).await, every);
    assert_clean(&store).await;
    // A new user goes to its bucket; the readers see both.
    store.save(&user(5)).await.unwrap();
    assert_eq!(smembers(&server, "user:@ids:xx"), texts(&["5"]));
    let mut with_5 = every.clone();
    with_5.insert(5);
    assert_eq!(not_fr(&store).await, with_5);
    let mut scan = store.query::<User>().scan(2);
    let mut seen = BTreeSet::new();
    while let Some(page) = scan.next_page().await.unwrap() {
        seen.extend(page.into_iter().map(|u| u.unwrap().id));
    }
    assert_eq!(seen, with_5);
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, 7);
    // A delete takes an old id out of the one set.
    assert!(store.delete::<User>(&1234).await.unwrap());
    assert!(!smembers(&server, "user:@ids").contains("1234"));
    // Repair of an old entity missing from every set lists it in its
    // bucket, and the one set keeps the others.
    let _: () = server.conn().srem("user:@ids", "99").unwrap();
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert_eq!(report.violations.len(), 1, "{report}");
    store.maintenance::<User>().repair(&report).await.unwrap();
    assert_eq!(smembers(&server, "user:@ids:xx"), texts(&["5", "99"]));
    assert_eq!(
        smembers(&server, "user:@ids"),
        texts(&["7", "100", "150", "1200"])
    );
    assert_clean(&store).await;
}

#[tokio::test]
async fn a_bucket_missing_from_the_directory_is_found_and_repaired() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    for id in IDS {
        store.save(&user(id)).await.unwrap();
    }
    // Written around the library: the directory loses a bucket, which
    // hides its ids from every walk.
    let _: () = server.conn().srem("user:@ids:@buckets", "1xx").unwrap();
    let hidden = store
        .query::<User>()
        .none(User::COUNTRY, ["FR"])
        .count()
        .await
        .unwrap();
    assert_eq!(hidden, 4);
    let report = store.maintenance::<User>().verify().await.unwrap();
    let found: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
    assert_eq!(
        found,
        ["ids set misses entity `100`", "ids set misses entity `150`"],
        "{report}"
    );
    store.maintenance::<User>().repair(&report).await.unwrap();
    assert_eq!(
        smembers(&server, "user:@ids:@buckets"),
        texts(&["xx", "1xx", "12xx"])
    );
    let count = store
        .query::<User>()
        .none(User::COUNTRY, ["FR"])
        .count()
        .await
        .unwrap();
    assert_eq!(count, 6);
    // An id in a bucket not its own (1200's is `12xx`) would outlive its
    // entity's delete there: reported, and taken out by repair.
    let _: () = server.conn().sadd("user:@ids:xx", "1200").unwrap();
    let report = store.maintenance::<User>().verify().await.unwrap();
    let found: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
    assert_eq!(found, ["misplaced id `1200` in `user:@ids:xx`"], "{report}");
    store.maintenance::<User>().repair(&report).await.unwrap();
    assert_eq!(smembers(&server, "user:@ids:xx"), texts(&["7", "99"]));
    assert_eq!(
        smembers(&server, "user:@ids:12xx"),
        texts(&["1200", "1234"])
    );
    assert_clean(&store).await;
}

#[tokio::test]
async fn a_walk_resumes_from_its_cursor_in_the_one_set_and_in_the_buckets() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    // 600 ids in the one set of a store written before buckets (past 512,
    // a hash table: SSCAN pages it), then 300 in three buckets.
    let old: Vec<User> = (1000..1600).map(user).collect();
    store.save_all(&old).await.unwrap();
    let mut c = server.conn();
    for b in ["10xx", "11xx", "12xx", "13xx", "14xx", "15xx"] {
        let ids: Vec<String> = c.smembers(format!("user:@ids:{b}")).unwrap();
        let _: () = c.sadd("user:@ids", ids).unwrap();
        let _: () = c.del(format!("user:@ids:{b}")).unwrap();
    }
    let _: () = c.del("user:@ids:@buckets").unwrap();
    let new: Vec<User> = (0..300).map(user).collect();
    store.save_all(&new).await.unwrap();
    // Each walk stops after two pages and the next resumes at its cursor.
    let mut seen = BTreeSet::new();
    let mut cursor = 0;
    let mut walks = 0;
    let mut returned = 0;
    loop {
        walks += 1;
        assert!(walks < 100, "the walk does not end");
        let mut scan = store.query::<User>().scan(40).resume_at(cursor);
        for _ in 0..2 {
            match scan.next_page().await.unwrap() {
                Some(page) => {
                    returned += page.len();
                    seen.extend(page.into_iter().map(|u| u.unwrap().id));
                }
                None => break,
            }
        }
        cursor = scan.cursor();
        if cursor == 0 {
            break;
        }
    }
    let want: BTreeSet<u64> = (0..300).chain(1000..1600).collect();
    assert_eq!(seen, want);
    // Nothing changed meanwhile: each resumed walk went on where the last
    // stopped, after the last bucket read, and repeated nobody.
    assert_eq!(returned, want.len());
    assert!(walks > 2, "{walks} walks");
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "account")]
struct Account {
    #[pk]
    id: i64,
    #[index]
    country: String,
}

/// Ids at the ends of `u64` and `i64`, and past 2^53 where Lua's numbers
/// lose exactness: the writers (Lua, single saves and batches) and verify's
/// probe (Rust) spell the same bucket, cut from the id's text; readers find
/// them all; their deletes leave no key.
#[tokio::test]
async fn ids_at_the_ends_of_the_integers_go_to_the_buckets_both_sides_spell() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    let big: [u64; 4] = [u64::MAX, u64::MAX - 1, (1 << 53) + 1, (1 << 53) + 3];
    store.save(&user(big[0])).await.unwrap();
    store.save(&user(big[2])).await.unwrap();
    store.save_all(&[user(big[1]), user(big[3])]).await.unwrap();
    assert_eq!(
        smembers(&server, "user:@ids:184467440737095516xx"),
        texts(&["18446744073709551615", "18446744073709551614"])
    );
    assert_eq!(
        smembers(&server, "user:@ids:90071992547409xx"),
        texts(&["9007199254740993", "9007199254740995"])
    );
    assert_eq!(
        smembers(&server, "user:@ids:@buckets"),
        texts(&["184467440737095516xx", "90071992547409xx"])
    );

    let signed: [i64; 6] = [i64::MIN, i64::MIN + 1, -15, -1, 0, i64::MAX];
    let account = |id: i64| Account {
        id,
        country: "DE".into(),
    };
    for id in &signed[..3] {
        store.save(&account(*id)).await.unwrap();
    }
    let rest: Vec<Account> = signed[3..].iter().map(|id| account(*id)).collect();
    store.save_all(&rest).await.unwrap();
    assert_eq!(
        smembers(&server, "account:@ids:-92233720368547758xx"),
        texts(&["-9223372036854775808", "-9223372036854775807"])
    );
    assert_eq!(smembers(&server, "account:@ids:-xx"), texts(&["-15"]));
    assert_eq!(smembers(&server, "account:@ids:xx"), texts(&["-1", "0"]));
    assert_eq!(
        smembers(&server, "account:@ids:92233720368547758xx"),
        texts(&["9223372036854775807"])
    );
    assert_eq!(
        smembers(&server, "account:@ids:@buckets"),
        texts(&["-92233720368547758xx", "-xx", "xx", "92233720368547758xx"])
    );

    // The readers: a query of `none` conditions, and verify (its probe
    // spells each entity's bucket in Rust).
    let ids: BTreeSet<u64> = not_fr(&store).await;
    assert_eq!(ids, big.iter().copied().collect());
    let q = store.query::<Account>().none(Account::COUNTRY, ["FR"]);
    let ids: BTreeSet<i64> = q.ids().await.unwrap().into_iter().collect();
    assert_eq!(ids, signed.iter().copied().collect());
    assert_clean(&store).await;
    let report = store.maintenance::<Account>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.entities, signed.len());

    for id in big {
        assert!(store.delete::<User>(&id).await.unwrap());
    }
    for id in signed {
        assert!(store.delete::<Account>(&id).await.unwrap());
    }
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}
