use redis_entity::RedisEntity;
use std::collections::BTreeSet;

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[index(sorted)]
    name: String,
    #[index(prefix)]
    age: u32,
    #[index(unique)]
    tags: BTreeSet<String>,
    #[index]
    weight: f64,
}

fn main() {}
