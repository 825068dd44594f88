//! The [`Entity`] trait and the static description the derive emits.
//!
//! The macro knows everything about an entity at compile time; it writes it
//! down once as an [`EntityDesc`] and the runtime builds every plan from that
//! description, never re-deriving it.

use crate::error::{FieldError, Result};
use crate::key::Namespace;

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
    pub fn name(self) -> &'static str {
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

impl IndexKind {
    /// The letter the write script uses for this kind.
    pub(crate) fn code(self) -> &'static str {
        match self {
            IndexKind::Equality => "e",
            IndexKind::Unique => "u",
            IndexKind::Tags => "t",
            IndexKind::Prefix => "p",
            IndexKind::Sorted => "s",
        }
    }
}

/// The score of a stored value of a sorted index, if it is a number.
pub type ScoreFn = fn(&[u8]) -> Option<f64>;

/// Where an indexed value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexSource {
    /// A stored column (its position in [`EntityDesc::columns`]).
    Column(usize),
    /// A field of the primary key: fixed for the entity's lifetime, read from
    /// its member (seed 000's red packets, found by `program_id` and `uid`).
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
}

impl EntityDesc {
    /// The prefix of the index keys of `index`: `<ns><prefix>:<field>:`
    /// (followed by the escaped value). For a prefix index, the entries are
    /// named the same way in reports, though they live in one sorted set.
    pub fn index_prefix(&self, ns: &Namespace, index: &IndexDesc) -> String {
        format!("{}{}:{}:", ns.as_str(), self.prefix, index.field)
    }

    /// The sorted set of a prefix or sorted index: `<ns><prefix>:<field>`.
    pub fn index_zset(&self, ns: &Namespace, index: &IndexDesc) -> String {
        format!("{}{}:{}", ns.as_str(), self.prefix, index.field)
    }

    /// The set of the members of every stored entity of this type (kept for
    /// indexed entities: the universe of a query with only `none` conditions).
    pub fn ids_key(&self, ns: &Namespace) -> String {
        format!("{}{}:@ids", ns.as_str(), self.prefix)
    }

    /// The sorted set of members that have a TTL, scored by expiry time in
    /// milliseconds (indexed entities): what `sweep` walks.
    pub fn expiry_key(&self, ns: &Namespace) -> String {
        format!("{}{}:@expiry", ns.as_str(), self.prefix)
    }

    /// A key of the entity with `member` that exists while the entity does
    /// and carries its TTL: the entity key, or in the `strings` layout its
    /// first required column without a TTL of its own.
    pub fn ttl_key_of_member(&self, ns: &Namespace, member: &str) -> String {
        let base = self.key_of_member(ns, member);
        match (
            self.layout,
            self.columns.iter().find(|c| !c.optional && c.ttl.is_none()),
        ) {
            (Layout::Strings, Some(c)) => format!("{base}:{}", c.name),
            _ => base,
        }
    }

    /// The namespaced entity key of `member`.
    pub fn key_of_member(&self, ns: &Namespace, member: &str) -> String {
        let mut k = String::with_capacity(
            ns.as_str().len() + self.key_head.len() + member.len() + self.key_tail.len() + 2,
        );
        k.push_str(ns.as_str());
        k.push_str(self.key_head);
        k.push('{');
        k.push_str(member);
        k.push('}');
        k.push_str(self.key_tail);
        k
    }
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

/// A struct mapped to Redis. Implemented by `#[derive(RedisEntity)]`; writing it
/// by hand is possible but the derive also checks the layout.
pub trait Entity: Sized + Send + Sync + 'static {
    /// The primary key: the `#[pk]` field's type, or a tuple for a composite key.
    type Pk: Send + Sync;

    /// The static description.
    const DESC: &'static EntityDesc;

    /// Appends the member of `pk` to `out`: the pk as written inside the
    /// key's hash tag (`9`, `1_2_3`), also what index sets hold.
    fn write_member(pk: &Self::Pk, out: &mut String);

    /// Appends this entity's own member to `out`.
    fn write_own_member(&self, out: &mut String);

    /// Parses a member back into a pk; `None` for text no pk produces.
    fn read_member(member: &str) -> Option<Self::Pk>;

    /// The stored form.
    fn to_row(&self) -> Result<Row>;

    /// Rebuilds the entity from its pk and stored form.
    fn from_row(pk: &Self::Pk, row: Row) -> Result<Self, FieldError>;

    /// The entity key for `pk`, without namespace (`User::key(&9)` is the
    /// inherent shortcut the derive generates).
    fn entity_key(pk: &Self::Pk) -> String {
        Self::DESC.key_of_member(&Namespace::none(), &Self::member(pk))
    }

    /// The member of `pk` (see [`Entity::write_member`]).
    fn member(pk: &Self::Pk) -> String {
        let mut s = String::new();
        Self::write_member(pk, &mut s);
        s
    }
}

/// All the keys of one entity, namespaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityKeys {
    /// The entity's member (its pk inside the hash tag).
    pub member: String,
    /// The entity key: the hash (`hash`), the JSON string (`json`) or the
    /// presence marker (`strings`).
    pub base: String,
    /// `strings` layout: one key per column; empty otherwise.
    pub columns: Vec<String>,
    /// One key per `#[hash]` field.
    pub maps: Vec<String>,
    /// Indexed entities: the index shadow (`<entity key>:@shadow`), a hash
    /// of the entity's index entries kept while it has a TTL, so that the
    /// entries of an expired entity can be found and removed.
    pub shadow: Option<String>,
}

impl EntityKeys {
    /// The keys of the entity with `member`.
    pub fn new(desc: &EntityDesc, ns: &Namespace, member: String) -> Self {
        let base = desc.key_of_member(ns, &member);
        let sub = |name: &str| format!("{base}:{name}");
        let columns = match desc.layout {
            Layout::Strings => desc.columns.iter().map(|c| sub(c.name)).collect(),
            Layout::Hash | Layout::Json => Vec::new(),
        };
        let maps = desc.maps.iter().map(|m| sub(m.name)).collect();
        let shadow = (!desc.indexes.is_empty()).then(|| sub("@shadow"));
        EntityKeys {
            member,
            base,
            columns,
            maps,
            shadow,
        }
    }

    /// The keys of the entity with pk `pk`.
    pub fn of<E: Entity>(ns: &Namespace, pk: &E::Pk) -> Self {
        Self::new(E::DESC, ns, E::member(pk))
    }

    /// The keys of `entity`.
    pub fn of_entity<E: Entity>(ns: &Namespace, entity: &E) -> Self {
        let mut m = String::new();
        entity.write_own_member(&mut m);
        Self::new(E::DESC, ns, m)
    }

    /// Every key, in script order: base, columns, maps, shadow.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.base)
            .chain(self.columns.iter())
            .chain(self.maps.iter())
            .chain(self.shadow.iter())
    }
}
