use redis_entity::RedisEntity;

#[derive(RedisEntity)]
#[redis(key = "red_package:{program_id}_{uid}")]
struct RedPackage {
    #[pk]
    program_id: u64,
    #[pk]
    task_id: u64,
    #[pk]
    uid: u64,
    status: u8,
}

fn main() {}
