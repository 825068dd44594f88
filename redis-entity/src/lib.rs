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

//! ## The public surface
//!
//! - [`Store`] (async) and [`blocking::Store`]: connect, CRUD, `save_all`,
//!   TTLs; [`Update`] and [`Query`] builders; [`Entity`] and the field handles
//!   the derive generates ([`Field`], [`HashField`]) with their index kinds
//!   ([`Equality`], [`Unique`], [`Tags`], [`Prefix`], [`Sorted`], [`NoIndex`]);
//! - [`relation`] (relations and timelines), [`board`] (time-bucketed
//!   leaderboards), [`Cache`] (read-through cache), [`verify`] (reports of
//!   `verify`), [`migrate`] (legacy keys), [`admin`] (embeddable CLI);
//! - [`ConnectOptions`]: timeouts and reconnection; `redis`, the driver
//!   (re-exported for connections of one's own);
//! - [`Error`], [`Result`]; [`Namespace`] (tenant prefixes); [`KeyPart`] and
//!   [`PaddedKeyPart`] (pk types in keys); [`codec`] (the value traits);
//!   the layout listing ([`EntityLayout`], [`Registry`]); the description the
//!   derive emits ([`EntityDesc`] and its parts);
//! - [`CountingConnection`]: counts round trips (tests, benchmarks).
//!
//! Plans, script arguments and codec internals are private; what generated
//! code needs lives under `__private`. `docs/architecture.md` in the
//! repository describes the modules.

#![warn(missing_docs)]

// Layers, from the bottom: the schema (descriptions, handles, codecs,
// escaping), the keyspace (the one place that spells a key), plans (pure:
// keys, commands, script arguments), scripts (Lua and the one way to call
// it), the store (core CRUD, and one module per feature).
mod conn;
mod error;
mod keyspace;
mod plan;
mod schema;
mod script;
mod seen;
mod store;

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub mod admin;
pub mod blocking;
pub mod near;

pub use conn::{CountingConnection, RoundTrips};
pub use error::{Error, FieldError, FieldErrorKind, Result};
pub use keyspace::EntityKeys;
pub use schema::entity::{
    ColumnDesc, Entity, EntityDesc, IndexDesc, IndexKind, IndexSource, Layout, MapDesc, Row,
};
pub use schema::escape::{KeyPart, Namespace, PaddedKeyPart};
pub use schema::field::{
    AllowsIncr, Assign, Equality, Field, HashField, Incrementable, NoIndex, Prefix, PrefixIndex,
    SetIndex, Sorted, SortedIndex, Tags, Unique, UniqueIndex, ValueKeyed, Writable,
};
pub use schema::layout::{EntityLayout, KeyPattern, RedisType, Registry};
pub use store::cache::{Cache, CacheOptions};
pub use store::query::Query;
pub use store::scan::Scan;
pub use store::{board, cache, migrate};
pub use store::{ConnectOptions, Store, Update};

/// Relations between entities kept on both sides (follows / followed by), and
/// pushed timelines.
pub mod relation {
    pub use crate::store::relation::Relation;
    pub use crate::store::timeline::Timeline;
}

/// The reports of [`Store::verify`].
pub mod verify {
    pub use crate::plan::verify::{Progress, Repaired, Report, Unrepaired, Violation};
}

/// The traits of stored values: implement them to store a type of your own.
pub mod codec {
    pub use crate::schema::codec::{FieldCodec, MapField, Scalar, SortScore};
}

/// The redis-rs driver the store runs on (for connections of one's own,
/// `Store::new`, and raw commands).
pub use redis;

/// `#[derive(RedisEntity)]`: see the crate docs and `docs/key-layout.md`.
#[cfg(feature = "derive")]
pub use redis_entity_derive::RedisEntity;

/// The paths generated code uses. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::error::{FieldError, Result};
    pub use crate::keyspace::entity_key_of as entity_key;
    pub use crate::schema::codec::SortScore;
    pub use crate::schema::codec::{
        decode_map, to_bytes, Defaulted, FieldCodec, Json, JsonOptional, MapField, Optional,
        PkPart, Plain, TagList,
    };
    pub use crate::schema::entity::{
        ColumnDesc, Entity, EntityDesc, IndexDesc, IndexKind, IndexSource, Layout, MapDesc, Row,
    };
    pub use crate::schema::escape::{KeyPart, PaddedKeyPart};
    pub use crate::schema::field::{
        Equality, Field, HashField, NoIndex, Prefix, Sorted, Tags, Unique,
    };
    pub use crate::schema::layout::EntityLayout;
    pub use crate::schema::update_op::UpdateOp;
    pub use ::core;
    pub use ::std::string::String;
    pub use ::std::vec::Vec;

    /// Takes the next column value out of a row being decoded.
    pub fn take(columns: &mut ::std::vec::IntoIter<Option<Vec<u8>>>) -> Option<Vec<u8>> {
        columns.next().flatten()
    }
}
