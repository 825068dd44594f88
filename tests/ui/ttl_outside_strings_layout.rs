use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[redis(ttl = 60)]
    code: Option<String>,
}

#[derive(RedisEntity)]
#[redis(layout = "strings")]
struct Required {
    #[pk]
    id: u64,
    #[redis(ttl = 60)]
    code: String,
}

fn main() {}
