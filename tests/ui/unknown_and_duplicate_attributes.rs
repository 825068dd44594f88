use redis_entity::RedisEntity;

#[derive(RedisEntity)]
#[redis(prefix = "user", prefx = "typo", layout = "table")]
struct User {
    #[pk]
    #[pk]
    id: u64,
    #[redis(json, json)]
    name: String,
    #[redis(renam = "n")]
    nick: String,
    #[index(fulltext)]
    bio: String,
}

fn main() {}
