//! The index invariants under concurrency, and the checker that proves them.
//!
//! 8 writers hammer a small id space with saves, indexed updates, tag changes,
//! unique renames and deletes; afterwards `verify` must find zero violations.
//! A second test plants each kind of inconsistency by hand and shows that
//! `verify` reports it (so the checker can fail) and that `repair` fixes it.
//! Runs on one server, and with `REDIS_ENTITY_TEST_CLUSTER` set on a
//! 3-master cluster, where `User` and `Member` (a unique index each, so one
//! shard) keep every key in their shard's space (`{user:0}:user:3`,
//! `{user:0}:user:@country:CN`, `{member:0}:member:@city:DE`).

use redis::Commands;
use redis_entity::verify::Violation;
use redis_entity::{AnyConnection, Error, RedisEntity, Store};
use std::collections::BTreeSet;
use support::Target;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[index]
    country: Option<String>,
    #[index]
    tags: BTreeSet<String>,
    level: i64,
}

/// The same invariants in the strings layout (one key per column).
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "member:id:{id}")]
struct Member {
    #[pk]
    id: u64,
    #[index(unique)]
    nick: String,
    #[index]
    city: String,
}

/// The key space (shard prefix) an entity key `base` lives in, given the
/// entity's standalone key: empty on one server, `{<prefix>:<shard>}:` on a
/// cluster (an entity key ends in its standalone spelling).
fn space(base: &str, standalone: &str) -> String {
    base.strip_suffix(standalone)
        .expect("an entity key ends in its standalone spelling")
        .to_owned()
}

/// `key`, a standalone key of `User` (`user:@country:CN`), in the store's
/// layout: on a cluster inside the space of `User`'s one shard.
fn in_space(store: &Store<AnyConnection>, key: &str) -> String {
    let space = space(&store.keys().of::<User>(1).base, &User::key(&1));
    format!("{space}{key}")
}

/// xorshift: deterministic per writer, no extra dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const NAMES: &[&str] = &["lisi", "wang", "anna", "bob", "chen", "dora", "eve", "fay"];
const COUNTRIES: &[&str] = &["DE", "CN", "FR", "US"];
const TAGS: &[&str] = &["a", "b", "c", "d", "e"];

fn random_user(rng: &mut Rng, id: u64) -> User {
    User {
        id,
        username: rng.pick(NAMES).to_string(),
        country: if rng.next().is_multiple_of(5) {
            None
        } else {
            Some(rng.pick(COUNTRIES).to_string())
        },
        tags: (0..rng.next() % 4)
            .map(|_| rng.pick(TAGS).to_string())
            .collect(),
        level: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_writers_leave_zero_violations() {
    let server = Target::start();
    let store = server.store().await;
    let writers: Vec<_> = (0..8u64)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((w + 1) * 7919));
                let mut done = 0;
                for _ in 0..400 {
                    let id = rng.next() % 12;
                    let r = match rng.next() % 6 {
                        0 | 1 => store.save(&random_user(&mut rng, id)).await.map(drop),
                        2 => {
                            store
                                .update::<User>(&id)
                                .set(User::COUNTRY, Some(rng.pick(COUNTRIES).to_string()))
                                .incr(User::LEVEL, 1)
                                .exec()
                                .await
                        }
                        3 => {
                            let tags: BTreeSet<String> = (0..rng.next() % 4)
                                .map(|_| rng.pick(TAGS).to_string())
                                .collect();
                            store.update::<User>(&id).set(User::TAGS, tags).exec().await
                        }
                        4 => {
                            store
                                .update::<User>(&id)
                                .set(User::USERNAME, rng.pick(NAMES))
                                .exec()
                                .await
                        }
                        _ => store.delete::<User>(&id).await.map(drop),
                    };
                    match r {
                        Ok(()) => done += 1,
                        Err(Error::UniqueViolation { .. } | Error::NotFound { .. }) => {}
                        Err(e) => panic!("writer {w}: {e}"),
                    }
                }
                done
            })
        })
        .collect();
    let mut done = 0;
    for w in writers {
        done += w.await.unwrap();
    }
    assert!(done > 1000, "most operations succeeded ({done})");
    let report = store.maintenance::<User>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
    assert!(report.entities > 0 && report.index_entries > 0, "{report}");

    // The indexes answer exactly what the stored entities say.
    let all: Vec<User> = store.query::<User>().fetch().await.unwrap();
    assert_eq!(all.len(), report.entities);
    for u in &all {
        let by_name = store
            .find_unique(User::USERNAME, u.username.clone())
            .await
            .unwrap();
        assert_eq!(by_name.as_ref(), Some(u));
    }
    let names: BTreeSet<&str> = all.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names.len(), all.len(), "no two owners of one username");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_in_the_strings_layout() {
    let server = Target::start();
    let store = server.store().await;
    let writers: Vec<_> = (0..8u64)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ ((w + 11) * 104_729));
                for _ in 0..300 {
                    let id = rng.next() % 10;
                    let r = match rng.next() % 4 {
                        0 | 1 => store
                            .save(&Member {
                                id,
                                nick: rng.pick(NAMES).to_string(),
                                city: rng.pick(COUNTRIES).to_string(),
                            })
                            .await
                            .map(drop),
                        2 => {
                            store
                                .update::<Member>(&id)
                                .set(Member::CITY, rng.pick(COUNTRIES))
                                .exec()
                                .await
                        }
                        _ => store.delete::<Member>(&id).await.map(drop),
                    };
                    match r {
                        Ok(()) | Err(Error::UniqueViolation { .. } | Error::NotFound { .. }) => {}
                        Err(e) => panic!("writer {w}: {e}"),
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let report = store.maintenance::<Member>().verify().await.unwrap();
    assert!(report.is_clean(), "{report}");
}

#[tokio::test]
async fn verify_reports_every_planted_fault_and_repair_fixes_it() {
    let server = Target::start();
    let store = server.store().await;
    let user = |id: u64, name: &str, country: &str| User {
        id,
        username: name.into(),
        country: Some(country.into()),
        tags: BTreeSet::from(["a".to_string()]),
        level: 0,
    };
    store
        .save_all(&[
            user(1, "lisi", "DE"),
            user(2, "wang", "CN"),
            user(3, "anna", "FR"),
        ])
        .await
        .unwrap();
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());

    let mut c = server.conn();
    let k = |key: &str| in_space(&store, key);
    let user_3 = store.keys().of::<User>(3).base;
    if !server.is_cluster() {
        assert_eq!(
            [user_3.as_str(), &k("user:@country:CN")],
            ["user:3", "user:@country:CN"]
        );
    } else {
        assert_eq!(
            [user_3.as_str(), &k("user:@country:CN")],
            ["{user:0}:user:3", "{user:0}:user:@country:CN"]
        );
    }
    // 1. A stale entry: user 1 is not in CN.
    let _: () = c.sadd(k("user:@country:CN"), "1").unwrap();
    // 2. A missing entry: user 2 taken out of its tag set.
    let _: () = c.srem(k("user:@tags:a"), "2").unwrap();
    // 3. A unique key without its owner.
    let _: () = c.set(k("user:@username:ghost"), "77").unwrap();
    // 4. Two owners of one unique value: user 3 renamed behind the framework's back.
    let _: () = c.hset(&user_3, "username", "lisi").unwrap();
    // 5. An id without an entity, and an entity missing from the ids set:
    // integer ids live in buckets of 100 (`user:@ids:xx` holds 0-99).
    let _: () = c.sadd(k("user:@ids:xx"), "88").unwrap();
    let _: () = c.srem(k("user:@ids:xx"), "2").unwrap();
    // 6. An id without an entity in the one set a store written before
    // buckets keeps.
    let _: () = c.sadd(k("user:@ids"), "89").unwrap();

    let report = store.maintenance::<User>().verify().await.unwrap();
    let v = &report.violations;
    let has = |want: &Violation| v.contains(want);
    assert!(
        has(&Violation::StaleEntry {
            key: k("user:@country:CN"),
            member: "1".into()
        }),
        "{report}"
    );
    assert!(
        has(&Violation::MissingEntry {
            key: k("user:@tags:a"),
            member: "2".into()
        }),
        "{report}"
    );
    assert!(
        has(&Violation::StaleEntry {
            key: k("user:@username:ghost"),
            member: "77".into()
        }),
        "{report}"
    );
    assert!(
        has(&Violation::DuplicateUnique {
            key: k("user:@username:lisi"),
            members: vec!["1".into(), "3".into()]
        }),
        "{report}"
    );
    assert!(
        has(&Violation::StaleEntry {
            key: k("user:@username:anna"),
            member: "3".into()
        }),
        "{report}"
    );
    assert!(
        has(&Violation::StaleId {
            member: "88".into()
        }),
        "{report}"
    );
    assert!(
        has(&Violation::MissingId { member: "2".into() }),
        "{report}"
    );
    assert!(
        has(&Violation::StaleId {
            member: "89".into()
        }),
        "{report}"
    );
    assert_eq!(v.len(), 8, "{report}");

    // Repair fixes everything but the duplicate, which needs a decision.
    let repaired = store.maintenance::<User>().repair(&report).await.unwrap();
    assert_eq!(repaired.fixed, 7, "{repaired}");
    assert_eq!(repaired.left.len(), 1, "{repaired}");
    assert!(
        matches!(
            repaired.left[0].violation,
            Violation::DuplicateUnique { .. }
        ),
        "{repaired}"
    );
    assert!(repaired.left[0].reason.contains("decide"), "{repaired}");
    let after = store.maintenance::<User>().verify().await.unwrap();
    assert_eq!(
        after.violations,
        vec![Violation::DuplicateUnique {
            key: k("user:@username:lisi"),
            members: vec!["1".into(), "3".into()]
        }],
        "{after}"
    );
    // The ids are where they belong: 2 back in its bucket, 88 and 89 gone.
    let bucket: Vec<String> = c.smembers(k("user:@ids:xx")).unwrap();
    assert!(bucket.contains(&"2".to_owned()) && !bucket.contains(&"88".to_owned()));
    let one: Vec<String> = c.smembers(k("user:@ids")).unwrap();
    assert!(!one.contains(&"89".to_owned()), "{one:?}");
    let _: () = c.hset(&user_3, "username", "anna").unwrap();
    let report = store.maintenance::<User>().verify().await.unwrap();
    store.maintenance::<User>().repair(&report).await.unwrap();
    assert!(store
        .maintenance::<User>()
        .verify()
        .await
        .unwrap()
        .is_clean());
}

#[test]
fn blocking_verify_and_repair() {
    let server = Target::start();
    let store = redis_entity::blocking::Store::builder()
        .connect_any(&server.url())
        .unwrap();
    blocking_verify_and_repair_on(&server, &store);
}

fn blocking_verify_and_repair_on<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    server: &Target,
    store: &redis_entity::blocking::Store<C>,
) {
    let members: Vec<Member> = (0..1200)
        .map(|id| Member {
            id,
            nick: format!("n{id}"),
            city: ["DE", "CN"][(id % 2) as usize].to_string(),
        })
        .collect();
    store.save_all(&members).unwrap();
    let report = store.maintenance::<Member>().verify().unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(
        report.entities, 1200,
        "more than one SCAN page and read chunk"
    );
    assert_eq!(report.index_entries, 2400);
    // `member:@city:DE` in the space of `Member`'s one shard.
    let space = space(&store.keys().of::<Member>(4).base, &Member::key(&4));
    let de = format!("{space}member:@city:DE");
    if !server.is_cluster() {
        assert_eq!(de, "member:@city:DE");
    } else {
        assert_eq!(de, "{member:0}:member:@city:DE");
    }
    let removed: u64 = server.conn().srem(&de, 4).unwrap();
    assert_eq!(removed, 1, "member 4 was listed in {de}");
    let _: () = server.conn().sadd(&de, 5).unwrap();
    let report = store.maintenance::<Member>().verify().unwrap();
    assert_eq!(report.violations.len(), 2, "{report}");
    assert_eq!(
        store.maintenance::<Member>().repair(&report).unwrap().fixed,
        2
    );
    assert!(store.maintenance::<Member>().verify().unwrap().is_clean());
}
