use redis_entity::RedisEntity;

struct Dimensions {
    width: u32,
    height: u32,
}

// Every field of the `json` layout is one JSON value: its type needs serde's
// derives, and the error says so once.
#[derive(RedisEntity)]
#[redis(layout = "json")]
struct Product {
    #[pk]
    id: u64,
    name: String,
    dims: Dimensions,
    spare: Option<Dimensions>,
}

fn main() {}
