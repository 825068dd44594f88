use redis_entity::RedisEntity;
use std::collections::HashMap;

#[derive(RedisEntity)]
struct Book {
    #[pk]
    id: u64,
    tags: Vec<String>,
    meta: HashMap<String, String>,
}

fn main() {}
