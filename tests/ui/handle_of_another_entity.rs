use redis_entity::{RedisEntity, Store};

#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    email: String,
}

#[derive(RedisEntity)]
struct Book {
    #[pk]
    id: u64,
    title: String,
}

async fn wrong(store: Store) {
    // A Book field in a User update does not compile.
    let _ = store.update::<User>(&1).set(Book::TITLE, "x").exec().await;
}

fn main() {}
