use redis_entity::RedisEntity;

#[derive(RedisEntity)]
#[redis(key = "user:{id}:{name}")]
struct User {
    #[pk]
    id: u64,
    name: String,
}

fn main() {}
