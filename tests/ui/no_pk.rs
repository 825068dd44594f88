use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct User {
    id: u64,
    name: String,
}

fn main() {}
