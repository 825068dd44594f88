use redis_entity::RedisEntity;

#[derive(RedisEntity)]
enum Shape {
    Circle,
}

#[derive(RedisEntity)]
struct Pair(u64, String);

fn main() {}
