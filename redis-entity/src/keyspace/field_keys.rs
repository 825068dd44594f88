//! The index keys of a field handle (`User::USERNAME.key("lisi")`), spelled
//! here rather than in the schema, which knows no key.

use super::{index_key, index_zset};
use crate::schema::codec::to_bytes;
use crate::schema::entity::Entity;
use crate::schema::escape::escape_bytes_into;
use crate::schema::field::{Field, Prefix, Sorted, ValueKeyed};

impl<E: Entity, T, C, K: ValueKeyed, N> Field<E, T, C, K, N> {
    /// The index key of `value` in the standalone layout without namespace
    /// (users by username: `user:@username:lisi`): `User::USERNAME.key("lisi")`.
    /// The `@` marks the type's own families, which no entity key can spell.
    ///
    /// ```
    /// # use redis_entity::RedisEntity;
    /// #[derive(RedisEntity)]
    /// #[redis(prefix = "user")]
    /// struct User {
    ///     #[pk]
    ///     id: u64,
    ///     #[index(unique)]
    ///     username: String,
    /// }
    /// assert_eq!(User::USERNAME.key("lisi"), "user:@username:lisi");
    /// assert_eq!(User::USERNAME.key("a:b"), "user:@username:a%3Ab");
    /// ```
    pub fn key(&self, value: impl Into<K::Value>) -> String {
        let mut escaped = Vec::new();
        escape_bytes_into(&mut escaped, &to_bytes(&value.into()));
        let key = index_key(E::DESC, &Default::default(), self.name(), &escaped);
        String::from_utf8_lossy(&key).into_owned()
    }
}

impl<E: Entity, T, C, X, N> Field<E, T, C, Sorted<X>, N> {
    /// The sorted set of this sorted index, in the standalone layout without
    /// namespace (`player:@score`).
    pub fn key(&self) -> String {
        index_zset(E::DESC, &Default::default(), self.name())
    }
}

impl<E: Entity, T, C, X, N> Field<E, T, C, Prefix<X>, N> {
    /// The sorted set of this prefix index, without namespace.
    pub fn key(&self) -> String {
        index_zset(E::DESC, &Default::default(), self.name())
    }
}
