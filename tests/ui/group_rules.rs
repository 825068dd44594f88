// A group is one slot on a cluster: its types have one shard; a group's
// name is a plain name.
use redis_entity::RedisEntity;

#[derive(RedisEntity)]
#[redis(group = "social", shards = 4)]
struct Spread {
    #[pk]
    id: u64,
}

#[derive(RedisEntity)]
#[redis(group = "a:b")]
struct Named {
    #[pk]
    id: u64,
}

fn main() {}
