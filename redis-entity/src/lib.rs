//! # redis-entity
//!
//! Map Rust structs to Redis with a derive. `#[derive(RedisEntity)]` generates
//! the key layout, checks it at compile time, and a small runtime executes every
//! write of one entity as one atomic script call in one round trip.
//!
//! ```no_run
//! use redis_entity::{RedisEntity, Store};
//! use std::collections::BTreeMap;
//!
//! #[derive(RedisEntity, Debug, Clone, PartialEq)]
//! #[redis(prefix = "user")]
//! struct User {
//!     #[pk]
//!     id: u64,
//!     username: String,
//!     email: Option<String>,
//!     level: i64,
//!     #[hash]
//!     settings: BTreeMap<String, String>, // its own hash: user:{9}:settings
//! }
//!
//! # async fn run() -> redis_entity::Result<()> {
//! let store = Store::connect("redis://127.0.0.1/").await?;
//! let lisi = User { id: 9, username: "lisi".into(), email: None, level: 1, settings: BTreeMap::new() };
//! store.save(&lisi).await?;                                       // HSET user:{9} username lisi level 1
//! store.update::<User>(&9).incr(User::LEVEL, 1).exec().await?;   // HINCRBY user:{9} level 1
//! assert_eq!(store.get::<User>(&9).await?.unwrap().level, 2);
//! println!("{}", User::layout());                                 // every key family and its type
//! # Ok(()) }
//! ```
//!
//! See `docs/key-layout.md` in the repository for the key rules.

#![warn(missing_docs)]

pub mod admin;
pub mod blocking;
pub mod board;
pub mod cache;
pub mod codec;
mod conn;
mod entity;
mod error;
mod field;
pub mod key;
mod keyspace;
mod layout;
pub mod migrate;
mod plan;
pub mod query;
pub mod relation;
mod script;
mod store;
mod update;
pub mod verify;

pub use cache::{Cache, CacheOptions};
pub use conn::{CountingConnection, RoundTrips};
pub use entity::{
    ColumnDesc, Entity, EntityDesc, IndexDesc, IndexKind, IndexSource, Layout, MapDesc, Row,
};
pub use error::{Error, FieldError, FieldErrorKind, Result};
pub use field::{
    AllowsIncr, Assign, Equality, Field, HashField, Incrementable, NoIndex, Prefix, PrefixIndex,
    SetIndex, Sorted, SortedIndex, Tags, Unique, ValueKeyed,
};
pub use key::{KeyPart, Namespace, PaddedKeyPart};
pub use keyspace::EntityKeys;
pub use layout::{EntityLayout, KeyPattern, RedisType, Registry};
pub use plan::UpdateOp;
pub use store::Store;
pub use update::Update;

/// `#[derive(RedisEntity)]`: see the crate docs and `docs/key-layout.md`.
#[cfg(feature = "derive")]
pub use redis_entity_derive::RedisEntity;

/// The paths generated code uses. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::codec::SortScore;
    pub use crate::codec::{
        decode_map, to_bytes, Defaulted, FieldCodec, Json, JsonOptional, MapField, Optional,
        PkPart, Plain, TagList,
    };
    pub use crate::entity::{
        ColumnDesc, Entity, EntityDesc, IndexDesc, IndexKind, IndexSource, Layout, MapDesc, Row,
    };
    pub use crate::error::{FieldError, Result};
    pub use crate::field::{Equality, Field, HashField, NoIndex, Prefix, Sorted, Tags, Unique};
    pub use crate::key::{KeyPart, PaddedKeyPart};
    pub use crate::layout::EntityLayout;
    pub use ::core;
    pub use ::std::string::String;
    pub use ::std::vec::Vec;

    /// Takes the next column value out of a row being decoded.
    pub fn take(columns: &mut ::std::vec::IntoIter<Option<Vec<u8>>>) -> Option<Vec<u8>> {
        columns.next().flatten()
    }
}
