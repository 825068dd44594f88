use redis_entity::relation::{Relation, Timeline};
use redis_entity::RedisEntity;
use std::collections::BTreeMap;

/// One string key per column: `user:9:following` is the column's key.
#[derive(RedisEntity)]
#[redis(layout = "strings")]
struct User {
    #[pk]
    id: u64,
    following: u64,
    #[hash]
    settings: BTreeMap<String, String>,
}

// The relation set `user:9:following` would be the column's key.
const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
// The timeline `user:9:settings` would be the #[hash] field's key.
const FEED: Timeline<User, User> = Timeline::new("settings", 100);

fn main() {
    let _ = (FOLLOWS, FEED);
}
