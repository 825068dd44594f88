//! A type's definition as the keyspace records it: the readable text of
//! everything that decides its keys and entries, its fingerprint, and the
//! differences between two definitions of one type, classified by what
//! they ask of the data already stored.
//!
//! The text is one line per item, in a fixed order:
//!
//! ```text
//! layout hash
//! key user:<id>
//! pk id numeric
//! column name : String
//! column nick optional : Option<String>
//! map settings : BTreeMap<String, String>
//! index name unique
//! version rev
//! ttl 3600
//! shards 1
//! ```
//!
//! [`fingerprint`] is FNV-1a (64-bit) of exactly that text, computed by a
//! `const fn` so that each derived type carries it as a constant
//! ([`crate::Entity`]'s `SCHEMA`): a store compares it with the recorded
//! one without building the text.

use crate::schema::entity::{ColumnForm, EntityDesc, IndexKind};
use std::fmt::Write as _;

/// The readable text of `E`'s definition (see the module docs).
///
/// ```
/// # use redis_entity::RedisEntity;
/// #[derive(RedisEntity)]
/// #[redis(prefix = "item")]
/// struct Item { #[pk] id: u64, #[index] color: String }
/// let text = redis_entity::evolution::describe::<Item>();
/// assert!(text.contains("index color equality\n"));
/// ```
pub fn describe<E: crate::schema::entity::Entity>() -> String {
    describe_desc(E::DESC)
}

/// The readable text of `desc`'s definition.
pub(crate) fn describe_desc(desc: &EntityDesc) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(s, "layout {}", desc.layout.name());
    let _ = writeln!(s, "key {}", desc.key_pattern);
    let _ = write!(s, "pk");
    for f in desc.pk_fields {
        let _ = write!(s, " {f}");
    }
    let _ = writeln!(s, "{}", if desc.numeric_pk { " numeric" } else { "" });
    for c in desc.columns {
        let _ = write!(s, "column {}", c.name);
        if c.optional {
            s.push_str(" optional");
        }
        if let Some(ttl) = c.ttl {
            let _ = write!(s, " ttl={ttl}");
        }
        if c.form != ColumnForm::Text {
            let _ = write!(s, " {}", c.form.name());
        }
        if let Some(a) = c.alias {
            let _ = write!(s, " alias={a}");
        }
        let _ = writeln!(s, " : {}", c.rust_type);
    }
    for m in desc.maps {
        let _ = writeln!(s, "map {} : {}", m.name, m.rust_type);
    }
    for i in desc.indexes {
        let _ = writeln!(s, "index {} {}", i.field, kind_name(i.kind));
    }
    if let Some(v) = desc.version {
        let _ = writeln!(s, "version {}", desc.columns[v].name);
    }
    if let Some(ttl) = desc.ttl {
        let _ = writeln!(s, "ttl {ttl}");
    }
    let _ = writeln!(s, "shards {}", desc.shards);
    if let Some(g) = desc.group {
        let _ = writeln!(s, "group {g}");
    }
    s
}

/// The name of an index kind in a definition (`equality`, `unique`, ...).
pub const fn kind_name(kind: IndexKind) -> &'static str {
    match kind {
        IndexKind::Equality => "equality",
        IndexKind::Unique => "unique",
        IndexKind::Tags => "tags",
        IndexKind::Prefix => "prefix",
        IndexKind::Sorted => "sorted",
    }
}

/// The index kind a definition names `name`.
pub(crate) fn kind_named(name: &str) -> Option<IndexKind> {
    Some(match name {
        "equality" => IndexKind::Equality,
        "unique" => IndexKind::Unique,
        "tags" => IndexKind::Tags,
        "prefix" => IndexKind::Prefix,
        "sorted" => IndexKind::Sorted,
        _ => return None,
    })
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over `bytes`, continuing from `h`.
const fn feed(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

const fn feed_str(h: u64, s: &str) -> u64 {
    feed(h, s.as_bytes())
}

/// `n` in decimal, as `write!` spells it.
const fn feed_number(h: u64, n: u64) -> u64 {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut rest = n;
    loop {
        digits[19 - len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut h = h;
    let mut i = 20 - len;
    while i < 20 {
        h ^= digits[i] as u64;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// The fingerprint of `desc`'s definition: FNV-1a (64-bit) of
/// [`describe`]'s text, computed at compile time for a derived type.
pub const fn fingerprint(desc: &EntityDesc) -> u64 {
    let mut h = FNV_OFFSET;
    h = feed_str(h, "layout ");
    h = feed_str(h, desc.layout.name());
    h = feed_str(h, "\nkey ");
    h = feed_str(h, desc.key_pattern);
    h = feed_str(h, "\npk");
    let mut i = 0;
    while i < desc.pk_fields.len() {
        h = feed_str(h, " ");
        h = feed_str(h, desc.pk_fields[i]);
        i += 1;
    }
    if desc.numeric_pk {
        h = feed_str(h, " numeric");
    }
    h = feed_str(h, "\n");
    i = 0;
    while i < desc.columns.len() {
        let c = &desc.columns[i];
        h = feed_str(h, "column ");
        h = feed_str(h, c.name);
        if c.optional {
            h = feed_str(h, " optional");
        }
        if let Some(ttl) = c.ttl {
            h = feed_str(h, " ttl=");
            h = feed_number(h, ttl);
        }
        if !matches!(c.form, ColumnForm::Text) {
            h = feed_str(h, " ");
            h = feed_str(h, c.form.name());
        }
        if let Some(a) = c.alias {
            h = feed_str(h, " alias=");
            h = feed_str(h, a);
        }
        h = feed_str(h, " : ");
        h = feed_str(h, c.rust_type);
        h = feed_str(h, "\n");
        i += 1;
    }
    i = 0;
    while i < desc.maps.len() {
        h = feed_str(h, "map ");
        h = feed_str(h, desc.maps[i].name);
        h = feed_str(h, " : ");
        h = feed_str(h, desc.maps[i].rust_type);
        h = feed_str(h, "\n");
        i += 1;
    }
    i = 0;
    while i < desc.indexes.len() {
        h = feed_str(h, "index ");
        h = feed_str(h, desc.indexes[i].field);
        h = feed_str(h, " ");
        h = feed_str(h, kind_name(desc.indexes[i].kind));
        h = feed_str(h, "\n");
        i += 1;
    }
    if let Some(v) = desc.version {
        h = feed_str(h, "version ");
        h = feed_str(h, desc.columns[v].name);
        h = feed_str(h, "\n");
    }
    if let Some(ttl) = desc.ttl {
        h = feed_str(h, "ttl ");
        h = feed_number(h, ttl);
        h = feed_str(h, "\n");
    }
    h = feed_str(h, "shards ");
    h = feed_number(h, desc.shards as u64);
    h = feed_str(h, "\n");
    if let Some(g) = desc.group {
        h = feed_str(h, "group ");
        h = feed_str(h, g);
        h = feed_str(h, "\n");
    }
    h
}

/// The fingerprint as the keyspace records it: 16 hex digits.
pub fn fingerprint_text(fp: u64) -> String {
    format!("{fp:016x}")
}

/// A stored column, as a definition's text names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The name in Redis.
    pub name: String,
    /// The Rust type.
    pub rust_type: String,
    /// Absence allowed.
    pub optional: bool,
    /// Per-column expiry in seconds.
    pub ttl: Option<u64>,
    /// How the value is written: `text`, `json` or `tags`.
    pub form: String,
    /// The name it was stored as before (`#[redis(alias)]`).
    pub alias: Option<String>,
}

/// A definition read back from its text: what [`diff`] compares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definition {
    /// `hash`, `strings` or `json`.
    pub layout: String,
    /// The entity key pattern.
    pub key: String,
    /// The pk fields (and ` numeric`).
    pub pk: String,
    /// The stored columns.
    pub columns: Vec<Column>,
    /// The `#[hash]` maps: (name, Rust type).
    pub maps: Vec<(String, String)>,
    /// The indexes: (field, kind).
    pub indexes: Vec<(String, IndexKind)>,
    /// The `#[version]` column.
    pub version: Option<String>,
    /// The default TTL in seconds.
    pub ttl: Option<u64>,
    /// Index shards on a cluster.
    pub shards: u16,
    /// The slot group on a cluster.
    pub group: Option<String>,
}

impl Definition {
    /// The definition of `desc`.
    pub(crate) fn of(desc: &EntityDesc) -> Definition {
        // One parser for both sides: what is compared is what is stored.
        Definition::parse(&describe_desc(desc)).unwrap_or_default()
    }

    /// Reads a definition's text; `None` for text no definition writes.
    pub fn parse(text: &str) -> Option<Definition> {
        let mut d = Definition::default();
        for line in text.lines().filter(|l| !l.is_empty()) {
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            match word {
                "layout" => d.layout = rest.to_owned(),
                "key" => d.key = rest.to_owned(),
                "pk" => d.pk = rest.to_owned(),
                "column" => {
                    let (head, rust_type) = rest.split_once(" : ")?;
                    let mut parts = head.split(' ');
                    let name = parts.next()?.to_owned();
                    let mut c = Column {
                        name,
                        rust_type: rust_type.to_owned(),
                        optional: false,
                        ttl: None,
                        form: "text".into(),
                        alias: None,
                    };
                    for p in parts {
                        if let Some(a) = p.strip_prefix("alias=") {
                            c.alias = Some(a.to_owned());
                            continue;
                        }
                        match p.strip_prefix("ttl=") {
                            Some(n) => c.ttl = Some(n.parse().ok()?),
                            None if p == "optional" => c.optional = true,
                            None if p == "json" || p == "tags" => c.form = p.to_owned(),
                            None => return None,
                        }
                    }
                    d.columns.push(c);
                }
                "map" => {
                    let (name, ty) = rest.split_once(" : ")?;
                    d.maps.push((name.to_owned(), ty.to_owned()));
                }
                "index" => {
                    let (field, kind) = rest.split_once(' ')?;
                    d.indexes.push((field.to_owned(), kind_named(kind)?));
                }
                "version" => d.version = Some(rest.to_owned()),
                "ttl" => d.ttl = Some(rest.parse().ok()?),
                "shards" => d.shards = rest.parse().ok()?,
                "group" => d.group = Some(rest.to_owned()),
                _ => return None,
            }
        }
        (!d.layout.is_empty() && !d.key.is_empty()).then_some(d)
    }

    /// The kind of index `field`, if the definition indexes it.
    pub fn index(&self, field: &str) -> Option<IndexKind> {
        self.indexes
            .iter()
            .find(|(f, _)| f == field)
            .map(|&(_, k)| k)
    }
}

/// What a difference between the recorded definition and the code's asks
/// of the data already stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Change {
    /// Nothing: stored data reads and writes as before (a new `Option`
    /// field, a dropped field, a new `#[hash]` map, another TTL).
    Compatible,
    /// An index the stored entities are not in yet (new, or of another
    /// kind): it is *building* until `schema apply` walked them.
    NeedsBuild,
    /// An index the code no longer has: `schema apply` deletes its keys.
    DropsIndex,
    /// The stored data does not fit the code (another layout, key, pk,
    /// shards or group, or a new required field): writes are refused until
    /// the data is moved (`relayout`, `migrate`) or the code changed.
    Incompatible,
}

/// One difference between two definitions of a type, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What it asks of the stored data.
    pub change: Change,
    /// What differs, and what applying does about it.
    pub what: String,
}

impl Change {
    /// The class in words (`compatible`, `needs a build`, `drops an
    /// index`, `incompatible`).
    pub fn label(self) -> &'static str {
        match self {
            Change::Compatible => "compatible",
            Change::NeedsBuild => "needs a build",
            Change::DropsIndex => "drops an index",
            Change::Incompatible => "incompatible",
        }
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.change.label(), self.what)
    }
}

/// The differences from the `stored` definition to the `code`'s, in a
/// stable order. `cluster`: shards and groups decide keys only there.
pub fn diff(stored: &Definition, code: &Definition, cluster: bool) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut push = |change, what: String| out.push(Difference { change, what });
    keys(stored, code, cluster, &mut push);
    columns(stored, code, &mut push);
    maps(stored, code, &mut push);
    indexes(stored, code, &mut push);
    settings(stored, code, &mut push);
    out
}

/// What decides the keys: layout, key template, pk, cluster placement.
fn keys(
    stored: &Definition,
    code: &Definition,
    cluster: bool,
    push: &mut impl FnMut(Change, String),
) {
    if stored.layout != code.layout {
        push(
            Change::Incompatible,
            format!(
                "layout changes from {} to {}: move the data with `migrate`",
                stored.layout, code.layout
            ),
        );
    }
    if stored.key != code.key {
        push(
            Change::Incompatible,
            format!(
                "key changes from `{}` to `{}`: move the data with `migrate`",
                stored.key, code.key
            ),
        );
    }
    if stored.pk != code.pk {
        push(
            Change::Incompatible,
            format!("pk changes from `{}` to `{}`", stored.pk, code.pk),
        );
    }
    if stored.shards != code.shards || stored.group != code.group {
        let what = format!(
            "cluster placement changes from {} shards{} to {} shards{}",
            stored.shards,
            group_words(&stored.group),
            code.shards,
            group_words(&code.group)
        );
        if cluster {
            push(
                Change::Incompatible,
                format!("{what}: move the data with `relayout`"),
            );
        } else {
            push(
                Change::Compatible,
                format!("{what} (one server: no key moves)"),
            );
        }
    }
    let sharded = |d: &Definition| !d.indexes.is_empty() || d.group.is_some();
    if cluster && sharded(stored) != sharded(code) {
        push(
            Change::Incompatible,
            format!(
                "the type {} indexes: on a cluster every key moves {} its index shards; \
                 move them with `reindex` while no old process writes",
                if sharded(code) {
                    "gains its first"
                } else {
                    "loses its last"
                },
                if sharded(code) { "into" } else { "out of" }
            ),
        );
    }
}

fn maps(stored: &Definition, code: &Definition, push: &mut impl FnMut(Change, String)) {
    for (name, ty) in &code.maps {
        if !stored.maps.iter().any(|(n, _)| n == name) {
            push(
                Change::Compatible,
                format!("`#[hash]` map `{name}` ({ty}) is new: stored entities read it as empty"),
            );
        }
    }
    for (name, _) in &stored.maps {
        if !code.maps.iter().any(|(n, _)| n == name) {
            push(
                Change::Compatible,
                format!("`#[hash]` map `{name}` is no longer read: its keys stay"),
            );
        }
    }
}

/// The `#[version]` column and the default TTL.
fn settings(stored: &Definition, code: &Definition, push: &mut impl FnMut(Change, String)) {
    if stored.version != code.version {
        push(
            Change::Compatible,
            format!(
                "`#[version]` column changes from {} to {}",
                name_or_none(&stored.version),
                name_or_none(&code.version)
            ),
        );
    }
    if stored.ttl != code.ttl {
        push(
            Change::Compatible,
            format!(
                "default TTL changes from {} to {} (entities stored keep theirs)",
                seconds(stored.ttl),
                seconds(code.ttl)
            ),
        );
    }
}

/// The renames from `stored` to `code`: (old name, new name) of each code
/// column whose alias `stored` has as a column, and its new name not.
pub(crate) fn renames(stored: &Definition, code: &Definition) -> Vec<(String, String)> {
    code.columns
        .iter()
        .filter_map(|c| {
            let old = c.alias.as_ref()?;
            let had_old = stored.columns.iter().any(|s| &s.name == old);
            let had_new = stored.columns.iter().any(|s| s.name == c.name);
            (had_old && !had_new).then(|| (old.clone(), c.name.clone()))
        })
        .collect()
}

fn columns(stored: &Definition, code: &Definition, push: &mut impl FnMut(Change, String)) {
    let renamed = renames(stored, code);
    for (old, new) in &renamed {
        push(
            Change::Compatible,
            format!(
                "field `{old}` is renamed `{new}`: records stored before read through the \
                 alias, and `schema apply` rewrites them"
            ),
        );
    }
    for c in &code.columns {
        if renamed.iter().any(|(_, new)| new == &c.name) {
            continue;
        }
        match stored.columns.iter().find(|s| s.name == c.name) {
            None if c.optional => push(
                Change::Compatible,
                format!(
                    "field `{}` ({}) is new: stored entities read it as absent",
                    c.name, c.rust_type
                ),
            ),
            None => push(
                Change::Incompatible,
                format!(
                    "field `{}` ({}) is new and required: entities stored without it do not \
                     decode; make it an `Option` or give it `#[redis(default)]`",
                    c.name, c.rust_type
                ),
            ),
            Some(s) => changed(s, c, push),
        }
    }
    for s in &stored.columns {
        if renamed.iter().any(|(old, _)| old == &s.name) {
            continue;
        }
        if !code.columns.iter().any(|c| c.name == s.name) {
            push(
                Change::Compatible,
                format!(
                    "field `{}` is no longer read: its stored values stay",
                    s.name
                ),
            );
        }
    }
}

/// What changed of one column stored before and kept.
fn changed(s: &Column, c: &Column, push: &mut impl FnMut(Change, String)) {
    if s.form != c.form {
        push(
            Change::Incompatible,
            format!(
                "field `{}` changes its stored form from {} to {}: stored values do \
                 not decode; move them with `migrate`",
                c.name, s.form, c.form
            ),
        );
    }
    if s.rust_type != c.rust_type {
        push(
            Change::Compatible,
            format!(
                "field `{}` changes type from {} to {}: stored values must decode \
                 as {} (`verify` reads every one)",
                c.name, s.rust_type, c.rust_type, c.rust_type
            ),
        );
    }
    if s.optional && !c.optional {
        push(
            Change::Incompatible,
            format!(
                "field `{}` becomes required: entities stored without it do not decode",
                c.name
            ),
        );
    }
    if s.ttl != c.ttl {
        push(
            Change::Compatible,
            format!(
                "field `{}`'s TTL changes from {} to {} (values stored keep theirs)",
                c.name,
                seconds(s.ttl),
                seconds(c.ttl)
            ),
        );
    }
}

fn indexes(stored: &Definition, code: &Definition, push: &mut impl FnMut(Change, String)) {
    for (field, kind) in &code.indexes {
        match stored.index(field) {
            None => push(
                Change::NeedsBuild,
                format!(
                    "index `{field}` ({}) is new: stored entities are indexed by `schema apply`",
                    kind_name(*kind)
                ),
            ),
            Some(old) if old != *kind => push(
                Change::NeedsBuild,
                format!(
                    "index `{field}` changes from {} to {}: `schema apply` deletes its keys and \
                     indexes stored entities again",
                    kind_name(old),
                    kind_name(*kind)
                ),
            ),
            Some(_) => {}
        }
    }
    for (field, kind) in &stored.indexes {
        if code.index(field).is_none() {
            push(
                Change::DropsIndex,
                format!(
                    "index `{field}` ({}) is gone: `schema apply` deletes its keys",
                    kind_name(*kind)
                ),
            );
        }
    }
}

fn group_words(g: &Option<String>) -> String {
    g.as_ref()
        .map(|g| format!(" in group `{g}`"))
        .unwrap_or_default()
}

fn name_or_none(n: &Option<String>) -> String {
    n.as_ref()
        .map(|n| format!("`{n}`"))
        .unwrap_or_else(|| "none".into())
}

fn seconds(s: Option<u64>) -> String {
    s.map(|s| format!("{s} s")).unwrap_or_else(|| "none".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures;

    fn fnv(text: &str) -> u64 {
        feed(FNV_OFFSET, text.as_bytes())
    }

    #[test]
    fn the_fingerprint_is_the_hash_of_the_text() {
        for desc in [
            &fixtures::USER,
            &fixtures::SESSION,
            &fixtures::DOC,
            &fixtures::ORDER,
            &fixtures::ACCOUNT,
        ] {
            assert_eq!(
                fingerprint(desc),
                fnv(&describe_desc(desc)),
                "{}",
                desc.type_name
            );
            assert_eq!(
                Definition::parse(&describe_desc(desc)),
                Some(Definition::of(desc))
            );
        }
        assert_eq!(fingerprint_text(0xab), "00000000000000ab");
    }

    #[test]
    fn the_text_names_every_part() {
        let text = describe_desc(&fixtures::USER);
        assert!(
            text.starts_with("layout hash\nkey user:{<id>}\npk id numeric\n"),
            "{text}"
        );
        assert!(text.contains("column email optional : String\n"), "{text}");
        assert!(text.contains("index username unique\n"), "{text}");
        assert!(text.contains("version version\n"), "{text}");
        assert!(
            text.contains("column tags optional tags : String\n"),
            "{text}"
        );
    }

    fn with(mut d: Definition, f: impl FnOnce(&mut Definition)) -> Definition {
        f(&mut d);
        d
    }

    fn changes(a: &Definition, b: &Definition) -> Vec<Change> {
        diff(a, b, false).into_iter().map(|d| d.change).collect()
    }

    #[test]
    fn differences_are_classified() {
        let user = Definition::of(&fixtures::USER);
        assert!(diff(&user, &user, true).is_empty());
        let new_optional = with(user.clone(), |d| {
            d.columns.push(Column {
                name: "nick".into(),
                rust_type: "Option<String>".into(),
                optional: true,
                ttl: None,
                form: "text".into(),
                alias: None,
            })
        });
        assert_eq!(changes(&user, &new_optional), [Change::Compatible]);
        // Dropping it again is compatible too.
        assert_eq!(changes(&new_optional, &user), [Change::Compatible]);
        let required = with(new_optional.clone(), |d| {
            d.columns.last_mut().unwrap().optional = false
        });
        assert_eq!(changes(&user, &required), [Change::Incompatible]);
        let indexed = with(user.clone(), |d| {
            d.indexes.push(("zone".into(), IndexKind::Equality))
        });
        let found = diff(&user, &indexed, false);
        assert_eq!(found[0].change, Change::NeedsBuild);
        assert!(
            found[0].what.contains("index `zone` (equality) is new"),
            "{}",
            found[0]
        );
        assert_eq!(changes(&indexed, &user), [Change::DropsIndex]);
        let rekinded = with(user.clone(), |d| d.indexes[1].1 = IndexKind::Unique);
        assert_eq!(changes(&user, &rekinded), [Change::NeedsBuild]);
        let renamed = with(user.clone(), |d| {
            d.columns[1].name = "land".into();
            d.columns[1].alias = Some("country".into());
        });
        let found = diff(&user, &renamed, false);
        assert_eq!(found[0].change, Change::Compatible, "{found:?}");
        assert!(
            found[0].what.contains("`country` is renamed `land`"),
            "{}",
            found[0]
        );
        assert_eq!(
            renames(&user, &renamed),
            [("country".into(), "land".into())]
        );
        let reformed = with(user.clone(), |d| d.columns[0].form = "json".into());
        assert_eq!(changes(&user, &reformed), [Change::Incompatible]);
        let json = with(user.clone(), |d| d.layout = "json".into());
        assert_eq!(changes(&user, &json), [Change::Incompatible]);
        let sharded = with(user.clone(), |d| d.shards = 8);
        assert_eq!(changes(&user, &sharded), [Change::Compatible]);
        assert_eq!(
            diff(&user, &sharded, true)[0].change,
            Change::Incompatible,
            "shards move keys on a cluster"
        );
        let bare = with(user.clone(), |d| d.indexes.clear());
        assert_eq!(changes(&bare, &user).len(), 5, "five indexes to build");
        assert_eq!(
            diff(&bare, &user, true)[0].change,
            Change::Incompatible,
            "the first index moves keys into shards on a cluster"
        );
    }

    #[test]
    fn text_no_definition_writes_is_refused() {
        assert_eq!(Definition::parse(""), None);
        assert_eq!(
            Definition::parse("layout hash\nkey k\nindex a nope\n"),
            None
        );
        assert_eq!(Definition::parse("layout hash\nkey k\nshape round\n"), None);
    }
}
