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
    /// The pk field names, in key order.
    pub pk_fields: &'static [&'static str],
    /// The stored columns, in field order.
    pub columns: &'static [ColumnDesc],
    /// The `#[hash]` map fields, in field order.
    pub maps: &'static [MapDesc],
    /// Expiry given to a newly created entity, in seconds.
    pub ttl: Option<u64>,
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

    /// Appends the entity key for `pk` (without namespace) to `out`.
    fn write_key(pk: &Self::Pk, out: &mut String);

    /// Appends this entity's own key (without namespace) to `out`.
    fn write_own_key(&self, out: &mut String);

    /// The stored form.
    fn to_row(&self) -> Result<Row>;

    /// Rebuilds the entity from its pk and stored form.
    fn from_row(pk: &Self::Pk, row: Row) -> Result<Self, FieldError>;

    /// The entity key for `pk`, without namespace (`User::key(&9)` is the
    /// inherent shortcut the derive generates).
    fn entity_key(pk: &Self::Pk) -> String {
        let mut s = String::new();
        Self::write_key(pk, &mut s);
        s
    }
}

/// All the keys of one entity, namespaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityKeys {
    /// The entity key: the hash (`hash`), the JSON string (`json`) or the
    /// presence marker (`strings`).
    pub base: String,
    /// `strings` layout: one key per column; empty otherwise.
    pub columns: Vec<String>,
    /// One key per `#[hash]` field.
    pub maps: Vec<String>,
}

impl EntityKeys {
    /// The keys of the entity whose key (without namespace) is `entity_key`.
    pub fn new(desc: &EntityDesc, ns: &Namespace, entity_key: &str) -> Self {
        let mut base = String::with_capacity(ns.as_str().len() + entity_key.len());
        base.push_str(ns.as_str());
        base.push_str(entity_key);
        let sub = |name: &str| format!("{base}:{name}");
        let columns = match desc.layout {
            Layout::Strings => desc.columns.iter().map(|c| sub(c.name)).collect(),
            Layout::Hash | Layout::Json => Vec::new(),
        };
        let maps = desc.maps.iter().map(|m| sub(m.name)).collect();
        EntityKeys {
            base,
            columns,
            maps,
        }
    }

    /// The keys of the entity with pk `pk`.
    pub fn of<E: Entity>(ns: &Namespace, pk: &E::Pk) -> Self {
        let mut k = String::new();
        E::write_key(pk, &mut k);
        Self::new(E::DESC, ns, &k)
    }

    /// The keys of `entity`.
    pub fn of_entity<E: Entity>(ns: &Namespace, entity: &E) -> Self {
        let mut k = String::new();
        entity.write_own_key(&mut k);
        Self::new(E::DESC, ns, &k)
    }

    /// Every key, in script order: base, columns, maps.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.base)
            .chain(self.columns.iter())
            .chain(self.maps.iter())
    }
}
