use redis_entity::relation::Relation;
use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    name: String,
}

#[derive(RedisEntity)]
struct Post {
    #[pk]
    id: String,
    text: String,
}

const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
const WROTE: Relation<User, Post> = Relation::one_to_many("posts", "author");

async fn wrong(store: Store) {
    // A post's pk where a user's is expected.
    let _ = store.relation(&WROTE).relate(&String::from("p1"), &String::from("p2")).await;
    // Mutual follows exist only for a relation of a type to itself.
    let _ = store.relation(&WROTE).mutual(&1).await;
    let _ = store.relation(&FOLLOWS).relate(&1, &2).await;
}

fn main() {}
