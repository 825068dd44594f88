use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[version]
    version: u64,
}

fn main() {}
