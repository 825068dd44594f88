//! Layout descriptions: every key an entity type writes, with its Redis type,
//! and a [`Registry`] that refuses entity types whose keys could collide.

use crate::error::{Error, Result};
use crate::schema::entity::{Entity, EntityDesc, IndexKind, Layout};
use crate::schema::escape::KeyLayout;
use std::fmt;

/// The Redis data type behind a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedisType {
    /// A string key.
    String,
    /// A hash.
    Hash,
    /// A set.
    Set,
    /// A sorted set.
    SortedSet,
    /// A list.
    List,
}

impl fmt::Display for RedisType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RedisType::String => "string",
            RedisType::Hash => "hash",
            RedisType::Set => "set",
            RedisType::SortedSet => "zset",
            RedisType::List => "list",
        })
    }
}

/// One family of keys: a pattern with `<placeholders>`, its type and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyPattern {
    /// For example `user:<id>:settings` (`user:{<id>}:settings` in the
    /// cluster layout).
    pub pattern: String,
    /// The Redis type stored there.
    pub redis_type: RedisType,
    /// What the key holds, in words.
    pub holds: String,
}

/// Every key family of one entity type. `Display` prints a table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntityLayout {
    /// The Rust type name.
    pub entity: &'static str,
    /// The storage layout.
    pub layout: Layout,
    /// The key layout these patterns are of.
    pub key_layout: KeyLayout,
    /// True when the pk is made of integers only (its members are digits).
    pub numeric_pk: bool,
    /// The entity key pattern of a type without indexes in the cluster
    /// layout (`user:{<id>}`).
    pub tagged_pattern: &'static str,
    /// The index shards of the cluster layout.
    pub shards: u16,
    /// The cluster slot group (`#[redis(group = ...)]`).
    pub group: Option<&'static str>,
    /// The key families.
    pub keys: Vec<KeyPattern>,
    /// The prefix of the index keys.
    pub prefix: &'static str,
    /// True when the entity has indexes (and so index key families).
    pub indexed: bool,
}

impl EntityLayout {
    /// The key families of `desc` in the standalone layout (one server).
    pub fn of(desc: &EntityDesc) -> Self {
        Self::of_layout(desc, KeyLayout::Standalone)
    }

    /// The key families of `desc` in `layout`.
    pub fn of_layout(desc: &EntityDesc, layout: KeyLayout) -> Self {
        // An indexed type on a cluster: its keys as on one server, under
        // the tag of the entity's index shard.
        if layout == KeyLayout::Cluster && (!desc.indexes.is_empty() || desc.group.is_some()) {
            let mut l = Self::of_layout(desc, KeyLayout::Standalone);
            let space = match desc.group {
                Some(g) => format!("{{{g}:0}}:"),
                None => format!("{{{}:<shard>}}:", desc.prefix),
            };
            for k in &mut l.keys {
                k.pattern = format!("{space}{}", k.pattern);
            }
            l.key_layout = KeyLayout::Cluster;
            let own = type_keys(desc, KeyLayout::Standalone).len();
            l.keys.truncate(l.keys.len() - own);
            l.keys.extend(type_keys(desc, KeyLayout::Cluster));
            return l;
        }
        let pattern = entity_pattern(desc, layout);
        let base = pattern.as_str();
        let ns = &crate::schema::escape::Namespace::none().in_layout(layout);
        let mut keys = value_keys(desc, base);
        keys.extend(desc.indexes.iter().map(|idx| index_keys(desc, ns, idx)));
        if !desc.indexes.is_empty() {
            keys.extend(index_bookkeeping_keys(desc, ns, base));
        }
        keys.extend(linked_keys(base));
        keys.extend(type_keys(desc, layout));
        EntityLayout {
            entity: desc.type_name,
            layout: desc.layout,
            key_layout: layout,
            numeric_pk: desc.numeric_pk,
            tagged_pattern: desc.key_pattern,
            shards: desc.shards,
            group: desc.group,
            keys,
            prefix: desc.prefix,
            indexed: !desc.indexes.is_empty(),
        }
    }

    /// The literal text every entity key of this type starts with, up to
    /// the pk (and its hash tag in the cluster layout).
    pub fn head(&self) -> &str {
        let p = &self.keys[0].pattern;
        &p[..p.find(['{', '<']).unwrap_or(p.len())]
    }
}

/// True when an entity key of `a` (head, member, tail) can be an entity key
/// of `b` or a key under one, in the standalone layout: the heads are
/// equal, or `b`'s head goes on from `a`'s with text a member of `a` can
/// start with.
fn heads_meet(a: &EntityLayout, b: &EntityLayout) -> bool {
    let Some(rest) = b.head().strip_prefix(a.head()) else {
        return false;
    };
    let start = rest.split(':').next().unwrap_or_default();
    rest.is_empty()
        || match (a.numeric_pk, start.is_empty()) {
            // Digits (and a sign) only: a literal with anything else never meets it.
            (true, false) => start.chars().all(|c| c.is_ascii_digit() || c == '-'),
            (true, true) => false,
            // Text: any non-empty segment that does not start with `@`.
            (false, _) => !start.is_empty() && !start.starts_with('@'),
        }
}

/// The entity key pattern of `desc` in `layout`: the derive writes it with
/// the hash tag (`user:{<id>}`); the standalone layout has no braces
/// (`user:<id>`).
fn entity_pattern(desc: &EntityDesc, layout: KeyLayout) -> String {
    let p = desc.key_pattern;
    match (layout, p.find('{'), p.rfind('}')) {
        (KeyLayout::Standalone, Some(open), Some(close)) if open < close => {
            format!("{}{}{}", &p[..open], &p[open + 1..close], &p[close + 1..])
        }
        _ => p.to_owned(),
    }
}

/// The keys that hold an entity's values, under entity key `base`: the
/// hash or JSON string (or, in the strings layout, the marker and one
/// string per column), then one hash per map field.
fn value_keys(desc: &EntityDesc, base: &str) -> Vec<KeyPattern> {
    let fields = || {
        desc.columns
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut keys = match desc.layout {
        Layout::Hash => vec![KeyPattern {
            pattern: base.to_owned(),
            redis_type: RedisType::Hash,
            holds: format!("fields {}", fields()),
        }],
        Layout::Json => vec![KeyPattern {
            pattern: base.to_owned(),
            redis_type: RedisType::String,
            holds: format!("JSON object with {}", fields()),
        }],
        Layout::Strings => column_keys(desc, base),
    };
    for m in desc.maps {
        keys.push(KeyPattern {
            pattern: format!("{base}:{}", m.name),
            redis_type: RedisType::Hash,
            holds: format!("entries of {} ({})", m.name, m.rust_type),
        });
    }
    keys
}

/// The strings layout: the entity key (a presence marker, or only the
/// prefix of the column keys) and one string key per column.
fn column_keys(desc: &EntityDesc, base: &str) -> Vec<KeyPattern> {
    // A type none of whose columns must be stored (all optional, or
    // with a TTL of their own) keeps the marker while the entity is.
    let may_need_marker = !desc.columns.iter().any(|c| !c.optional && c.ttl.is_none());
    let mut keys = vec![KeyPattern {
        pattern: base.to_owned(),
        redis_type: RedisType::String,
        holds: if may_need_marker {
            "presence marker, kept while the entity is".into()
        } else {
            "no value: the prefix of the column keys".into()
        },
    }];
    for c in desc.columns {
        keys.push(KeyPattern {
            pattern: format!("{base}:{}", c.name),
            redis_type: RedisType::String,
            holds: match c.ttl {
                Some(t) => format!(
                    "column {} ({}), expires {t}s after each write",
                    c.name, c.rust_type
                ),
                None => format!("column {} ({})", c.name, c.rust_type),
            },
        });
    }
    keys
}

/// The key family of one index: a set per value (equality, tags), a
/// string per value (unique), or one sorted set (prefix, sorted).
fn index_keys(
    desc: &EntityDesc,
    ns: &crate::schema::escape::Namespace,
    idx: &crate::schema::entity::IndexDesc,
) -> KeyPattern {
    let (pattern, redis_type, holds) = match idx.kind {
        IndexKind::Equality => (
            format!(
                "{}<{}>",
                crate::keyspace::index_prefix(desc, ns, idx.field),
                idx.field
            ),
            RedisType::Set,
            format!("ids of the entities with that {}", idx.field),
        ),
        IndexKind::Tags => (
            format!(
                "{}<tag>",
                crate::keyspace::index_prefix(desc, ns, idx.field)
            ),
            RedisType::Set,
            format!("ids of the entities tagged so in {}", idx.field),
        ),
        IndexKind::Unique => (
            format!(
                "{}<{}>",
                crate::keyspace::index_prefix(desc, ns, idx.field),
                idx.field
            ),
            RedisType::String,
            format!("the id of the one entity with that {}", idx.field),
        ),
        IndexKind::Prefix => (
            crate::keyspace::index_zset(desc, ns, idx.field),
            RedisType::SortedSet,
            format!("<{}>:<id> entries, score 0 (prefix search)", idx.field),
        ),
        IndexKind::Sorted => (
            crate::keyspace::index_zset(desc, ns, idx.field),
            RedisType::SortedSet,
            format!("ids scored by {}", idx.field),
        ),
    };
    KeyPattern {
        pattern,
        redis_type,
        holds,
    }
}

/// What an indexed type keeps beside its indexes: the set of all ids (for
/// an integer pk, its buckets and their directory, beside the one set a
/// store written before buckets keeps), the expiry sorted set, and each
/// entity's index shadow hash.
fn index_bookkeeping_keys(
    desc: &EntityDesc,
    ns: &crate::schema::escape::Namespace,
    base: &str,
) -> Vec<KeyPattern> {
    let ids = crate::keyspace::ids_key(desc, ns);
    let mut keys = Vec::new();
    if crate::keyspace::bucketed_ids(desc) {
        keys.push(KeyPattern {
            pattern: format!("{ids}:<bucket>"),
            redis_type: RedisType::Set,
            holds: "ids of the stored entities in one hundred (`12xx`: 1200-1299)".into(),
        });
        keys.push(KeyPattern {
            pattern: crate::keyspace::ids_directory(&ids),
            redis_type: RedisType::Set,
            holds: "the buckets of ids that hold an id".into(),
        });
    }
    keys.extend([
        KeyPattern {
            pattern: ids,
            redis_type: RedisType::Set,
            holds: if crate::keyspace::bucketed_ids(desc) {
                "ids of every stored entity, as written before buckets (read, no longer added to)"
            } else {
                "ids of every stored entity"
            }
            .into(),
        },
        KeyPattern {
            pattern: crate::keyspace::expiry_key(desc, ns),
            redis_type: RedisType::SortedSet,
            holds: "ids of entities with a TTL, scored by expiry time (ms)".into(),
        },
        KeyPattern {
            pattern: crate::keyspace::shadow_key(base),
            redis_type: RedisType::Hash,
            holds: "index entries of an entity with a TTL, kept past its expiry until swept".into(),
        },
    ]);
    keys
}

/// Families under the entity key that exist once the entity takes part in
/// a relation or a timeline (declared as consts apart from the type), and
/// the request records of writes with a token.
fn linked_keys(base: &str) -> [KeyPattern; 4] {
    [
        KeyPattern {
            pattern: format!("{base}:<relation>"),
            redis_type: RedisType::Set,
            holds: "ids related by a `Relation` (one set per relation name and side)".into(),
        },
        KeyPattern {
            pattern: format!("{base}:<timeline>"),
            redis_type: RedisType::List,
            holds: "ids pushed to a `Timeline` of this entity, newest first, capped".into(),
        },
        KeyPattern {
            pattern: crate::keyspace::relation_register(base),
            redis_type: RedisType::Hash,
            holds: "relation register: where the other side of each relation set lives, and each timeline".into(),
        },
        KeyPattern {
            pattern: format!("{base}{}<token>", crate::keyspace::REQUEST_SUFFIX),
            redis_type: RedisType::String,
            holds: "outcome of a write with a request token (store with write retries), 60 s"
                .into(),
        },
    ]
}

/// The type's keys outside its entities' slots on a cluster: the buckets
/// of its time-bucketed boards (one key per bucket, for every entity), the
/// schema record (in its own slot, whatever the type's layout there: every
/// definition of the type finds it) and, for a type whose unique values are
/// claimed across index shards, the owner key of each unique value (in the
/// value's own slot). Always last: the cluster layout of an indexed type
/// replaces them.
fn type_keys(desc: &EntityDesc, layout: KeyLayout) -> Vec<KeyPattern> {
    let ns = crate::schema::escape::Namespace::none().in_layout(layout);
    let mut keys = vec![
        KeyPattern {
            pattern: crate::keyspace::board_key(desc, &ns, "<board>", "<bucket>"),
            redis_type: RedisType::SortedSet,
            holds: "ids scored in one bucket (a day, a week) of a `Board`; expires".into(),
        },
        KeyPattern {
            pattern: crate::keyspace::schema_key(desc, &ns),
            redis_type: RedisType::Hash,
            holds: "schema record: the definitions that wrote the type, the state of each index"
                .into(),
        },
    ];
    if crate::keyspace::needs_claims(desc, &ns) {
        for idx in desc.indexes.iter().filter(|i| i.kind == IndexKind::Unique) {
            let value = format!("<{}>", idx.field);
            keys.push(KeyPattern {
                pattern: crate::keyspace::owner_key(desc, &ns, idx.field, value.as_bytes()),
                redis_type: RedisType::Hash,
                holds: format!(
                    "owner of one {} value across index shards (its own slot)",
                    idx.field
                ),
            });
        }
    }
    keys
}

/// The key families a store writes apart from any entity type's, in
/// namespace `ns`: the namespace's layout marker and the read-through
/// caches' entries and loader locks.
pub(crate) fn store_keys(ns: &crate::schema::escape::Namespace) -> Vec<KeyPattern> {
    let entry = |name: &str| format!("{}cache:{name}{{<key>}}", ns.as_str());
    vec![
        KeyPattern {
            pattern: crate::keyspace::layout_marker(ns),
            redis_type: RedisType::String,
            holds: "the key layout that wrote the namespace (`standalone`, `cluster`)".into(),
        },
        KeyPattern {
            pattern: entry(""),
            redis_type: RedisType::String,
            holds: "an entry of the unnamed read-through cache (a value, or a miss); expires"
                .into(),
        },
        KeyPattern {
            pattern: entry("<cache>:"),
            redis_type: RedisType::String,
            holds: "an entry of a named read-through cache; expires".into(),
        },
        KeyPattern {
            pattern: crate::keyspace::cache_lock_key(&entry("")),
            redis_type: RedisType::String,
            holds: "the lock of the one loader of a missing cache entry; expires".into(),
        },
        KeyPattern {
            pattern: crate::keyspace::cache_lock_key(&entry("<cache>:")),
            redis_type: RedisType::String,
            holds: "the lock of the one loader of a named cache's missing entry; expires".into(),
        },
    ]
}

impl fmt::Display for EntityLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = match self.key_layout {
            KeyLayout::Standalone => "one server",
            KeyLayout::Cluster => "Redis Cluster",
        };
        writeln!(f, "{} (layout {}, {on})", self.entity, self.layout.name())?;
        let w = self.keys.iter().map(|k| k.pattern.len()).max().unwrap_or(0);
        for k in &self.keys {
            writeln!(
                f,
                "  {:<w$}  {:<6}  {}",
                k.pattern,
                k.redis_type.to_string(),
                k.holds
            )?;
        }
        if self.key_layout == KeyLayout::Standalone {
            if let Some(g) = self.group {
                writeln!(
                    f,
                    "  on Redis Cluster: every key above in the `{g}` group's one slot, `{{{g}:0}}:`"
                )?;
            } else if self.indexed {
                writeln!(
                    f,
                    "  on Redis Cluster: every key above under its index shard's tag, `{{{}:<shard>}}:` ({} shard{})",
                    self.prefix,
                    self.shards,
                    if self.shards == 1 { "" } else { "s" }
                )?;
            } else {
                writeln!(
                    f,
                    "  on Redis Cluster: {} and every key under it in its hash tag",
                    self.tagged_pattern
                )?;
            }
            if let Some(record) = self.keys.iter().find(|k| k.pattern.ends_with("@schema")) {
                writeln!(
                    f,
                    "  but boards' buckets, `{}:board:<board>:<bucket>`, and the schema record, `{{{}:0}}:{}`",
                    self.prefix, self.prefix, record.pattern
                )?;
            }
        }
        Ok(())
    }
}

/// The entity types of an application. Registering two types whose key
/// families could produce the same key, in either key layout, is an error.
///
/// Every entity key is its literal head, then the escaped member (in a hash
/// tag in the cluster layout), then the template's tail; a member holds no
/// `:`, no brace, and does not start with `@`. In the cluster layout two types
/// share an entity key only if their heads are equal (they diverge at the
/// latest where the shorter one meets its `{`). In the standalone layout a
/// head that is a proper prefix of another's can also meet it: `user:` and
/// `user:userid:` collide when `userid` could be a member of the first type
/// (a text pk), not when the first type's pk is an integer (digits only).
/// Index keys live under the prefix: `<prefix>:@<field>` and
/// `<prefix>:@<field>:<value>` (no `@` in the cluster layout), where a value
/// has no `:`. Two indexed types can collide when one prefix is the other's,
/// or the other's followed by `:` and more segments (an equality key of one
/// can be a sorted set of the other), so that is refused.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    layouts: Vec<EntityLayout>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds `E`, or fails with [`Error::LayoutOverlap`].
    pub fn register<E: Entity>(mut self) -> Result<Self> {
        let layout = EntityLayout::of(E::DESC);
        let nested = |a: &str, b: &str| a == b || b.starts_with(&format!("{a}:"));
        let index_clash = |l: &EntityLayout| {
            l.indexed
                && layout.indexed
                && (nested(l.prefix, layout.prefix) || nested(layout.prefix, l.prefix))
        };
        if let Some(other) = self
            .layouts
            .iter()
            .find(|l| heads_meet(l, &layout) || heads_meet(&layout, l) || index_clash(l))
        {
            return Err(Error::LayoutOverlap {
                first: format!("{} ({})", other.keys[0].pattern, other.entity),
                second: format!("{} ({})", layout.keys[0].pattern, layout.entity),
            });
        }
        self.layouts.push(layout);
        Ok(self)
    }

    /// The registered layouts, in registration order.
    pub fn layouts(&self) -> &[EntityLayout] {
        &self.layouts
    }
}

impl fmt::Display for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.layouts {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}
