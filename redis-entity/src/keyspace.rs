//! The keyspace: the one place that spells a Redis key.
//!
//! Every key the runtime reads or writes is built here, from an entity's
//! description, a namespace prefix (`ns`: `""` or `tenant:42:`) and escaped
//! values. Scripts never spell a key either: they get keys in `KEYS`, and key
//! prefixes in the header the runtime writes for them from these functions.
//! See `docs/key-layout.md` for the layout as a table.
//!
//! | family | key | type |
//! |---|---|---|
//! | entity | `<ns><head>{<member>}<tail>` | hash / string |
//! | strings-layout column, `#[hash]` map | `<entity key>:<name>` | string / hash |
//! | index shadow | `<entity key>:@shadow` | hash |
//! | relation register | `<entity key>:@rel` | hash |
//! | request record (writes with a token, 60 s) | `<entity key>:@req:<token>` | string |
//! | relation set, timeline | `<entity key>:<name>` | set / list |
//! | equality / tag / unique index | `<ns><prefix>:<field>:<escaped value>` | set / string |
//! | prefix / sorted index | `<ns><prefix>:<field>` | sorted set |
//! | all ids | `<ns><prefix>:@ids` | set |
//! | expiry | `<ns><prefix>:@expiry` | sorted set |
//! | board bucket | `<ns><prefix>:board:<name>:<bucket>` | sorted set |
//! | cache entry | `<ns>cache:{<escaped key>}` (named: `<ns>cache:<name>:{<escaped key>}`), its lock `<entry>:lock` | string |

use crate::schema::entity::{EntityDesc, Layout};
use crate::schema::escape::escape_into;

/// The suffix of an entity's relation register: per relation set or
/// timeline it owns, how to find the other side.
pub(crate) const RELATION_REGISTER_SUFFIX: &str = ":@rel";

/// The suffix of a write's request record, `<entity key>:@req:<token>`:
/// the outcome of a write with a request token, kept for
/// [`REQUEST_WINDOW_MS`] so that a retry of it is not applied twice.
pub(crate) const REQUEST_SUFFIX: &str = ":@req:";

/// How long a request record is kept: longer than any retry waits.
pub(crate) const REQUEST_WINDOW_MS: u64 = 60_000;

/// The name of an entity's index shadow under its key.
const SHADOW: &str = "@shadow";

/// The entity key of `member`: `<ns><head>{<member>}<tail>`.
pub(crate) fn entity_key(desc: &EntityDesc, ns: &str, member: &str) -> String {
    let mut k = String::with_capacity(
        ns.len() + desc.key_head.len() + member.len() + desc.key_tail.len() + 2,
    );
    k.push_str(ns);
    k.push_str(desc.key_head);
    k.push('{');
    k.push_str(member);
    k.push('}');
    k.push_str(desc.key_tail);
    k
}

/// The entity key of `pk` without namespace: what `User::key(&9)`, which
/// the derive generates, returns.
pub fn entity_key_of<E: crate::Entity>(pk: &E::Pk) -> String {
    entity_key(E::DESC, "", &E::member(pk))
}

/// A key under an entity's key: a strings-layout column, a `#[hash]` map, a
/// relation set or a timeline (`<entity key>:<name>`).
pub(crate) fn sub_key(entity_key: &str, name: &str) -> String {
    let mut k = String::with_capacity(entity_key.len() + name.len() + 1);
    k.push_str(entity_key);
    k.push(':');
    k.push_str(name);
    k
}

/// The relation register of the entity with key `entity_key`.
pub(crate) fn relation_register(entity_key: &str) -> String {
    format!("{entity_key}{RELATION_REGISTER_SUFFIX}")
}

/// The text before the member in every entity key of the type
/// (`<ns><head>{`): with a member and a presence suffix, a key whose
/// existence means that entity exists.
pub(crate) fn owner_head(desc: &EntityDesc, ns: &str) -> String {
    format!("{ns}{}{{", desc.key_head)
}

/// The suffixes that, after [`owner_head`] and a member, name the keys whose
/// existence means the entity exists: the entity key, and in the `strings`
/// layout every column without a TTL of its own.
pub(crate) fn presence_suffixes(desc: &EntityDesc) -> Vec<String> {
    let tail = format!("}}{}", desc.key_tail);
    let mut out = vec![tail.clone()];
    if desc.layout == Layout::Strings {
        for c in desc.columns.iter().filter(|c| c.ttl.is_none()) {
            out.push(sub_key(&tail, c.name));
        }
    }
    out
}

/// A key of the entity with `member` that exists while the entity does and
/// carries its TTL: the entity key, or in the `strings` layout its first
/// required column without a TTL of its own.
pub(crate) fn ttl_key(desc: &EntityDesc, ns: &str, member: &str) -> String {
    let base = entity_key(desc, ns, member);
    match (
        desc.layout,
        desc.columns.iter().find(|c| !c.optional && c.ttl.is_none()),
    ) {
        (Layout::Strings, Some(c)) => sub_key(&base, c.name),
        _ => base,
    }
}

/// The prefix of the keys of an equality, tag or unique index:
/// `<ns><prefix>:<field>:` (followed by the escaped value).
pub(crate) fn index_prefix(desc: &EntityDesc, ns: &str, field: &str) -> String {
    format!("{ns}{}:{field}:", desc.prefix)
}

/// The key of an equality, tag or unique index for an escaped value.
pub(crate) fn index_key(desc: &EntityDesc, ns: &str, field: &str, escaped: &[u8]) -> Vec<u8> {
    let mut k = index_prefix(desc, ns, field).into_bytes();
    k.extend_from_slice(escaped);
    k
}

/// The sorted set of a prefix or sorted index: `<ns><prefix>:<field>`.
pub(crate) fn index_zset(desc: &EntityDesc, ns: &str, field: &str) -> String {
    format!("{ns}{}:{field}", desc.prefix)
}

/// The set of the members of every stored entity of an indexed type (the
/// universe of a query with only `none` conditions, and what `verify` walks).
pub(crate) fn ids_key(desc: &EntityDesc, ns: &str) -> String {
    format!("{ns}{}:@ids", desc.prefix)
}

/// The sorted set of members that have a TTL, scored by expiry time in
/// milliseconds: what `sweep` walks.
pub(crate) fn expiry_key(desc: &EntityDesc, ns: &str) -> String {
    format!("{ns}{}:@expiry", desc.prefix)
}

/// The keys of one entity, namespaced.
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
    pub(crate) fn new(desc: &EntityDesc, ns: &str, member: String) -> Self {
        let base = entity_key(desc, ns, &member);
        let columns = match desc.layout {
            Layout::Strings => desc
                .columns
                .iter()
                .map(|c| sub_key(&base, c.name))
                .collect(),
            Layout::Hash | Layout::Json => Vec::new(),
        };
        let maps = desc.maps.iter().map(|m| sub_key(&base, m.name)).collect();
        let shadow = (!desc.indexes.is_empty()).then(|| sub_key(&base, SHADOW));
        EntityKeys {
            member,
            base,
            columns,
            maps,
            shadow,
        }
    }

    /// Every key a read of the entity reads: the entity key, its columns
    /// (`strings`) and its `#[hash]` maps.
    pub(crate) fn read_keys(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.base.as_str())
            .chain(self.columns.iter().map(String::as_str))
            .chain(self.maps.iter().map(String::as_str))
    }

    /// The keys of the entity with pk `pk`.
    pub(crate) fn of<E: crate::Entity>(ns: &crate::Namespace, pk: &E::Pk) -> Self {
        Self::new(E::DESC, ns.as_str(), E::member(pk))
    }

    /// The keys of `entity`.
    pub(crate) fn of_entity<E: crate::Entity>(ns: &crate::Namespace, entity: &E) -> Self {
        let mut m = String::new();
        entity.write_own_member(&mut m);
        Self::new(E::DESC, ns.as_str(), m)
    }

    /// Every key, in script order: base, columns, maps, shadow.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.base)
            .chain(self.columns.iter())
            .chain(self.maps.iter())
            .chain(self.shadow.iter())
    }
}

/// The SCAN pattern of every entity key of the type (and the keys under
/// them). Literals of layouts and namespaces never contain glob characters.
pub(crate) fn entity_scan_pattern(desc: &EntityDesc, ns: &str) -> String {
    format!("{}*", owner_head(desc, ns))
}

/// The SCAN pattern of the keys of an equality, tag or unique index.
pub(crate) fn index_scan_pattern(desc: &EntityDesc, ns: &str, field: &str) -> String {
    format!("{}*", index_prefix(desc, ns, field))
}

/// The member inside an entity key, if the key is one of the type's.
pub(crate) fn member_of_key(desc: &EntityDesc, ns: &str, key: &str) -> Option<String> {
    let rest = key.strip_prefix(&owner_head(desc, ns))?;
    let end = rest.find('}')?;
    Some(rest[..end].to_owned())
}

/// `head \n tail \n name \n presence`: how the other side of a relation
/// finds a set of this type (stored in the relation register), and the
/// suffix after the entity key of the key whose existence means the entity
/// exists ([`ttl_key`]; empty but for the `strings` layout), so that
/// `verify` can tell a member whose entity is gone.
pub(crate) fn register_entry(desc: &EntityDesc, ns: &str, name: &str) -> String {
    format!(
        "{ns}{}\n{}\n{name}\n{}",
        desc.key_head,
        desc.key_tail,
        presence_suffix(desc)
    )
}

/// The entity key of `member` from the head and tail of a register entry.
pub(crate) fn key_from_entry(head: &str, member: &str, tail: &str) -> String {
    format!("{head}{{{member}}}{tail}")
}

/// The first line of a timeline's entry in its owner's relation register.
/// The write scripts take an entry starting with it for a key the entity
/// owns alone (deleted with the entity, nothing on the other side).
pub(crate) const TIMELINE_MARK: &str = "@list";

/// `@list \n head \n tail \n presence`: a timeline's entry in its owner's
/// relation register, naming the type of the members it lists (so that
/// `verify` can find entries whose entity is gone).
pub(crate) fn timeline_entry(member_desc: &EntityDesc, ns: &str) -> String {
    format!(
        "{TIMELINE_MARK}\n{ns}{}\n{}\n{}",
        member_desc.key_head,
        member_desc.key_tail,
        presence_suffix(member_desc)
    )
}

/// What [`ttl_key`] adds after the entity key: `""`, or `:<column>` in the
/// `strings` layout.
pub(crate) fn presence_suffix(desc: &EntityDesc) -> String {
    let key = ttl_key(desc, "", "");
    key[entity_key(desc, "", "").len()..].to_owned()
}

/// A bucket of a time-bucketed board: `<ns><prefix>:board:<name>:<bucket>`.
pub(crate) fn board_key(desc: &EntityDesc, ns: &str, name: &str, bucket: &str) -> String {
    format!("{ns}{}:board:{name}:{bucket}", desc.prefix)
}

/// A read-through cache entry: `<ns>cache:{<escaped key>}`.
pub(crate) fn cache_key(ns: &str, name: &str, key: &str) -> String {
    let mut k = cache_head(ns, name);
    escape_into(&mut k, key, "");
    k.push('}');
    k
}

/// What every entry of a cache starts with: `<ns>cache:{` for the unnamed
/// one, `<ns>cache:<escaped name>:{` for a named one (a name cannot end
/// where another's entries begin: `:` and braces are escaped).
fn cache_head(ns: &str, name: &str) -> String {
    let mut k = format!("{ns}cache:");
    if !name.is_empty() {
        escape_into(&mut k, name, "");
        k.push(':');
    }
    k.push('{');
    k
}

/// The SCAN pattern of every entry (and lock) of a cache.
pub(crate) fn cache_scan_pattern(ns: &str, name: &str) -> String {
    format!("{}*", cache_head(ns, name))
}

/// The single-loader lock of a cache entry.
pub(crate) fn cache_lock_key(entry: &str) -> String {
    format!("{entry}:lock")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::entity::{ColumnDesc, IndexDesc, IndexKind, IndexSource};

    const COLS: &[ColumnDesc] = &[
        ColumnDesc {
            name: "username",
            rust_type: "String",
            optional: false,
            ttl: None,
        },
        ColumnDesc {
            name: "code",
            rust_type: "Option<String>",
            optional: true,
            ttl: Some(60),
        },
    ];
    const IDX: &[IndexDesc] = &[IndexDesc {
        field: "country",
        source: IndexSource::Column(0),
        kind: IndexKind::Equality,
        score: None,
    }];

    fn desc(layout: Layout) -> EntityDesc {
        EntityDesc {
            type_name: "User",
            prefix: "user",
            layout,
            key_pattern: "user:userid:{<id>}",
            key_head: "user:userid:",
            key_tail: "",
            indexes: IDX,
            pk_index_value: |_, _| None,
            version: None,
            pk_fields: &["id"],
            numeric_pk: true,
            columns: COLS,
            maps: &[],
            ttl: None,
        }
    }

    #[test]
    fn entity_keys_follow_the_template_and_the_namespace() {
        let d = desc(Layout::Strings);
        let keys = EntityKeys::new(&d, "tenant:42:", "9".into());
        assert_eq!(keys.base, "tenant:42:user:userid:{9}");
        assert_eq!(
            keys.columns,
            [
                "tenant:42:user:userid:{9}:username",
                "tenant:42:user:userid:{9}:code"
            ]
        );
        assert_eq!(
            keys.shadow.as_deref(),
            Some("tenant:42:user:userid:{9}:@shadow")
        );
        assert_eq!(
            relation_register(&keys.base),
            "tenant:42:user:userid:{9}:@rel"
        );
        assert_eq!(ttl_key(&d, "", "9"), "user:userid:{9}:username");
        assert_eq!(
            member_of_key(&d, "tenant:42:", &keys.base).as_deref(),
            Some("9")
        );
        assert_eq!(member_of_key(&d, "", &keys.base), None);
    }

    #[test]
    fn index_and_type_keys() {
        let d = desc(Layout::Hash);
        assert_eq!(index_key(&d, "", "country", b"DE"), b"user:country:DE");
        assert_eq!(index_zset(&d, "t:", "country"), "t:user:country");
        assert_eq!(ids_key(&d, ""), "user:@ids");
        assert_eq!(expiry_key(&d, ""), "user:@expiry");
        assert_eq!(owner_head(&d, ""), "user:userid:{");
        assert_eq!(presence_suffixes(&d), ["}"]);
        assert_eq!(
            presence_suffixes(&desc(Layout::Strings)),
            ["}", "}:username"]
        );
        assert_eq!(entity_scan_pattern(&d, ""), "user:userid:{*");
        assert_eq!(index_scan_pattern(&d, "", "country"), "user:country:*");
        assert_eq!(
            board_key(&d, "", "weekly", "2026-W48"),
            "user:board:weekly:2026-W48"
        );
        assert_eq!(cache_key("", "", "price:{1}"), "cache:{price%3A%7B1%7D}");
        assert_eq!(cache_key("t:", "a:b", "x"), "t:cache:a%3Ab:{x}");
        assert_eq!(cache_scan_pattern("", ""), "cache:{*");
        assert_eq!(cache_scan_pattern("", "prices"), "cache:prices:{*");
        assert_eq!(cache_lock_key("cache:{a}"), "cache:{a}:lock");
        assert_eq!(
            register_entry(&d, "", "follows"),
            "user:userid:\n\nfollows\n"
        );
        assert_eq!(timeline_entry(&d, "t:"), "@list\nt:user:userid:\n\n");
    }

    #[test]
    fn a_key_tail_follows_the_hash_tag() {
        let d = EntityDesc {
            key_pattern: "user:{<id>}:profile",
            key_head: "user:",
            key_tail: ":profile",
            ..desc(Layout::Hash)
        };
        assert_eq!(entity_key(&d, "t:", "9"), "t:user:{9}:profile");
        assert_eq!(presence_suffixes(&d), ["}:profile"]);
        assert_eq!(
            member_of_key(&d, "t:", "t:user:{9}:profile").as_deref(),
            Some("9")
        );
        assert_eq!(member_of_key(&d, "t:", "t:order:{9}"), None);
        assert_eq!(member_of_key(&d, "t:", "t:user:{9"), None);
        assert_eq!(
            register_entry(&d, "t:", "follows"),
            "t:user:\n:profile\nfollows\n"
        );
    }

    #[test]
    fn the_ttl_key_is_one_that_lives_as_long_as_the_entity() {
        assert_eq!(ttl_key(&desc(Layout::Hash), "", "9"), "user:userid:{9}");
        assert_eq!(ttl_key(&desc(Layout::Json), "", "9"), "user:userid:{9}");
        // Strings without a required column lacking its own TTL: the marker.
        const OPTIONAL: &[ColumnDesc] = &[ColumnDesc {
            name: "code",
            rust_type: "Option<String>",
            optional: true,
            ttl: None,
        }];
        let d = EntityDesc {
            columns: OPTIONAL,
            ..desc(Layout::Strings)
        };
        assert_eq!(ttl_key(&d, "t:", "9"), "t:user:userid:{9}");
        assert_eq!(presence_suffix(&d), "");
        assert_eq!(presence_suffix(&desc(Layout::Hash)), "");
        // A required column: the entity exists while it does.
        assert_eq!(presence_suffix(&desc(Layout::Strings)), ":username");
        // A column without a TTL of its own still shows that the entity exists.
        assert_eq!(presence_suffixes(&d), ["}", "}:code"]);
    }
}
