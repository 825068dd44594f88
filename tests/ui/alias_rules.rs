use redis_entity::RedisEntity;

// `alias` names a hash field's old stored name.
#[derive(RedisEntity)]
struct Hashed {
    #[pk]
    #[redis(alias = "ident")]
    id: u64,
    #[redis(alias = "title")]
    name: String,
    title: String,
    #[redis(alias = "body")]
    body: String,
    #[redis(alias = "color")]
    colour: String,
}

#[derive(RedisEntity)]
#[redis(layout = "strings")]
struct Strings {
    #[pk]
    id: u64,
    #[redis(alias = "old")]
    new: String,
}

fn main() {}
