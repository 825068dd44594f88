use redis_entity::{RedisEntity, Store};

// One misspelt attribute: the derive reports it and still emits the field
// handles, `key()` and an `impl Entity`, so the uses below add no errors.
#[derive(RedisEntity)]
struct User {
    #[pk]
    id: u64,
    #[index(unique)]
    username: String,
    #[redis(renam = "n")]
    nick: String,
}

async fn uses(store: Store) {
    let _ = store.find_unique(User::USERNAME, "lisi").await;
    let _ = store.get::<User>(&1).await;
    let _ = store.update::<User>(&1).set(User::NICK, "x").exec().await;
    let _ = User::key(&1);
    let _ = User::layout();
}

// The stub's description is evaluated at compile time here, as `cargo build`
// evaluates it for `layout()`: it must be a value, not a panic.
const _: usize = <User as redis_entity::Entity>::DESC.columns.len();

fn main() {}
