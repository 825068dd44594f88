use redis_entity::RedisEntity;

// `#[redis(tags)]` stores a collection as a tag list: not a scalar, not an
// `Option`, not together with `json`.
#[derive(RedisEntity)]
struct Book {
    #[pk]
    id: u64,
    #[redis(tags)]
    title: String,
    #[redis(tags)]
    maybe: Option<Vec<String>>,
    #[redis(tags, json)]
    both: Vec<String>,
    #[redis(tags)]
    fine: Vec<String>,
}

fn main() {}
