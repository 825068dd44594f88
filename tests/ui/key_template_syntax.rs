use redis_entity::RedisEntity;

#[derive(RedisEntity)]
#[redis(key = "user:{a}{b}")]
struct Adjacent {
    #[pk]
    a: u64,
    #[pk]
    b: u64,
}

#[derive(RedisEntity)]
#[redis(key = "user:*:{id}")]
struct Glob {
    #[pk]
    id: u64,
}

#[derive(RedisEntity)]
#[redis(key = "{id}:user")]
struct NoPrefix {
    #[pk]
    id: u64,
}

fn main() {}
