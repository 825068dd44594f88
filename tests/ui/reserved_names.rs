// Names the runtime keeps for itself: an index stored as `ids` or `expiry`
// would share the type's `@ids` / `@expiry` key; a stored name starting
// with `@` could be `@shadow` or `@rel`; `@` in a template or prefix could
// spell an index family.
use redis_entity::RedisEntity;

#[derive(RedisEntity)]
struct Ticket {
    #[pk]
    id: u64,
    #[index(sorted)]
    expiry: i64,
    #[redis(rename = "@rel")]
    note: String,
}

#[derive(RedisEntity)]
#[redis(prefix = "a@b")]
struct Marked {
    #[pk]
    id: u64,
}

#[derive(RedisEntity)]
#[redis(key = "user:@x:{id}")]
struct Templated {
    #[pk]
    id: u64,
}

fn main() {}
