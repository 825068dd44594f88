use redis_entity::RedisEntity;

#[derive(RedisEntity)]
#[redis(layout = "json")]
struct Legacy {
    #[pk]
    id: u64,
    #[index]
    country: String,
    #[version]
    version: u64,
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
    #[version]
    version: String,
    #[version]
    #[redis(default)]
    second: u32,
}

fn main() {}
