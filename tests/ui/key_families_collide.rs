use redis_entity::RedisEntity;
use std::collections::BTreeMap;

// In the strings layout, columns and #[hash] fields both live at
// `<entity key>:<name>`: two fields stored under one name would share a key.
#[derive(RedisEntity)]
#[redis(layout = "strings")]
struct User {
    #[pk]
    id: u64,
    settings_json: String,
    #[hash]
    #[redis(rename = "settings_json")]
    settings: BTreeMap<String, String>,
}

fn main() {}
