//! Security users: multi-condition and "starts with" queries that the key-pattern approach answers
//! by building keys such as `SU1_县级单位_wangwu_0000000035` and matching
//! them with KEYS patterns. Here the fields are indexed instead; the pk keeps
//! the legacy zero-padded id. Run: `cargo run --example pattern_query`.

use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "SU1")]
pub struct SecurityUser {
    #[pk]
    #[redis(pad = 10)]
    pub id: u64,
    #[index]
    pub unit_type: String,
    #[index(prefix)]
    pub user_name: String,
    pub real_name: String,
}

pub fn users() -> Vec<SecurityUser> {
    let u = |id, unit: &str, name: &str, real: &str| SecurityUser {
        id,
        unit_type: unit.into(),
        user_name: name.into(),
        real_name: real.into(),
    };
    vec![
        u(35, "县级单位", "wangwu", "王五"),
        u(36, "县级单位", "wangxiao", "王小"),
        u(37, "市级单位", "wangwu2", "王五二"),
        u(38, "市级单位", "lisi", "李四"),
        u(39, "县级单位", "张三", "张三"),
        u(40, "县级单位", "张三丰", "张三丰"),
    ]
}

fn ids(users: &[SecurityUser]) -> Vec<u64> {
    users.iter().map(|u| u.id).collect()
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== pattern_query: multi-condition and prefix queries without KEYS");
    let store = Store::builder().connect_any(url).await?;
    println!("{}", SecurityUser::layout());
    store.save_all(&users()).await?;
    println!(
        "save_all(6 users)       -> keys {:?}",
        store.keys().scan("SU1:[0-9]*").await?
    );

    // with key patterns: KEYS SU1_县级单位_wangwu_*      (both conditions)
    let both = store
        .query::<SecurityUser>()
        .eq(SecurityUser::UNIT_TYPE, "县级单位")
        .eq(SecurityUser::USER_NAME, "wangwu")
        .fetch()
        .await?;
    println!("unit 县级单位, name wangwu -> {:?}", ids(&both));

    // with key patterns: KEYS SU1_县级单位_*             (one condition)
    let unit = store.find(SecurityUser::UNIT_TYPE, "县级单位").await?;
    println!("unit 县级单位              -> {:?}", ids(&unit));

    // with key patterns: KEYS SU1_*_wang*_*              (starts with, any unit)
    let wang = store
        .query::<SecurityUser>()
        .prefix(SecurityUser::USER_NAME, "wang")
        .fetch()
        .await?;
    println!("name starts with wang     -> {:?}", ids(&wang));

    // Chinese prefixes work the same: UTF-8 byte order is code point order.
    let zhang = store
        .query::<SecurityUser>()
        .eq(SecurityUser::UNIT_TYPE, "县级单位")
        .prefix(SecurityUser::USER_NAME, "张三")
        .fetch()
        .await?;
    println!("县级单位, name starts 张三 -> {:?}", ids(&zhang));

    // Page through in id order (the zero-padded ids also sort as text).
    let page = store.query::<SecurityUser>().limit(2, 2).ids().await?;
    println!("all users, page 2 of 2    -> {page:?}");

    // with key patterns: delete by the unique id part of the key (`*39`)
    store.delete::<SecurityUser>(&39).await?;
    let zhang = store
        .query::<SecurityUser>()
        .prefix(SecurityUser::USER_NAME, "张")
        .ids()
        .await?;
    println!("delete 39, starts with 张 -> {zhang:?}\n");
    for u in users() {
        store.delete::<SecurityUser>(&u.id).await?;
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
