use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct Score {
    #[pk]
    value: f64,
    #[pk]
    #[redis(rename = "x")]
    other: Option<u64>,
}

fn main() {}
