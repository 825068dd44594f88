use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct Score {
    #[pk]
    value: f64,
    #[pk]
    #[redis(rename = "x")]
    other: Option<u64>,
}

#[derive(RedisEntity)]
struct Padded {
    #[pk]
    #[redis(pad = 10)]
    #[index(unique)]
    code: String,
    #[redis(pad = 3)]
    other: u64,
}

fn main() {}
