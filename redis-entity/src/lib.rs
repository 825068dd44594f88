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
//!     settings: BTreeMap<String, String>, // its own hash: user:9:settings
//! }
//!
//! # async fn run() -> redis_entity::Result<()> {
//! let store = Store::connect("redis://127.0.0.1/").await?;
//! let lisi = User { id: 9, username: "lisi".into(), email: None, level: 1, settings: BTreeMap::new() };
//! store.save(&lisi).await?;                                       // HSET user:9 username lisi level 1
//! store.update::<User>(&9).incr(User::LEVEL, 1).exec().await?;   // HINCRBY user:9 level 1
//! assert_eq!(store.get::<User>(&9).await?.unwrap().level, 2);
//! println!("{}", User::layout());                                 // every key family and its type
//! # Ok(()) }
//! ```
//!
//! See `docs/key-layout.md` in the repository for the key rules.

//! ## The public surface
//!
//! - [`Store`] (async) and [`blocking::Store`]: connect, the writes and
//!   reads of entities, `save_all`, queries; [`StoreBuilder`] (and
//!   [`blocking::StoreBuilder`]): a store's settings and how it connects; [`Update`] and [`Query`]
//!   builders; [`Entity`] and the field handles the derive generates
//!   ([`Field`], [`HashField`]), whose index kind decides which queries and
//!   updates compile;
//! - the feature handles, one entry point each on the store:
//!   [`board::Leaderboard`] (`store.board(Player::SCORE)`, a sorted index as
//!   a leaderboard), [`board::Rotating`] (`store.board(&WEEKLY)`,
//!   time-bucketed boards; `board` takes either), [`relation::Relations`] and
//!   [`relation::Timelines`] (`store.relation(&FOLLOWS)`,
//!   `store.timeline(&PUSHED)`), [`maintenance::Maintenance`]
//!   (`store.maintenance::<Book>()`: [`verify`] and repair, reindex, sweep,
//!   [`relayout`], [`migrate`]), [`Expiry`] (`store.expiry::<Session>()`),
//!   [`Keys`] (`store.keys()`), [`Transaction`] (`store.transaction()`),
//!   [`evolution::Schema`] (`store.schema()`);
//!   on a blocking store each is a [`blocking::Handle`];
//! - [`Cache`] (read-through cache), [`near`] (the near cache), [`admin`]
//!   (embeddable CLI);
//! - `redis`, the driver
//!   (re-exported for connections of one's own);
//! - [`Error`], [`Result`]; [`Namespace`] (tenant prefixes); [`KeyPart`] and
//!   [`PaddedKeyPart`] (pk types in keys); [`codec`] (the value traits);
//!   the layout listing ([`EntityLayout`], [`Registry`]).
//!
//! Plans, script arguments and codec internals are private; what generated
//! code needs lives under `__private`. `docs/architecture.md` in the
//! repository describes the modules.

#![warn(missing_docs)]

// Layers, from the bottom (docs/architecture.md; tests/layers.rs keeps
// them): the base (errors), the schema (descriptions, handles, codecs,
// escaping), the keyspace (the one place that spells a key), scripts (Lua
// and the one way to call it), plans (pure: keys, commands, script calls),
// the near cache, the store (core CRUD, and one module per feature), and
// the front (blocking, admin, this file).
mod any;
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

pub use any::AnyConnection;
#[doc(hidden)]
pub use conn::{CountingConnection, RoundTrips};
pub use error::{Error, FieldError, FieldErrorKind, Result};
pub use keyspace::layout::{EntityLayout, KeyPattern, RedisType, Registry};
pub use keyspace::EntityKeys;
pub use plan::explain::Explain;
pub use schema::condition::Condition;
pub use schema::entity::Entity;
pub use schema::escape::{KeyLayout, KeyPart, Namespace, PaddedKeyPart};
pub use schema::field::{Field, HashField};
// The index kinds and what each allows: named in the bounds of queries and
// updates, implemented by the crate alone, so not on the rustdoc index (see
// `Field` for the rules in words).
#[doc(hidden)]
pub use schema::field::{
    AllowsIncr, Assign, Equality, Incrementable, NoIndex, Prefix, PrefixIndex, RangeOf, SetIndex,
    Sorted, SortedIndex, Tags, Unique, UniqueIndex, ValueKeyed, Writable,
};
pub use schema::pk::IntoPk;
pub use store::cache::{Cache, CacheOptions};
pub use store::observe::Metrics;
pub use store::query::{Query, Term};
pub use store::scan::Scan;
pub use store::{board, migrate, relayout};
pub use store::{Expiry, KeyScan, Keys, Store, StoreBuilder, Transaction, Update};

/// Relations between entities kept on both sides (follows / followed by), and
/// pushed timelines.
pub mod relation {
    pub use crate::store::relation::{Relation, Relations};
    pub use crate::store::timeline::{Timeline, Timelines};
}

/// The maintenance of one entity type: [`Maintenance`](maintenance::Maintenance),
/// `store.maintenance::<User>()`.
pub mod maintenance {
    pub use crate::store::maintenance::Maintenance;
}

/// Schema evolution: [`Schema`](evolution::Schema), `store.schema()`, and
/// the definitions each type's schema record keeps (docs/schema-evolution.md).
pub mod evolution {
    pub use crate::schema::definition::{describe, diff, Change, Column, Definition, Difference};
    pub use crate::store::schema::{
        Applied, IndexState, Schema, SchemaPlan, SchemaStatus, APPLY_RATE,
    };
}

/// The reports of [`Maintenance::verify`](maintenance::Maintenance::verify).
pub mod verify {
    pub use crate::plan::verify::{Progress, Repaired, Report, Unrepaired, Violation};
}

/// The traits of stored values: implement them to store a type of your own.
pub mod codec {
    pub use crate::schema::codec::{Counter, MapField, Scalar, SortScore};
    // Implemented for every serde type; named in the bounds of json fields.
    #[doc(hidden)]
    pub use crate::schema::codec::JsonValue;
}

/// The redis-rs driver the store runs on (for connections of one's own,
/// `Store::new`, and raw commands).
pub use redis;

/// Maps a struct to Redis: `#[derive(RedisEntity)]`.
///
/// The derive implements [`Entity`] for the struct and generates, for each
/// field, a typed handle (`User::EMAIL`, a [`Field`] or [`HashField`]) that
/// queries and updates take; `User::key(&pk)`, the entity key of a pk; and
/// `User::layout()`, every key family the type uses. The layout is checked
/// at compile time: a mistake is one error at the attribute or field that
/// makes it.
///
/// # On the struct
///
/// | attribute | meaning |
/// | --- | --- |
/// | `#[redis(prefix = "user")]` | the key prefix (default: the type's name in snake_case) |
/// | `#[redis(key = "user:userid:{id}")]` | a key template; its placeholders are exactly the `#[pk]` fields |
/// | `#[redis(layout = "hash")]` | `hash` (default: one hash per entity), `strings` (one string key per field) or `json` (one JSON document) |
/// | `#[hash]` | another spelling of `layout = "hash"` |
/// | `#[redis(ttl = 3600)]` | a default TTL in seconds for new entities (a save keeps the remaining TTL of an existing one) |
/// | `#[redis(shards = 16)]` | on Redis Cluster, the index shards of an indexed type (default 16; 1 for a type with a unique index) |
/// | `#[redis(group = "social")]` | on Redis Cluster, the type lives in the group's one slot with the group's other types, so relations and timelines between them stay one script (one shard) |
/// | `#[redis(validate = path::to::check)]` | a check every write of a whole entity runs first (`save`, `insert`, `save_all`, a transaction's `save`): `fn check(&Self) -> Result<(), E>` with `E: Display`; a refusal is [`Error::Invalid`] naming the type, the key and the message, and nothing is written |
/// | `#[redis(crate = "::redis_entity")]` | the path to this crate, when it is renamed or re-exported |
///
/// ```
/// use redis_entity::RedisEntity;
///
/// #[derive(RedisEntity)]
/// #[redis(prefix = "user")]
/// struct User { #[pk] id: u64, name: String }
/// assert_eq!(User::key(&9), "user:9");
///
/// // The classic layout: one string key per field, under a template.
/// #[derive(RedisEntity)]
/// #[redis(layout = "strings", key = "user:userid:{userid}")]
/// struct Account { #[pk] userid: u64, username: String }
/// assert_eq!(Account::key(&9), "user:userid:9");
///
/// // Sessions that expire an hour after they are created.
/// #[derive(RedisEntity)]
/// #[redis(prefix = "session", ttl = 3600)]
/// struct Session { #[pk] id: String, user: u64 }
/// ```
///
/// # On fields
///
/// | attribute | meaning |
/// | --- | --- |
/// | `#[pk]` | the primary key: one field, or several for a composite key (a tuple `Pk`); part of the key, not stored again |
/// | `#[index]` | an equality index (`find`, `query().eq/all/any/none`); on a collection (`BTreeSet`, `Vec`...) a tag relation, one set per element |
/// | `#[index(unique)]` | a unique index: a second entity with the value is refused (`Error::UniqueViolation`); `find_unique` |
/// | `#[index(sorted)]` | a sorted set of the number (or date): ranges, ordering, `top`, `rank` |
/// | `#[index(prefix)]` | "starts with" search, and equality (`query().prefix(..)`) |
/// | `#[hash]` | a map field (`BTreeMap`/`HashMap`) stored as its own hash, `<entity key>:<field>`, with per-entry access (`hget`, `update().hset/hdel`) |
/// | `#[version]` | an integer field the store increments on every write; `update().if_version(v)` and saves check it (`Error::VersionConflict`) |
/// | `#[redis(rename = "n")]` | the name stored in Redis |
/// | `#[redis(skip)]` | not stored; reads back `Default::default()` |
/// | `#[redis(default)]` | a missing stored value reads as `Default::default()` instead of an error (for fields added later) |
/// | `#[redis(json)]` | stored as one JSON value (any serde type; collections and your own structs need it or `#[index]`/`#[hash]`) |
/// | `#[redis(ttl = 60)]` | `strings` layout, on an `Option` field: that key expires 60 s after each write of it |
/// | `#[redis(pad = 10)]` | an integer pk written zero-padded in keys (`SU1:{0000000035}`), so keys sort in number order |
///
/// `Option<T>` fields store nothing for `None` and are not indexed then;
/// `Some("")` is stored, and read back as `Some("")`.
///
/// ```
/// use redis_entity::RedisEntity;
/// use std::collections::{BTreeMap, BTreeSet};
///
/// #[derive(RedisEntity)]
/// #[redis(prefix = "book")]
/// struct Book {
///     #[pk]
///     id: u64,
///     #[index(prefix)]
///     title: String,                      // starts-with search
///     #[index]
///     tags: BTreeSet<String>,             // book:@tags:<tag> -> {ids}
///     #[index(unique)]
///     isbn: String,                       // one book per ISBN
///     #[index(sorted)]
///     price_cents: i64,                   // ranges, cheapest first
///     #[hash]
///     notes: BTreeMap<String, String>,    // book:1:notes
///     #[redis(json)]
///     authors: Vec<String>,               // one JSON value
///     #[redis(rename = "pub")]
///     publisher: Option<String>,          // stored as `pub`, absent when None
///     #[version]
///     version: u64,                       // optimistic concurrency
/// }
/// assert_eq!(Book::key(&1), "book:1");
/// assert_eq!(Book::TITLE.name(), "title");
/// assert_eq!(Book::PUBLISHER.name(), "pub");
/// println!("{}", Book::layout()); // every key family and its Redis type
///
/// // A composite key: red packets of a live program, by (program, task, user).
/// #[derive(RedisEntity)]
/// #[redis(key = "red_package:{program_id}_{task_id}_{uid}")]
/// struct RedPackage {
///     #[pk] #[index] program_id: u64,
///     #[pk] task_id: u64,
///     #[pk] #[index] uid: u64,
///     status: String,
/// }
/// assert_eq!(RedPackage::key(&(1, 2, 3)), "red_package:1_2_3");
/// ```
///
/// A field of a type the crate cannot store is refused at the field, with
/// the hint to add `#[redis(json)]`; an index kind the type does not allow
/// (`sorted` on text, say), a key template that leaves out a `#[pk]`, or two
/// types whose keys could collide in a [`Registry`] are refused too. A query
/// on a field without the index it reads, or `set` on a pk field, does not
/// compile either, and the error names the field and the attribute to add
/// (``field `User::email` has no `#[index]`: add it to query it with `find`, ...``).
/// The layout rules and every key family are listed in the repository's
/// `docs/key-layout.md`.
#[cfg(feature = "derive")]
pub use redis_entity_derive::RedisEntity;

/// The paths generated code uses. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::error::{FieldError, Result};
    pub use crate::keyspace::entity_key_of as entity_key;
    pub use crate::keyspace::layout::EntityLayout;
    pub use crate::schema::codec::SortScore;
    pub use crate::schema::codec::{
        decode_map, to_bytes, Defaulted, FieldCodec, Json, JsonOptional, MapField, Optional,
        PkPart, Plain, TagList,
    };
    pub use crate::schema::definition::fingerprint;
    pub use crate::schema::entity::{
        ColumnDesc, ColumnForm, Derived, Entity, EntityDesc, IndexDesc, IndexKind, IndexSource,
        Layout, MapDesc, Row, DEFAULT_SHARDS,
    };
    pub use crate::schema::escape::{unescape_with, KeyPart, PaddedKeyPart};
    pub use crate::schema::field::{
        Equality, Field, FieldMarker, HashField, NoIndex, Prefix, Sorted, Tags, Unique,
    };
    pub use crate::schema::update_op::UpdateOp;
    pub use ::core;
    pub use ::std::string::{String, ToString};
    pub use ::std::vec::Vec;

    /// The description in the stub the derive emits next to its errors.
    /// The program does not compile, so nothing reads it; a constant that
    /// panics would be one more error wherever `DESC` is evaluated (as
    /// `cargo build` does).
    pub const STUB_DESC: &EntityDesc = &EntityDesc {
        type_name: "",
        prefix: "",
        layout: Layout::Hash,
        key_pattern: "",
        key_head: "",
        key_tail: "",
        pk_fields: &[],
        numeric_pk: false,
        columns: &[],
        maps: &[],
        indexes: &[],
        pk_index_value: |_, _| None,
        version: None,
        ttl: None,
        shards: 1,
        group: None,
    };

    /// Takes the next column value out of a row being decoded.
    pub fn take(columns: &mut ::std::vec::IntoIter<Option<Vec<u8>>>) -> Option<Vec<u8>> {
        columns.next().flatten()
    }
}
