//! Types at the edge of what the straight-line write covers (Lua 5.1 allows
//! a function 200 locals and 250 registers; `covers` in script/fast.rs keeps
//! a budget below both): a type of 64 columns with 4 unique indexes and one
//! of 15 unique indexes load their generated functions and write and read
//! back, and one of 20 unique indexes, past the budget, writes through the
//! general code (one server: it reads the server's libraries). Each library must load: a generated function past Lua's
//! limits would fail `FUNCTION LOAD` and with it every write of the type.

use redis_entity::{RedisEntity, Store};
use support::RedisServer;

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "wide")]
struct Wide {
    #[pk]
    id: u64,
    #[index(unique)]
    c0: String,
    #[index(unique)]
    c1: String,
    #[index(unique)]
    c2: String,
    #[index(unique)]
    c3: String,
    c4: i64,
    c5: i64,
    c6: i64,
    c7: i64,
    c8: i64,
    c9: i64,
    c10: i64,
    c11: i64,
    c12: i64,
    c13: i64,
    c14: i64,
    c15: i64,
    c16: i64,
    c17: i64,
    c18: i64,
    c19: i64,
    c20: i64,
    c21: i64,
    c22: i64,
    c23: i64,
    c24: i64,
    c25: i64,
    c26: i64,
    c27: i64,
    c28: i64,
    c29: i64,
    c30: i64,
    c31: i64,
    c32: i64,
    c33: i64,
    c34: i64,
    c35: i64,
    c36: i64,
    c37: i64,
    c38: i64,
    c39: i64,
    c40: i64,
    c41: i64,
    c42: i64,
    c43: i64,
    c44: i64,
    c45: i64,
    c46: i64,
    c47: i64,
    c48: i64,
    c49: i64,
    c50: i64,
    c51: i64,
    c52: i64,
    c53: i64,
    c54: i64,
    c55: i64,
    c56: i64,
    c57: i64,
    c58: i64,
    c59: i64,
    c60: i64,
    c61: i64,
    c62: i64,
    c63: i64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "many")]
struct Many {
    #[pk]
    id: u64,
    #[index(unique)]
    u0: String,
    #[index(unique)]
    u1: String,
    #[index(unique)]
    u2: String,
    #[index(unique)]
    u3: String,
    #[index(unique)]
    u4: String,
    #[index(unique)]
    u5: String,
    #[index(unique)]
    u6: String,
    #[index(unique)]
    u7: String,
    #[index(unique)]
    u8: String,
    #[index(unique)]
    u9: String,
    #[index(unique)]
    u10: String,
    #[index(unique)]
    u11: String,
    #[index(unique)]
    u12: String,
    #[index(unique)]
    u13: String,
    #[index(unique)]
    u14: String,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(prefix = "beyond")]
struct Beyond {
    #[pk]
    id: u64,
    #[index(unique)]
    u0: String,
    #[index(unique)]
    u1: String,
    #[index(unique)]
    u2: String,
    #[index(unique)]
    u3: String,
    #[index(unique)]
    u4: String,
    #[index(unique)]
    u5: String,
    #[index(unique)]
    u6: String,
    #[index(unique)]
    u7: String,
    #[index(unique)]
    u8: String,
    #[index(unique)]
    u9: String,
    #[index(unique)]
    u10: String,
    #[index(unique)]
    u11: String,
    #[index(unique)]
    u12: String,
    #[index(unique)]
    u13: String,
    #[index(unique)]
    u14: String,
    #[index(unique)]
    u15: String,
    #[index(unique)]
    u16: String,
    #[index(unique)]
    u17: String,
    #[index(unique)]
    u18: String,
    #[index(unique)]
    u19: String,
}

fn wide(id: u64, tag: &str) -> Wide {
    Wide {
        id,
        c0: format!("{tag}-0-{id}"),
        c1: format!("{tag}-1-{id}"),
        c2: format!("{tag}-2-{id}"),
        c3: format!("{tag}-3-{id}"),
        c4: 4 + id as i64,
        c5: 5 + id as i64,
        c6: 6 + id as i64,
        c7: 7 + id as i64,
        c8: 8 + id as i64,
        c9: 9 + id as i64,
        c10: 10 + id as i64,
        c11: 11 + id as i64,
        c12: 12 + id as i64,
        c13: 13 + id as i64,
        c14: 14 + id as i64,
        c15: 15 + id as i64,
        c16: 16 + id as i64,
        c17: 17 + id as i64,
        c18: 18 + id as i64,
        c19: 19 + id as i64,
        c20: 20 + id as i64,
        c21: 21 + id as i64,
        c22: 22 + id as i64,
        c23: 23 + id as i64,
        c24: 24 + id as i64,
        c25: 25 + id as i64,
        c26: 26 + id as i64,
        c27: 27 + id as i64,
        c28: 28 + id as i64,
        c29: 29 + id as i64,
        c30: 30 + id as i64,
        c31: 31 + id as i64,
        c32: 32 + id as i64,
        c33: 33 + id as i64,
        c34: 34 + id as i64,
        c35: 35 + id as i64,
        c36: 36 + id as i64,
        c37: 37 + id as i64,
        c38: 38 + id as i64,
        c39: 39 + id as i64,
        c40: 40 + id as i64,
        c41: 41 + id as i64,
        c42: 42 + id as i64,
        c43: 43 + id as i64,
        c44: 44 + id as i64,
        c45: 45 + id as i64,
        c46: 46 + id as i64,
        c47: 47 + id as i64,
        c48: 48 + id as i64,
        c49: 49 + id as i64,
        c50: 50 + id as i64,
        c51: 51 + id as i64,
        c52: 52 + id as i64,
        c53: 53 + id as i64,
        c54: 54 + id as i64,
        c55: 55 + id as i64,
        c56: 56 + id as i64,
        c57: 57 + id as i64,
        c58: 58 + id as i64,
        c59: 59 + id as i64,
        c60: 60 + id as i64,
        c61: 61 + id as i64,
        c62: 62 + id as i64,
        c63: 63 + id as i64,
    }
}

fn many(id: u64, tag: &str) -> Many {
    Many {
        id,
        u0: format!("{tag}-0-{id}"),
        u1: format!("{tag}-1-{id}"),
        u2: format!("{tag}-2-{id}"),
        u3: format!("{tag}-3-{id}"),
        u4: format!("{tag}-4-{id}"),
        u5: format!("{tag}-5-{id}"),
        u6: format!("{tag}-6-{id}"),
        u7: format!("{tag}-7-{id}"),
        u8: format!("{tag}-8-{id}"),
        u9: format!("{tag}-9-{id}"),
        u10: format!("{tag}-10-{id}"),
        u11: format!("{tag}-11-{id}"),
        u12: format!("{tag}-12-{id}"),
        u13: format!("{tag}-13-{id}"),
        u14: format!("{tag}-14-{id}"),
    }
}

fn beyond(id: u64, tag: &str) -> Beyond {
    Beyond {
        id,
        u0: format!("{tag}-0-{id}"),
        u1: format!("{tag}-1-{id}"),
        u2: format!("{tag}-2-{id}"),
        u3: format!("{tag}-3-{id}"),
        u4: format!("{tag}-4-{id}"),
        u5: format!("{tag}-5-{id}"),
        u6: format!("{tag}-6-{id}"),
        u7: format!("{tag}-7-{id}"),
        u8: format!("{tag}-8-{id}"),
        u9: format!("{tag}-9-{id}"),
        u10: format!("{tag}-10-{id}"),
        u11: format!("{tag}-11-{id}"),
        u12: format!("{tag}-12-{id}"),
        u13: format!("{tag}-13-{id}"),
        u14: format!("{tag}-14-{id}"),
        u15: format!("{tag}-15-{id}"),
        u16: format!("{tag}-16-{id}"),
        u17: format!("{tag}-17-{id}"),
        u18: format!("{tag}-18-{id}"),
        u19: format!("{tag}-19-{id}"),
    }
}

/// The code of every function library the server holds.
fn library_code(server: &RedisServer) -> String {
    let libs: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("WITHCODE")
        .query(&mut server.conn())
        .unwrap();
    format!("{libs:?}")
}

#[tokio::test]
async fn types_at_the_edge_of_the_straight_line_write_load_and_write() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url()).await.unwrap();
    store.save(&wide(1, "a")).await.unwrap();
    store.save(&wide(1, "b")).await.unwrap();
    store.save(&wide(2, "a")).await.unwrap();
    store.save(&many(1, "a")).await.unwrap();
    store.save(&many(1, "b")).await.unwrap();
    store.save(&beyond(1, "a")).await.unwrap();
    store.save(&beyond(1, "b")).await.unwrap();
    assert_eq!(store.get::<Wide>(1).await.unwrap(), Some(wide(1, "b")));
    assert_eq!(store.get::<Many>(1).await.unwrap(), Some(many(1, "b")));
    assert_eq!(store.get::<Beyond>(1).await.unwrap(), Some(beyond(1, "b")));
    // The unique indexes moved with the values.
    assert_eq!(
        store.find_unique(Wide::C3, "b-3-1").await.unwrap(),
        Some(wide(1, "b"))
    );
    assert_eq!(store.find_unique(Wide::C3, "a-3-1").await.unwrap(), None);
    assert_eq!(
        store.find_unique(Many::U14, "b-14-1").await.unwrap(),
        Some(many(1, "b"))
    );
    assert_eq!(
        store.find_unique(Beyond::U19, "b-19-1").await.unwrap(),
        Some(beyond(1, "b"))
    );
    // An update of one column and an increment of another.
    store
        .update::<Wide>(2)
        .set(Wide::C0, "z".to_string())
        .incr(Wide::C63, 10)
        .exec()
        .await
        .unwrap();
    let w = store.get::<Wide>(2).await.unwrap().unwrap();
    assert_eq!((w.c0.as_str(), w.c63), ("z", 63 + 2 + 10));
    // The covered types' libraries hold their straight-line functions; the
    // one past the budget's does not.
    let code = library_code(&server);
    assert!(code.contains("The common write of Wide in straight-line code"));
    assert!(code.contains("The common write of Many in straight-line code"));
    assert!(!code.contains("The common write of Beyond in straight-line code"));
    for report in [
        store.maintenance::<Wide>().verify().await.unwrap(),
        store.maintenance::<Many>().verify().await.unwrap(),
        store.maintenance::<Beyond>().verify().await.unwrap(),
    ] {
        assert!(report.is_clean(), "{report:?}");
    }
}
