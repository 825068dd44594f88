// `Entity` is implemented by the derive only: a hand-written implementation
// is refused, with the fix in the message.
use redis_entity::Entity;

struct Legacy {
    id: u64,
}

impl Entity for Legacy {
    type Pk = u64;
}

fn main() {
    let _ = Legacy { id: 1 }.id;
}
