//! The [`Entity`] trait and the static description the derive emits.
//!
//! The macro knows everything about an entity at compile time; it writes it
//! down once as an [`EntityDesc`] and the runtime builds every plan from that
//! description, never re-deriving it.

use crate::error::{FieldError, Result};

/// How one entity is laid out in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One hash per entity; one hash field per column (the default).
    Hash,
    /// One string key per column, `<entity key>:<column>`; allows a TTL per column.
    Strings,
    /// One string key holding a JSON object.
    Json,
}

impl Layout {
    /// The name used in `#[redis(layout = "...")]`.
    pub const fn name(self) -> &'static str {
        match self {
            Layout::Hash => "hash",
            Layout::Strings => "strings",
            Layout::Json => "json",
        }
    }
}

/// One stored column (a struct field that is not a pk, not `#[hash]`, not skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnDesc {
    /// The name in Redis (the field name, or its `rename`).
    pub name: &'static str,
    /// The Rust type, for layout listings.
    pub rust_type: &'static str,
    /// True when absence is allowed (`Option`, `#[redis(default)]`).
    pub optional: bool,
    /// Per-column expiry in seconds (`strings` layout only).
    pub ttl: Option<u64>,
    /// How the value is written in Redis.
    pub form: ColumnForm,
    /// `#[redis(alias = "old")]`: the name the field was stored as before,
    /// read when the current one is absent (hash layout).
    pub alias: Option<&'static str>,
}

/// How a column's value is written in Redis: what a definition records
/// of its encoding, besides its Rust type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnForm {
    /// The value's text (numbers in decimal, strings as they are).
    Text,
    /// One JSON value (`#[redis(json)]`, or the `json` layout).
    Json,
    /// A tag list (`#[index]` or `#[redis(tags)]` on a collection).
    Tags,
}

impl ColumnForm {
    /// The form's name in a definition.
    pub const fn name(self) -> &'static str {
        match self {
            ColumnForm::Text => "text",
            ColumnForm::Json => "json",
            ColumnForm::Tags => "tags",
        }
    }
}

/// A `#[hash]` field: a map kept in its own hash at `<entity key>:<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapDesc {
    /// The key suffix and field name.
    pub name: &'static str,
    /// The Rust type, for layout listings.
    pub rust_type: &'static str,
}

/// What an index keeps for a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// `#[index]` on a scalar: one set of members per value.
    Equality,
    /// `#[index(unique)]`: one string key per value holding the owner's member.
    Unique,
    /// `#[index]` on a collection (a tag relation): one set per element.
    Tags,
    /// `#[index(prefix)]`: one sorted set of `escaped value:member` entries,
    /// all with score 0, read with ZRANGEBYLEX ("starts with" and equality).
    Prefix,
    /// `#[index(sorted)]`: one sorted set of members scored by the value
    /// (ranges, ordering, leaderboards).
    Sorted,
}

/// The score of a stored value of a sorted index, if it is a number.
pub type ScoreFn = fn(&[u8]) -> Option<f64>;

/// Where an indexed value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexSource {
    /// A stored column (its position in [`EntityDesc::columns`]).
    Column(usize),
    /// A field of the primary key: fixed for the entity's lifetime, read from
    /// its member (red packets of a live program, found by `program_id` and `uid`).
    Pk,
}

/// One indexed field.
#[derive(Debug, Clone, Copy)]
pub struct IndexDesc {
    /// The field's stored name (also the index key segment).
    pub field: &'static str,
    /// Where the value comes from.
    pub source: IndexSource,
    /// The index kind.
    pub kind: IndexKind,
    /// Sorted indexes: the score of a stored value (`None`: not a number).
    pub score: Option<ScoreFn>,
}

/// Two descriptions are equal when they index the same field the same way
/// (the score function is derived from the field's type).
impl PartialEq for IndexDesc {
    fn eq(&self, other: &Self) -> bool {
        self.field == other.field && self.source == other.source && self.kind == other.kind
    }
}
impl Eq for IndexDesc {}

impl IndexDesc {
    /// The column, for a column index.
    pub fn column(&self) -> Option<usize> {
        match self.source {
            IndexSource::Column(c) => Some(c),
            IndexSource::Pk => None,
        }
    }
}

/// Everything the runtime needs to know about an entity type.
#[derive(Debug, Clone, Copy)]
pub struct EntityDesc {
    /// The Rust type name.
    pub type_name: &'static str,
    /// The key prefix (`user`).
    pub prefix: &'static str,
    /// The storage layout.
    pub layout: Layout,
    /// The entity key pattern with `<pk>` placeholders (`user:userid:{<id>}`).
    pub key_pattern: &'static str,
    /// The literal text of the entity key before its hash tag (`user:userid:`).
    pub key_head: &'static str,
    /// The literal text of the entity key after its hash tag (`:profile` in
    /// `user:{<id>}:profile`, usually empty).
    pub key_tail: &'static str,
    /// The pk field names, in key order.
    pub pk_fields: &'static [&'static str],
    /// True for a single integer pk: members then sort numerically.
    pub numeric_pk: bool,
    /// The stored columns, in field order.
    pub columns: &'static [ColumnDesc],
    /// The `#[hash]` map fields, in field order.
    pub maps: &'static [MapDesc],
    /// The indexed fields.
    pub indexes: &'static [IndexDesc],
    /// The stored form of indexed pk field `field` of the entity with
    /// `member` (`None` when the member does not parse).
    pub pk_index_value: fn(member: &str, field: &str) -> Option<Vec<u8>>,
    /// The `#[version]` column: optimistic concurrency.
    pub version: Option<usize>,
    /// Expiry given to a newly created entity, in seconds.
    pub ttl: Option<u64>,
    /// The index shards of the cluster layout (`#[redis(shards = N)]`; else
    /// 1 for a type with a unique index, whose values are checked in one
    /// slot, and [`DEFAULT_SHARDS`] otherwise): an indexed entity's keys
    /// and the index entries of its shard share one hash tag.
    pub shards: u16,
    /// `#[redis(group = "name")]`: on a cluster every entity of the type
    /// lives in the group's one slot (`{name:0}`), shared with the group's
    /// other types, so relations and timelines between them stay one
    /// script; one server ignores it.
    pub group: Option<&'static str>,
}

/// An entity in its stored form: one optional value per column (`None`:
/// nothing stored) and the entries of each `#[hash]` map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Column values, in [`EntityDesc::columns`] order.
    pub columns: Vec<Option<Vec<u8>>>,
    /// Map entries, in [`EntityDesc::maps`] order.
    pub maps: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
}

/// The index shards of an indexed type in the cluster layout unless its
/// struct says otherwise: enough to spread a type over the masters of a
/// usual cluster (3 to 8), few enough that a query, which asks every shard,
/// stays cheap.
pub const DEFAULT_SHARDS: u16 = 16;

/// The mark of a `#[derive(RedisEntity)]` type, which the derive implements
/// next to [`Entity`]: the description and the codecs it writes together are
/// what the runtime trusts (a key layout checked at compile time), so an
/// `Entity` written by hand is refused.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `#[derive(RedisEntity)]` type",
    label = "`Entity` is implemented by `#[derive(RedisEntity)]` only",
    note = "add `#[derive(RedisEntity)]` to the struct (see the derive's attributes for its keys and indexes)"
)]
pub trait Derived {}

/// A struct mapped to Redis: implemented by `#[derive(RedisEntity)]`, and
/// only by it (a hand-written implementation does not compile). Its items
/// other than [`Pk`](Entity::Pk) are what the derive and the runtime
/// exchange, and not a public API.
pub trait Entity: Derived + Sized + Send + Sync + 'static {
    /// The primary key: the `#[pk]` field's type, or a tuple for a composite key.
    type Pk: Clone + Send + Sync;

    #[doc(hidden)]
    /// The static description.
    const DESC: &'static EntityDesc;

    #[doc(hidden)]
    /// The fingerprint of the type's definition, which the derive computes
    /// at compile time (`schema::definition::fingerprint` of `DESC`).
    const SCHEMA: u64;

    #[doc(hidden)]
    /// Appends the member of `pk` to `out`: the pk as written inside the
    /// key's hash tag (`9`, `1_2_3`), also what index sets hold.
    fn write_member(pk: &Self::Pk, out: &mut String);

    #[doc(hidden)]
    /// Appends this entity's own member to `out`.
    fn write_own_member(&self, out: &mut String);

    #[doc(hidden)]
    /// Parses a member back into a pk; `None` for text no pk produces.
    fn read_member(member: &str) -> Option<Self::Pk>;

    #[doc(hidden)]
    /// The stored form.
    fn to_row(&self) -> Result<Row>;

    #[doc(hidden)]
    /// Rebuilds the entity from its pk and stored form.
    fn from_row(pk: &Self::Pk, row: Row) -> Result<Self, FieldError>;

    #[doc(hidden)]
    /// The member of `pk` (see [`Entity::write_member`]).
    fn member(pk: &Self::Pk) -> String {
        // Room for any integer pk: written without growing.
        let mut s = String::with_capacity(24);
        Self::write_member(pk, &mut s);
        s
    }

    #[doc(hidden)]
    /// The type's `#[redis(validate = ..)]` check (none: every value is
    /// valid); what it says when it refuses.
    fn validate(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}
