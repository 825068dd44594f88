use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[version]
    version: u64,
}

#[derive(RedisEntity)]
#[redis(layout = "json")]
struct Legacy {
    #[pk]
    id: u64,
    #[index]
    country: String,
}

#[derive(RedisEntity)]
struct Tagged {
    #[pk]
    id: u64,
    #[index]
    tags: Option<Vec<String>>,
    #[index]
    #[redis(json)]
    other: Vec<String>,
}

fn main() {}
