//! Users by pk: the user table stored one string key per
//! column (`user:userid:9:username`) and as one hash per user. Runs on one
//! server, and with `scripts/test.sh --cluster` on a 3-master cluster, where
//! the same keys carry a hash tag (`user:userid:{9}:username`).

use redis::Commands;
use redis_entity::{Error, RedisEntity};
use support::Target;

/// Users by pk and by username, as one string key per column: `set
/// user:userid:9:username lisi` and so on.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{id}")]
struct User {
    #[pk]
    id: u64,
    username: String,
    password: String,
    email: Option<String>,
}

/// The same table as one hash per user.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "user")]
struct UserRow {
    #[pk]
    id: u64,
    username: String,
    password: String,
    email: Option<String>,
}

fn lisi() -> User {
    User {
        id: 9,
        username: "lisi".into(),
        password: "111111".into(),
        email: Some("lisi@example.com".into()),
    }
}

#[tokio::test]
async fn strings_layout_writes_the_seed_keys_and_reads_them_back() {
    let server = Target::start();
    let store = server.store().await;
    assert!(store.save(&lisi()).await.unwrap(), "first save creates");

    let keys = store.keys().of::<User>(9);
    let mut columns = keys.columns.clone();
    columns.sort();
    assert_eq!(server.keys(), columns);
    if !server.is_cluster() {
        assert_eq!(
            columns,
            [
                "user:userid:9:email",
                "user:userid:9:password",
                "user:userid:9:username"
            ]
        );
    } else {
        assert_eq!(keys.columns[0], "user:userid:{9}:username");
    }
    let mut c = server.conn();
    let name: String = c.get(&keys.columns[0]).unwrap();
    assert_eq!(name, "lisi");
    let password: String = c.get(&keys.columns[1]).unwrap();
    assert_eq!(password, "111111");

    assert_eq!(store.get::<User>(&9).await.unwrap(), Some(lisi()));
    assert_eq!(store.get::<User>(&10).await.unwrap(), None);
    assert!(store.exists::<User>(&9).await.unwrap());
    assert!(!store.exists::<User>(&10).await.unwrap());
    assert_eq!(User::key(&9), "user:userid:9");
}

#[tokio::test]
async fn strings_layout_removes_the_column_of_a_none_field() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&lisi()).await.unwrap();
    let mut no_mail = lisi();
    no_mail.email = None;
    assert!(!store.save(&no_mail).await.unwrap(), "second save updates");
    let mut columns = store.keys().of::<User>(9).columns[..2].to_vec();
    columns.sort();
    assert_eq!(server.keys(), columns, "username and password left");
    assert_eq!(store.get::<User>(&9).await.unwrap(), Some(no_mail));
}

#[tokio::test]
async fn hash_layout_keeps_a_user_in_one_hash() {
    let server = Target::start();
    let store = server.store().await;
    let row = UserRow {
        id: 9,
        username: "lisi".into(),
        password: "111111".into(),
        email: None,
    };
    store.save(&row).await.unwrap();
    let key = store.keys().of::<UserRow>(9).base;
    assert_eq!(
        key,
        if server.is_cluster() {
            "user:{9}"
        } else {
            "user:9"
        }
    );
    assert_eq!(server.keys(), std::slice::from_ref(&key));
    let stored: Vec<(String, String)> = server.conn().hgetall(&key).unwrap();
    let mut stored = stored;
    stored.sort();
    assert_eq!(
        stored,
        [
            ("password".to_string(), "111111".to_string()),
            ("username".to_string(), "lisi".to_string())
        ]
    );
    assert_eq!(store.get::<UserRow>(&9).await.unwrap(), Some(row));
}

#[tokio::test]
async fn insert_refuses_a_taken_key_and_changes_nothing() {
    let server = Target::start();
    let store = server.store().await;
    store.insert(&lisi()).await.unwrap();
    let mut other = lisi();
    other.username = "zhangsan".into();
    let err = store.insert(&other).await.unwrap_err();
    assert!(
        matches!(&err, Error::AlreadyExists { key } if *key == store.keys().of::<User>(9).base),
        "{err:?}"
    );
    assert_eq!(store.get::<User>(&9).await.unwrap(), Some(lisi()));
}

#[tokio::test]
async fn delete_removes_every_key_and_reports_whether_there_was_one() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&lisi()).await.unwrap();
    assert!(store.delete::<User>(&9).await.unwrap());
    assert!(server.keys().is_empty());
    assert!(!store.delete::<User>(&9).await.unwrap());
    assert_eq!(store.get::<User>(&9).await.unwrap(), None);
}

#[tokio::test]
async fn get_many_returns_in_order_with_gaps() {
    let server = Target::start();
    let store = server.store().await;
    let users: Vec<User> = (1..=3)
        .map(|id| User {
            id,
            username: format!("u{id}"),
            ..lisi()
        })
        .collect();
    store.save_all(&users).await.unwrap();
    let got = store.get_many::<User>(&[3, 7, 1]).await.unwrap();
    assert_eq!(
        got,
        vec![Some(users[2].clone()), None, Some(users[0].clone())]
    );
    assert!(store.get_many::<User>(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn update_changes_columns_without_reading_and_fails_on_missing() {
    let server = Target::start();
    let store = server.store().await;
    store.save(&lisi()).await.unwrap();
    store
        .update::<User>(&9)
        .set(User::PASSWORD, "222222")
        .set(User::EMAIL, None)
        .exec()
        .await
        .unwrap();
    let u = store.get::<User>(&9).await.unwrap().unwrap();
    assert_eq!(u.password, "222222");
    assert_eq!(u.email, None);
    assert!(!server
        .keys()
        .contains(&store.keys().of::<User>(9).columns[2]));

    let err = store
        .update::<User>(&10)
        .set(User::PASSWORD, "x")
        .exec()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert_eq!(
        server.keys().len(),
        2,
        "nothing written for the missing user"
    );
}
