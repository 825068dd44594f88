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
//! | all ids of an integer pk, by hundreds | `<ns><prefix>:@ids:12xx` | set |
//! | their buckets | `<ns><prefix>:@ids:@buckets` | set |
//! | expiry | `<ns><prefix>:@expiry` | sorted set |
//! | board bucket | `<ns><prefix>:board:<name>:<bucket>` | sorted set |
//! | cache entry | `<ns>cache:{<escaped key>}` (named: `<ns>cache:<name>:{<escaped key>}`), its lock `<entry>:lock` | string |

mod field_keys;
pub mod layout;
pub(crate) mod nodes;

use crate::schema::entity::{EntityDesc, Layout};
use crate::schema::escape::{escape_into, KeyLayout, Namespace};

/// The suffix of an entity's relation register: per relation set or
/// timeline it owns, how to find the other side.
pub(crate) const RELATION_REGISTER_SUFFIX: &str = ":@rel";

/// The suffix of a write's request record, `<entity key>:@req:<token>`:
/// the outcome of a write with a request token, kept for
/// [`REQUEST_WINDOW_MS`] so that a retry of it is not applied twice.
pub(crate) const REQUEST_SUFFIX: &str = ":@req:";

/// How long a request record is kept: longer than any retry waits.
pub(crate) const REQUEST_WINDOW_MS: u64 = 60_000;

/// The name, after the namespace, of the key recording which [`KeyLayout`]
/// wrote the namespace's keys: a string, `standalone` or `cluster`. No
/// entity or index key starts with `@`.
const LAYOUT_MARKER: &str = "@redis-entity:layout";

/// The layout marker of namespace `ns`: `<ns>@redis-entity:layout`, inside
/// the namespace (an ACL user limited to its prefix may write it).
pub(crate) fn layout_marker(ns: &Namespace) -> String {
    format!("{}{LAYOUT_MARKER}", ns.as_str())
}

/// The name of an entity's index shadow under its key.
const SHADOW: &str = "@shadow";

/// The text of every entity key of the type before the member: `<ns><head>`,
/// and in the cluster layout the hash tag's `{`.
pub(crate) fn owner_head(desc: &EntityDesc, ns: &Namespace) -> String {
    let mut h = String::with_capacity(ns.as_str().len() + desc.key_head.len() + 1);
    h.push_str(ns.as_str());
    h.push_str(desc.key_head);
    if tagged(ns) {
        h.push('{');
    }
    h
}

/// The text of every entity key of the type after the member: the
/// template's tail, after the hash tag's `}` in the cluster layout.
pub(crate) fn owner_tail(desc: &EntityDesc, ns: &Namespace) -> String {
    if tagged(ns) {
        format!("}}{}", desc.key_tail)
    } else {
        desc.key_tail.to_owned()
    }
}

/// True in the cluster layout: entity keys carry a hash tag.
fn tagged(ns: &Namespace) -> bool {
    ns.layout() == KeyLayout::Cluster
}

/// The segment that starts the name of the type's index families: `@` in
/// the standalone layout, where an entity key `<prefix>:<member>` sits beside
/// them and no member starts with `@` (members escape it); nothing in the
/// cluster layout, where entity keys hold a brace and index keys never do.
fn family_mark(ns: &Namespace) -> &'static str {
    if tagged(ns) {
        ""
    } else {
        "@"
    }
}

/// True when `desc`'s keys are sharded: an indexed type in the cluster
/// layout. Each of its entities belongs to one of `desc.shards` index
/// shards, and its keys and its shard's index entries live under the
/// shard's [`shard_space`], which shares one hash tag, so that one script
/// writes the entity and its entries on one slot.
pub(crate) fn sharded(desc: &EntityDesc, ns: &Namespace) -> bool {
    ns.layout() == KeyLayout::Cluster && (!desc.indexes.is_empty() || desc.group.is_some())
}

/// The shard of `member`: FNV-1a of its text, modulo the type's shards. A
/// stable function of the member alone, so any client finds the same shard.
pub(crate) fn shard_of(desc: &EntityDesc, member: &str) -> u16 {
    shard_among(desc.shards, member)
}

/// The shard of `member` among `shards` (FNV-1a of its text).
fn shard_among(shards: u16, member: &str) -> u16 {
    let mut h: u32 = 0x811c_9dc5;
    for b in member.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    (h % u32::from(shards.max(1))) as u16
}

/// Stands for the shard in the head of a register entry naming a type of
/// many shards: `<ns>{<prefix>:` SHARD_MARK `<shards>}:<head>`. The key of a
/// member there depends on the member's shard, which only the client
/// computes (`key_from_entry`); a script that meets the mark leaves that
/// side to the client. No namespace, prefix or member holds this byte.
pub(crate) const SHARD_MARK: char = '\u{1f}';

/// True when `desc`'s unique values need owner keys: a type with a unique
/// index spread over many shards of a cluster, whose entities holding one
/// value could live in two shards. Each value's owner then lives in its own
/// slot ([`owner_key`]), claimed before a write gives the value to an
/// entity (`store::unique`).
pub(crate) fn needs_claims(desc: &EntityDesc, ns: &Namespace) -> bool {
    desc.shards > 1
        && sharded(desc, ns)
        && desc
            .indexes
            .iter()
            .any(|i| i.kind == crate::schema::entity::IndexKind::Unique)
}

/// The owner key of a unique value of a type of many shards on a cluster:
/// `<ns>{<prefix>:<field>:<escaped value>}`, a hash (`owner`, `at`) in the
/// value's own slot. The whole name is the hash tag: an escaped value holds
/// no brace, and a shard's tag (`<prefix>:<n>`) has one colon, not two.
pub(crate) fn owner_key(desc: &EntityDesc, ns: &Namespace, field: &str, escaped: &[u8]) -> String {
    format!(
        "{}{{{}:{field}:{}}}",
        ns.as_str(),
        desc.prefix,
        String::from_utf8_lossy(escaped)
    )
}

/// The SCAN pattern of the owner keys of `field` (every master holds some).
pub(crate) fn owner_scan_pattern(desc: &EntityDesc, ns: &Namespace, field: &str) -> String {
    format!("{}{{{}:{field}:*}}", ns.as_str(), desc.prefix)
}

/// The namespace of shard `shard` of an indexed type in the cluster layout:
/// `<ns>{<prefix>:<shard>}:`, inside which its keys are spelled as on one
/// server (`{user:3}:user:9`, `{user:3}:user:@country:DE`); for a type in a
/// group, the group's one slot (`{social:0}:user:9`).
pub(crate) fn shard_space(desc: &EntityDesc, ns: &Namespace, shard: u16) -> Namespace {
    Namespace::spelled(
        format!(
            "{}{{{}:{shard}}}:",
            ns.as_str(),
            desc.group.unwrap_or(desc.prefix)
        ),
        KeyLayout::Standalone,
    )
}

/// The space of a type whose keys do not depend on the member's shard: a
/// type of one shard (or one server). What a relation register names for
/// the other side, where the script spells its keys.
pub(crate) fn type_space(desc: &EntityDesc, ns: &Namespace) -> Namespace {
    if sharded(desc, ns) {
        shard_space(desc, ns, 0)
    } else {
        ns.clone()
    }
}

/// Where the keys of the entity with `member` live: its shard's space for a
/// sharded type, `ns` itself otherwise.
pub(crate) fn entity_space(desc: &EntityDesc, ns: &Namespace, member: &str) -> Namespace {
    if sharded(desc, ns) {
        shard_space(desc, ns, shard_of(desc, member))
    } else {
        ns.clone()
    }
}

/// Every space the type's index entries live in: each shard's for a sharded
/// type, `ns` itself otherwise. A query asks each and merges the answers.
pub(crate) fn spaces(desc: &EntityDesc, ns: &Namespace) -> Vec<Namespace> {
    if sharded(desc, ns) {
        (0..desc.shards.max(1))
            .map(|s| shard_space(desc, ns, s))
            .collect()
    } else {
        vec![ns.clone()]
    }
}

/// The hash tag of `key` as Redis Cluster reads it: the text between the
/// first `{` and the next `}` when there is some, else the whole key. Keys
/// with one tag live on one slot.
pub(crate) fn slot_tag(key: &str) -> &str {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The entity key of `member`: `<ns><head><member><tail>` (`user:9`), with
/// the member in a hash tag in the cluster layout (`user:{9}`), or under its
/// shard's space for an indexed type there (`{user:3}:user:9`).
pub(crate) fn entity_key(desc: &EntityDesc, ns: &Namespace, member: &str) -> String {
    if sharded(desc, ns) {
        return entity_key(desc, &entity_space(desc, ns, member), member);
    }
    // `owner_head` + member + `owner_tail`, spelled out so that a read of
    // many entities allocates each key once (in its space, for a sharded
    // type: the call above).
    let tag = tagged(ns);
    let mut k = String::with_capacity(
        ns.as_str().len() + desc.key_head.len() + member.len() + desc.key_tail.len() + 2,
    );
    k.push_str(ns.as_str());
    k.push_str(desc.key_head);
    if tag {
        k.push('{');
    }
    k.push_str(member);
    if tag {
        k.push('}');
    }
    k.push_str(desc.key_tail);
    k
}

/// The entity key of `pk` in the standalone layout without namespace: what
/// `User::key(&9)`, which the derive generates, returns (`user:9`).
pub fn entity_key_of<E: crate::schema::entity::Entity>(pk: &E::Pk) -> String {
    entity_key(E::DESC, &Namespace::none(), &E::member(pk))
}

/// A key under an entity's key: a strings-layout column, a `#[hash]` map, a
/// relation set or a timeline (`<entity key>:<name>`).
/// Whether `name` may name a relation set or a timeline under the entities
/// of `desc` (`<entity key>:<name>`): not empty, not one of the entity's own
/// keys under its key (a `#[hash]` field's map, a `strings`-layout column),
/// and not starting with `@`, which marks the keys the runtime keeps there
/// (`@rel`, `@shadow`, `@req:`). Const, so that a relation or timeline
/// defined as a `const` is checked at compile time.
pub(crate) const fn free_sub_name(desc: &EntityDesc, name: &str) -> bool {
    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    if name.is_empty() || name.as_bytes()[0] == b'@' {
        return false;
    }
    if matches!(desc.layout, Layout::Strings) {
        let mut i = 0;
        while i < desc.columns.len() {
            if same(desc.columns[i].name, name) {
                return false;
            }
            i += 1;
        }
    }
    let mut i = 0;
    while i < desc.maps.len() {
        if same(desc.maps[i].name, name) {
            return false;
        }
        i += 1;
    }
    true
}

pub(crate) fn sub_key(entity_key: &str, name: &str) -> String {
    let mut k = String::with_capacity(entity_key.len() + name.len() + 1);
    k.push_str(entity_key);
    k.push(':');
    k.push_str(name);
    k
}

/// The keys of `member` without namespace, for the unit tests of the layers
/// above (the fixtures are in the schema, which spells no key).
#[cfg(test)]
pub(crate) fn keys_of_member(desc: &EntityDesc, member: &str) -> EntityKeys {
    EntityKeys::new(desc, &Namespace::none(), member.to_owned())
}

/// The index shadow of the entity with key `entity_key`: its index entries,
/// kept past its expiry until swept.
pub(crate) fn shadow_key(entity_key: &str) -> String {
    sub_key(entity_key, SHADOW)
}

/// The relation register of the entity with key `entity_key`.
pub(crate) fn relation_register(entity_key: &str) -> String {
    format!("{entity_key}{RELATION_REGISTER_SUFFIX}")
}

/// The suffixes that, after [`owner_head`] and a member, name the keys whose
/// existence means the entity exists: the entity key, and in the `strings`
/// layout every column without a TTL of its own.
pub(crate) fn presence_suffixes(desc: &EntityDesc, ns: &Namespace) -> Vec<String> {
    let tail = owner_tail(desc, ns);
    let mut out = vec![tail.clone()];
    if desc.layout == Layout::Strings {
        for c in desc.columns.iter().filter(|c| c.ttl.is_none()) {
            out.push(sub_key(&tail, c.name));
        }
    }
    out
}

/// Whether a hash-layout entity is read by its fields (`HMGET`, see
/// [`hash_fields`]): when its type has a required column, which every
/// stored entity holds, so that the fields alone say whether it exists. A
/// type whose columns may all be absent is read whole (`HGETALL`): its
/// hash may hold only its presence marker, or only a field a later
/// definition dropped (which counts toward the hash's length when the
/// write decides on the marker), and either way the entity exists.
pub(crate) fn reads_by_fields(desc: &EntityDesc) -> bool {
    desc.columns.iter().any(|c| !c.optional)
}

/// The fields a read of a hash-layout entity asks for (`HMGET`), in the
/// order its reply is decoded (`plan::read`): the columns, then the old
/// name (`alias`) of each column that has one.
pub(crate) fn hash_fields(desc: &EntityDesc) -> impl Iterator<Item = &'static str> + '_ {
    desc.columns
        .iter()
        .map(|c| c.name)
        .chain(desc.columns.iter().filter_map(|c| c.alias))
}

/// A key of the entity with `member` that exists while the entity does and
/// carries its TTL: the entity key, or in the `strings` layout its first
/// required column without a TTL of its own.
pub(crate) fn ttl_key(desc: &EntityDesc, ns: &Namespace, member: &str) -> String {
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
/// `<ns><prefix>:@<field>:` (followed by the escaped value; no `@` in the
/// cluster layout).
pub(crate) fn index_prefix(desc: &EntityDesc, ns: &Namespace, field: &str) -> String {
    format!("{}:", index_zset(desc, ns, field))
}

/// The key of an equality, tag or unique index for an escaped value.
pub(crate) fn index_key(desc: &EntityDesc, ns: &Namespace, field: &str, escaped: &[u8]) -> Vec<u8> {
    // Spelled into one buffer of the right size: every query and write
    // names a few of these.
    let (ns, prefix, mark) = (ns.as_str(), desc.prefix, family_mark(ns));
    let mut k =
        Vec::with_capacity(ns.len() + prefix.len() + mark.len() + field.len() + 2 + escaped.len());
    for part in [ns, prefix, ":", mark, field, ":"] {
        k.extend_from_slice(part.as_bytes());
    }
    k.extend_from_slice(escaped);
    k
}

/// The sorted set of a prefix or sorted index: `<ns><prefix>:@<field>`
/// (no `@` in the cluster layout).
pub(crate) fn index_zset(desc: &EntityDesc, ns: &Namespace, field: &str) -> String {
    format!("{}{}:{}{field}", ns.as_str(), desc.prefix, family_mark(ns))
}

/// The set of the members of every stored entity of an indexed type (the
/// universe of a query with only `none` conditions, and what `verify` walks).
pub(crate) fn ids_key(desc: &EntityDesc, ns: &Namespace) -> String {
    format!("{}{}:@ids", ns.as_str(), desc.prefix)
}

/// Whether a type keeps its ids in buckets: an indexed type with a single
/// integer pk. Its ids go to `<ids key>:<bucket>` sets of at most 100 ids
/// each, which Redis keeps as intsets (4-8 bytes an id) where one set of
/// all ids becomes a hash table past 512 members (about 45 bytes an id);
/// `<ids key>:@buckets` lists the buckets. Other pks (text) could not be
/// intsets and keep the one set. A store written before buckets keeps its
/// single set, which every reader reads beside the buckets and every
/// delete removes from: no migration.
pub(crate) fn bucketed_ids(desc: &EntityDesc) -> bool {
    desc.numeric_pk && !desc.indexes.is_empty()
}

/// The bucket of an integer member: its text without the last two digits,
/// then `xx` (`12xx` holds 1200-1299, `xx` 0-99 and -9..-1). Cut from the
/// text, not computed, so that Lua (whose numbers lose exactness above
/// 2^53) spells the same bucket for any `u64` or `i64` (`ids_bucket` in
/// `lua/write_shared.lua`). `None` for a member with a leading zero (a
/// padded pk, `#[redis(pad = ..)]`): Redis keeps only integers' own
/// spelling as intsets, so such an id stays in the one set.
pub(crate) fn ids_bucket(member: &str) -> Option<String> {
    if member.len() > 1 && member.starts_with('0') {
        return None;
    }
    let cut = member.len().saturating_sub(2);
    Some(format!("{}xx", member.get(..cut).unwrap_or_default()))
}

/// The directory of a type's id buckets: `<ids key>:@buckets`, the set of
/// the names of its buckets (`12xx`): a bucket's first id lists it, its
/// last one's delete takes it out. (A bucket listed but empty, as a
/// write around the library could leave, reads as empty.)
pub(crate) fn ids_directory(ids_key: &str) -> String {
    format!("{ids_key}:{IDS_DIRECTORY}")
}

/// The last segment of the directory of id buckets.
pub(crate) const IDS_DIRECTORY: &str = "@buckets";

/// The schema record of a type: `<ns><key head>@schema` (`user:@schema`
/// for `user:<id>`, `user:userid:@schema` for `user:userid:{<userid>}`), a
/// hash of the definitions that wrote the type and the state of each index
/// (see `script/lua/schema.lua`). Types may share a prefix with other key
/// templates, so the record follows the entity keys' head, which no member
/// starts with `@` under. On a cluster it is in the slot of the type's first
/// index shard, `<ns>{<prefix>:0}:<key head>@schema`, whatever the
/// definition: every definition of a type (with or without indexes, in a
/// group or not) finds the one record.
pub(crate) fn schema_key(desc: &EntityDesc, ns: &Namespace) -> String {
    if ns.layout() == KeyLayout::Cluster {
        format!(
            "{}{{{}:0}}:{}@schema",
            ns.as_str(),
            desc.prefix,
            desc.key_head
        )
    } else {
        format!("{}{}@schema", ns.as_str(), desc.key_head)
    }
}

/// The sorted set of members that have a TTL, scored by expiry time in
/// milliseconds: what `sweep` walks.
pub(crate) fn expiry_key(desc: &EntityDesc, ns: &Namespace) -> String {
    format!("{}{}:@expiry", ns.as_str(), desc.prefix)
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
    pub(crate) fn new(desc: &EntityDesc, ns: &Namespace, member: String) -> Self {
        let mut keys = Self::for_record(desc, ns, member);
        keys.shadow = (!desc.indexes.is_empty()).then(|| shadow_key(&keys.base));
        keys
    }

    /// The keys a read of the entity's record needs: those of
    /// [`EntityKeys::new`] without the index shadow, which only writes and
    /// checks use. A page of a query spells one key fewer per record.
    pub(crate) fn for_record(desc: &EntityDesc, ns: &Namespace, member: String) -> Self {
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
        EntityKeys {
            member,
            base,
            columns,
            maps,
            shadow: None,
        }
    }

    /// Every key a read of the entity reads: the entity key, its columns
    /// (`strings`) and its `#[hash]` maps.
    pub(crate) fn read_keys(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.base.as_str())
            .chain(self.columns.iter().map(String::as_str))
            .chain(self.maps.iter().map(String::as_str))
    }

    /// The keys of the entity with pk `pk` under `ns`, in the namespace's
    /// key layout (what [`crate::Keys::of`] gives for the store's).
    ///
    /// ```
    /// use redis_entity::{EntityKeys, KeyLayout, Namespace, RedisEntity};
    /// #[derive(RedisEntity)]
    /// struct User { #[pk] id: u64, #[hash] settings: std::collections::BTreeMap<String, String> }
    ///
    /// let one_server = EntityKeys::for_pk::<User>(&Namespace::none(), 9);
    /// assert_eq!((one_server.base.as_str(), one_server.maps[0].as_str()), ("user:9", "user:9:settings"));
    /// let cluster = EntityKeys::for_pk::<User>(&Namespace::none().in_layout(KeyLayout::Cluster), 9);
    /// assert_eq!(cluster.base, "user:{9}");
    /// ```
    pub fn for_pk<E: crate::schema::entity::Entity>(
        ns: &crate::schema::escape::Namespace,
        pk: impl crate::schema::pk::IntoPk<E::Pk>,
    ) -> Self {
        Self::of::<E>(ns, &pk.into_pk())
    }

    /// The keys of the entity with pk `pk`.
    pub(crate) fn of<E: crate::schema::entity::Entity>(
        ns: &crate::schema::escape::Namespace,
        pk: &E::Pk,
    ) -> Self {
        Self::new(E::DESC, ns, E::member(pk))
    }

    /// The keys of `entity`.
    pub(crate) fn of_entity<E: crate::schema::entity::Entity>(
        ns: &crate::schema::escape::Namespace,
        entity: &E,
    ) -> Self {
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

/// The SCAN pattern of every entity key of the type (and the keys under
/// them). Literals of layouts and namespaces never contain glob characters.
pub(crate) fn entity_scan_pattern(desc: &EntityDesc, ns: &Namespace) -> String {
    // In the standalone layout the type's index families sit beside the
    // entity keys under `<prefix>:@`; no member starts with `@`.
    let first = if tagged(ns) { "" } else { "[^@]" };
    format!("{}{first}*", owner_head(desc, ns))
}

/// The SCAN pattern of the keys of an equality, tag or unique index.
pub(crate) fn index_scan_pattern(desc: &EntityDesc, ns: &Namespace, field: &str) -> String {
    format!("{}*", index_prefix(desc, ns, field))
}

/// The member inside an entity key (or a key under it), if the key is one
/// of the type's: what follows the head up to the tail. A member holds no
/// `:` and no brace (escaped), and never starts with `@` (escaped too), which
/// is what the index families of the standalone layout start with.
pub(crate) fn member_of_key(desc: &EntityDesc, ns: &Namespace, key: &str) -> Option<String> {
    let rest = key.strip_prefix(&owner_head(desc, ns))?;
    let tail = owner_tail(desc, ns);
    let member = if tagged(ns) {
        &rest[..rest.find('}')?]
    } else {
        // A member has as many `:` as the template puts between its pk
        // fields (values escape theirs), so it spans that many segments
        // and one more; a tail that does not start with `:` begins inside
        // the last of them.
        let segments = member_colons(desc) + 1;
        let end = rest
            .match_indices(':')
            .nth(segments - 1)
            .map_or(rest.len(), |(i, _)| i);
        rest[..end].strip_suffix(tail.split(':').next().unwrap_or_default())?
    };
    let after = &rest[member.len()..];
    let valid = !member.is_empty()
        && !member.starts_with('@')
        && after.starts_with(tail.as_str())
        && (after.len() == tail.len() || after[tail.len()..].starts_with(':'));
    valid.then(|| member.to_owned())
}

/// How many `:` the template puts between the pk fields of a member
/// (`<prefix>:{<a>:<b>}` has one): the `:` inside the derive's pattern's
/// hash tag.
fn member_colons(desc: &EntityDesc) -> usize {
    let p = desc.key_pattern;
    match (p.find('{'), p.rfind('}')) {
        (Some(open), Some(close)) if open < close => p[open..close].matches(':').count(),
        _ => 0,
    }
}

/// `head \n tail \n name \n presence`: how the other side of a relation
/// finds a set of this type (stored in the relation register), and the
/// suffix after the entity key of the key whose existence means the entity
/// exists ([`ttl_key`]; empty but for the `strings` layout), so that
/// `verify` can tell a member whose entity is gone.
pub(crate) fn register_entry(desc: &EntityDesc, ns: &Namespace, name: &str) -> String {
    format!(
        "{}\n{}\n{name}\n{}",
        entry_head(desc, ns),
        owner_tail(desc, &type_space(desc, ns)),
        presence_suffix(desc)
    )
}

/// The head of a register entry naming `desc`'s entity keys: the type's
/// [`owner_head`], and for a type of many shards its shard space with
/// [`SHARD_MARK`] and the shard count where the shard goes.
fn entry_head(desc: &EntityDesc, ns: &Namespace) -> String {
    if desc.shards > 1 && sharded(desc, ns) {
        let space = Namespace::spelled(
            format!(
                "{}{{{}:{SHARD_MARK}{}}}:",
                ns.as_str(),
                desc.group.unwrap_or(desc.prefix),
                desc.shards
            ),
            KeyLayout::Standalone,
        );
        return owner_head(desc, &space);
    }
    owner_head(desc, &type_space(desc, ns))
}

/// The entity key of `member` from the head and tail of a register entry
/// (which hold the hash tag's braces in the cluster layout, and for a type
/// of many shards the [`SHARD_MARK`] and shard count, replaced here by the
/// member's shard).
pub(crate) fn key_from_entry(head: &str, member: &str, tail: &str) -> String {
    if let Some(at) = head.find(SHARD_MARK) {
        let rest = &head[at + SHARD_MARK.len_utf8()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(shards) = rest[..digits].parse::<u16>() {
            let shard = shard_among(shards, member);
            return format!("{}{shard}{}{member}{tail}", &head[..at], &rest[digits..]);
        }
    }
    format!("{head}{member}{tail}")
}

/// The first line of a timeline's entry in its owner's relation register.
/// The write scripts take an entry starting with it for a key the entity
/// owns alone (deleted with the entity, nothing on the other side).
pub(crate) const TIMELINE_MARK: &str = "@list";

/// `@list \n head \n tail \n presence`: a timeline's entry in its owner's
/// relation register, naming the type of the members it lists (so that
/// `verify` can find entries whose entity is gone).
pub(crate) fn timeline_entry(member_desc: &EntityDesc, ns: &Namespace) -> String {
    format!(
        "{TIMELINE_MARK}\n{}\n{}\n{}",
        entry_head(member_desc, ns),
        owner_tail(member_desc, &type_space(member_desc, ns)),
        presence_suffix(member_desc)
    )
}

/// What [`ttl_key`] adds after the entity key: `""`, or `:<column>` in the
/// `strings` layout.
pub(crate) fn presence_suffix(desc: &EntityDesc) -> String {
    let ns = Namespace::none();
    let key = ttl_key(desc, &ns, "");
    key[entity_key(desc, &ns, "").len()..].to_owned()
}

/// A bucket of a time-bucketed board: `<ns><prefix>:@board:<name>:<bucket>`
/// (no `@` in the cluster layout).
pub(crate) fn board_key(desc: &EntityDesc, ns: &Namespace, name: &str, bucket: &str) -> String {
    format!(
        "{}{}:{}board:{name}:{bucket}",
        ns.as_str(),
        desc.prefix,
        family_mark(ns)
    )
}

/// A key a timeline that pulls shares among its owners (`part`: `seq`,
/// `at` or `pulled`): `<ns><prefix>:@timeline:<name>:<part>` on one server;
/// on a cluster the three share one slot: the type's space's
/// (`{user:0}:user:timeline:<name>:<part>`), or for a type without indexes
/// `{<prefix>:timeline:<name>}:<part>`.
pub(crate) fn timeline_shared_key(
    desc: &EntityDesc,
    ns: &Namespace,
    name: &str,
    part: &str,
) -> String {
    let space = type_space(desc, ns);
    if tagged(ns) && !space.as_str().contains('{') {
        return format!(
            "{}{{{}:timeline:{name}}}:{part}",
            space.as_str(),
            desc.prefix
        );
    }
    format!(
        "{}{}:{}timeline:{name}:{part}",
        space.as_str(),
        desc.prefix,
        family_mark(ns)
    )
}

/// The name of an author's own list of pulled posts on timeline `name`
/// (`<author key>:<name>@posts`).
pub(crate) fn pulled_posts_name(name: &str) -> String {
    format!("{name}@posts")
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
            form: crate::schema::entity::ColumnForm::Text,
            alias: None,
        },
        ColumnDesc {
            name: "code",
            rust_type: "Option<String>",
            optional: true,
            ttl: Some(60),
            form: crate::schema::entity::ColumnForm::Text,
            alias: None,
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
            shards: 16,
            group: None,
        }
    }

    /// A namespace from its literal prefix, in the standalone layout.
    fn sa(prefix: &str) -> Namespace {
        Namespace::trusted_prefix(prefix).unwrap()
    }

    /// The same in the cluster layout.
    fn cl(prefix: &str) -> Namespace {
        sa(prefix).in_layout(KeyLayout::Cluster)
    }

    #[test]
    fn entity_keys_follow_the_template_and_the_namespace() {
        let d = desc(Layout::Strings);
        let keys = EntityKeys::new(&d, &sa("tenant:42"), "9".into());
        assert_eq!(keys.base, "tenant:42:user:userid:9");
        assert_eq!(
            keys.columns,
            [
                "tenant:42:user:userid:9:username",
                "tenant:42:user:userid:9:code"
            ]
        );
        assert_eq!(
            keys.shadow.as_deref(),
            Some("tenant:42:user:userid:9:@shadow")
        );
        assert_eq!(
            relation_register(&keys.base),
            "tenant:42:user:userid:9:@rel"
        );
        assert_eq!(ttl_key(&d, &sa(""), "9"), "user:userid:9:username");
        assert_eq!(
            member_of_key(&d, &sa("tenant:42"), &keys.base).as_deref(),
            Some("9")
        );
        assert_eq!(
            member_of_key(&d, &sa("tenant:42"), &keys.columns[0]).as_deref(),
            Some("9")
        );
        assert_eq!(member_of_key(&d, &sa(""), &keys.base), None);
        // The key is the owner's head, the member and the owner's tail, in
        // either layout, with a template that has text after the pk.
        let tailed = EntityDesc {
            indexes: &[],
            key_tail: ":profile",
            ..d
        };
        for ns in [sa("tenant:42"), cl("tenant:42"), sa("")] {
            assert_eq!(
                entity_key(&tailed, &ns, "9"),
                format!("{}9{}", owner_head(&tailed, &ns), owner_tail(&tailed, &ns))
            );
        }
        assert_eq!(
            entity_key(&tailed, &cl("t:"), "9"),
            "t:user:userid:{9}:profile"
        );

        // The cluster layout puts the member of a type without indexes in
        // a hash tag.
        let d = EntityDesc { indexes: &[], ..d };
        let keys = EntityKeys::new(&d, &cl("tenant:42"), "9".into());
        assert_eq!(keys.base, "tenant:42:user:userid:{9}");
        assert_eq!(keys.columns[0], "tenant:42:user:userid:{9}:username");
        assert_eq!(
            member_of_key(&d, &cl("tenant:42"), &keys.columns[0]).as_deref(),
            Some("9")
        );
    }

    #[test]
    fn an_indexed_type_on_a_cluster_lives_in_its_shards() {
        let d = desc(Layout::Hash);
        let c = &cl("t");
        let shard = shard_of(&d, "9");
        assert!(shard < 16);
        assert_eq!(shard, shard_of(&d, "9"), "a function of the member");
        let space = entity_space(&d, c, "9");
        assert_eq!(space.as_str(), format!("t:{{user:{shard}}}:"));
        let keys = EntityKeys::new(&d, c, "9".into());
        assert_eq!(keys.base, format!("t:{{user:{shard}}}:user:userid:9"));
        // Within a shard, keys are spelled as on one server, under one tag.
        assert_eq!(
            index_key(&d, &space, "country", b"DE"),
            format!("t:{{user:{shard}}}:user:@country:DE").into_bytes()
        );
        assert_eq!(ids_key(&d, &space), format!("t:{{user:{shard}}}:user:@ids"));
        let all = spaces(&d, c);
        assert_eq!(all.len(), 16);
        assert!(all.iter().any(|s| s == &space));
        // Members spread over the shards.
        let used: std::collections::BTreeSet<u16> =
            (0..200).map(|m| shard_of(&d, &m.to_string())).collect();
        assert_eq!(used.len(), 16);
        // One server, or a type without indexes: one space.
        assert_eq!(spaces(&d, &sa("t")), [sa("t")]);
    }

    #[test]
    fn a_register_entry_of_a_sharded_type_finds_each_members_shard() {
        let d = desc(Layout::Hash);
        let c = &cl("t");
        let entry = register_entry(&d, c, "followers");
        let mut lines = entry.split('\n');
        let (head, tail) = (lines.next().unwrap(), lines.next().unwrap());
        assert_eq!(head, format!("t:{{user:{SHARD_MARK}16}}:user:userid:"));
        assert_eq!(lines.next(), Some("followers"));
        for m in ["9", "10", "a%3Ab"] {
            assert_eq!(
                key_from_entry(head, m, tail),
                entity_key(&d, c, m),
                "the member's own shard"
            );
        }
        // A type of one shard, and one server: the head as the keys spell it.
        let one = EntityDesc { shards: 1, ..d };
        assert!(register_entry(&one, c, "f").starts_with("t:{user:0}:user:userid:\n"));
        let sa_entry = register_entry(&d, &sa("t"), "f");
        assert!(sa_entry.starts_with("t:user:userid:\n"));
        assert_eq!(key_from_entry("t:user:userid:", "9", ""), "t:user:userid:9");
        assert!(timeline_entry(&d, c).contains(SHARD_MARK));
    }

    #[test]
    fn index_and_type_keys() {
        let d = desc(Layout::Hash);
        let root = &sa("");
        assert_eq!(index_key(&d, root, "country", b"DE"), b"user:@country:DE");
        assert_eq!(index_zset(&d, &sa("t"), "country"), "t:user:@country");
        assert_eq!(ids_key(&d, root), "user:@ids");
        assert_eq!(expiry_key(&d, root), "user:@expiry");
        assert_eq!(owner_head(&d, root), "user:userid:");
        assert_eq!(presence_suffixes(&d, root), [""]);
        assert_eq!(
            presence_suffixes(&desc(Layout::Strings), root),
            ["", ":username"]
        );
        assert_eq!(entity_scan_pattern(&d, root), "user:userid:[^@]*");
        assert_eq!(index_scan_pattern(&d, root, "country"), "user:@country:*");
        assert_eq!(
            board_key(&d, root, "weekly", "2026-W48"),
            "user:@board:weekly:2026-W48"
        );
        assert_eq!(
            register_entry(&d, root, "follows"),
            "user:userid:\n\nfollows\n"
        );
        assert_eq!(timeline_entry(&d, &sa("t")), "@list\nt:user:userid:\n\n");
        // No member is an index family: members never start with `@`.
        assert_eq!(member_of_key(&d, root, "user:userid:@x"), None);

        // The cluster layout: braces around the member, none in index keys.
        let c = &cl("");
        assert_eq!(index_key(&d, c, "country", b"DE"), b"user:country:DE");
        assert_eq!(index_zset(&d, c, "score"), "user:score");
        assert_eq!(ids_key(&d, c), "user:@ids");
        assert_eq!(owner_head(&d, c), "user:userid:{");
        assert_eq!(
            presence_suffixes(&desc(Layout::Strings), c),
            ["}", "}:username"]
        );
        assert_eq!(entity_scan_pattern(&d, c), "user:userid:{*");
        assert_eq!(board_key(&d, c, "w", "1"), "user:board:w:1");
        let plain = EntityDesc {
            indexes: &[],
            ..desc(Layout::Hash)
        };
        assert_eq!(
            register_entry(&plain, c, "follows"),
            "user:userid:{\n}\nfollows\n"
        );
        // A type of one shard: its one space.
        let one = EntityDesc {
            shards: 1,
            ..desc(Layout::Hash)
        };
        assert_eq!(
            register_entry(&one, c, "follows"),
            "{user:0}:user:userid:\n\nfollows\n"
        );

        assert_eq!(cache_key("", "", "price:{1}"), "cache:{price%3A%7B1%7D}");
        assert_eq!(cache_key("t:", "a:b", "x"), "t:cache:a%3Ab:{x}");
        assert_eq!(cache_scan_pattern("", ""), "cache:{*");
        assert_eq!(cache_scan_pattern("", "prices"), "cache:prices:{*");
        assert_eq!(cache_lock_key("cache:{a}"), "cache:{a}:lock");
    }

    #[test]
    fn a_key_tail_follows_the_member() {
        let d = EntityDesc {
            key_pattern: "user:{<id>}:profile",
            key_head: "user:",
            key_tail: ":profile",
            ..desc(Layout::Hash)
        };
        let t = &sa("t");
        assert_eq!(entity_key(&d, t, "9"), "t:user:9:profile");
        assert_eq!(presence_suffixes(&d, t), [":profile"]);
        assert_eq!(
            member_of_key(&d, t, "t:user:9:profile").as_deref(),
            Some("9")
        );
        assert_eq!(
            member_of_key(&d, t, "t:user:9:profile:settings").as_deref(),
            Some("9")
        );
        assert_eq!(member_of_key(&d, t, "t:order:9"), None);
        assert_eq!(member_of_key(&d, t, "t:user:9"), None, "no tail");
        assert_eq!(member_of_key(&d, t, "t:user:9:profilex"), None);
        assert_eq!(
            register_entry(&d, t, "follows"),
            "t:user:\n:profile\nfollows\n"
        );

        let c = &cl("t");
        let d = EntityDesc { indexes: &[], ..d };
        assert_eq!(entity_key(&d, c, "9"), "t:user:{9}:profile");
        assert_eq!(presence_suffixes(&d, c), ["}:profile"]);
        assert_eq!(
            member_of_key(&d, c, "t:user:{9}:profile").as_deref(),
            Some("9")
        );
        assert_eq!(member_of_key(&d, c, "t:user:{9"), None);
        assert_eq!(
            register_entry(&d, c, "follows"),
            "t:user:{\n}:profile\nfollows\n"
        );

        // A tail that does not start with `:` begins inside the member's segment.
        let d = EntityDesc {
            key_pattern: "doc{<id>}x",
            key_head: "doc",
            key_tail: "x",
            ..desc(Layout::Hash)
        };
        assert_eq!(entity_key(&d, t, "7"), "t:doc7x");
        assert_eq!(member_of_key(&d, t, "t:doc7x").as_deref(), Some("7"));
        assert_eq!(
            member_of_key(&d, t, "t:doc7x:settings").as_deref(),
            Some("7")
        );
        assert_eq!(member_of_key(&d, t, "t:doc7"), None);

        // A composite pk joined by `:` spans as many segments.
        let d = EntityDesc {
            key_pattern: "red_package:{<a>:<b>:<c>}",
            key_head: "red_package:",
            key_tail: "",
            ..desc(Layout::Hash)
        };
        assert_eq!(
            member_of_key(&d, t, "t:red_package:1:2:3").as_deref(),
            Some("1:2:3")
        );
        assert_eq!(
            member_of_key(&d, t, "t:red_package:1:2:3:notes").as_deref(),
            Some("1:2:3")
        );
        assert_eq!(
            member_of_key(&d, &cl("t"), "t:red_package:{1:2:3}:notes").as_deref(),
            Some("1:2:3")
        );
    }

    #[test]
    fn the_ttl_key_is_one_that_lives_as_long_as_the_entity() {
        assert_eq!(ttl_key(&desc(Layout::Hash), &sa(""), "9"), "user:userid:9");
        assert_eq!(ttl_key(&desc(Layout::Json), &sa(""), "9"), "user:userid:9");
        // Strings without a required column lacking its own TTL: the marker.
        const OPTIONAL: &[ColumnDesc] = &[ColumnDesc {
            name: "code",
            rust_type: "Option<String>",
            optional: true,
            ttl: None,
            form: crate::schema::entity::ColumnForm::Text,
            alias: None,
        }];
        let d = EntityDesc {
            columns: OPTIONAL,
            ..desc(Layout::Strings)
        };
        assert_eq!(ttl_key(&d, &sa("t"), "9"), "t:user:userid:9");
        assert_eq!(presence_suffix(&d), "");
        assert_eq!(presence_suffix(&desc(Layout::Hash)), "");
        // A required column: the entity exists while it does.
        assert_eq!(presence_suffix(&desc(Layout::Strings)), ":username");
        // A column without a TTL of its own still shows that the entity exists.
        assert_eq!(presence_suffixes(&d, &sa("")), ["", ":code"]);
    }

    /// The keys of the fixtures, in the order the write functions take them.
    #[test]
    fn every_key_in_script_order() {
        use crate::schema::fixtures::{DOC, SESSION, USER};
        let user = keys_of_member(&USER, "9");
        let all: Vec<&str> = user.all().map(String::as_str).collect();
        assert_eq!(all, ["user:9", "user:9:prefs", "user:9:@shadow"]);
        assert!(user.columns.is_empty());

        let session = keys_of_member(&SESSION, "s1");
        let all: Vec<&str> = session.all().map(String::as_str).collect();
        assert_eq!(
            all,
            [
                "session:s1",
                "session:s1:user",
                "session:s1:code",
                "session:s1:hits",
                "session:s1:rev",
                "session:s1:@shadow"
            ]
        );

        // Without indexes there is no shadow.
        let doc = keys_of_member(&DOC, "d1");
        assert_eq!(doc.shadow, None);
        assert_eq!(doc.maps, ["doc:d1:notes"]);
    }

    /// An integer id's bucket is its text without the last two digits,
    /// for any `u64` or `i64`; a padded id has none (it stays in the one
    /// set, as no intset can hold its spelling).
    #[test]
    fn an_integer_ids_bucket_is_cut_from_its_text() {
        use crate::schema::fixtures::{SESSION, USER};
        let cases = [
            ("0", Some("xx")),
            ("7", Some("xx")),
            ("99", Some("xx")),
            ("100", Some("1xx")),
            ("1234", Some("12xx")),
            ("-5", Some("xx")),
            ("-123", Some("-1xx")),
            ("18446744073709551615", Some("184467440737095516xx")),
            ("-9223372036854775808", Some("-92233720368547758xx")),
            ("0035", None),
        ];
        for (member, bucket) in cases {
            assert_eq!(ids_bucket(member).as_deref(), bucket, "{member}");
        }
        assert!(bucketed_ids(&USER) && !bucketed_ids(&SESSION));
        assert_eq!(ids_directory("t:user:@ids"), "t:user:@ids:@buckets");
    }
}
