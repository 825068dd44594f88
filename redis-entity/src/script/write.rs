//! The write scripts: one per entity type and operation, composed from the
//! shared prelude, a header describing the type, and the operation's body.
//!
//! The header carries what used to travel with every call (the roles of the
//! entity's keys, its index descriptions and key prefixes), so a call sends
//! only what changes: the namespace, the member, the TTL, the new values and
//! the data commands. Scripts are built on first use and kept for the life
//! of the process; the server caches them by SHA1 like any other script.

use super::{lua_string, Script};
use crate::entity::{EntityDesc, IndexKind, IndexSource, Layout};
use crate::keyspace;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// What a write script does; one script per entity type and operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WriteOp {
    /// Upsert.
    Save,
    /// Create only; an existing entity is refused.
    Insert,
    /// Change an existing entity.
    Update,
    /// Like `Update`, and only if the JSON document is still the one read.
    Cas,
    /// Re-add every index entry the stored values need.
    Reindex,
    /// Remove the entity, its index entries and its relations.
    Delete,
    /// Give every key of an existing entity a TTL.
    Expire,
    /// Remove the TTL of every key of an existing entity.
    Persist,
    /// Remove index entries found stale.
    Clean,
    /// Unindex the entity if it has expired.
    Sweep,
}

impl WriteOp {
    /// The body and the flags it reads.
    fn body(self) -> (&'static str, &'static str) {
        const SAVE: &str = include_str!("lua/save.lua");
        const UPDATE: &str = include_str!("lua/update.lua");
        const LIFECYCLE: &str = include_str!("lua/lifecycle.lua");
        match self {
            WriteOp::Save => ("local INSERT = false\n", SAVE),
            WriteOp::Insert => ("local INSERT = true\n", SAVE),
            WriteOp::Update => ("local CAS, REINDEX = false, false\n", UPDATE),
            WriteOp::Cas => ("local CAS, REINDEX = true, false\n", UPDATE),
            WriteOp::Reindex => ("local CAS, REINDEX = false, true\n", UPDATE),
            WriteOp::Expire => ("local EXPIRE = true\n", LIFECYCLE),
            WriteOp::Persist => ("local EXPIRE = false\n", LIFECYCLE),
            WriteOp::Delete => ("", include_str!("lua/delete.lua")),
            WriteOp::Clean => ("", include_str!("lua/clean.lua")),
            WriteOp::Sweep => ("", include_str!("lua/sweep.lua")),
        }
    }
}

/// The write script of `desc` for `op`: one entity per call, or (`batch`)
/// many entities per call with a result each.
pub(crate) fn script(desc: &'static EntityDesc, op: WriteOp, batch: bool) -> &'static Script {
    type Registry = HashMap<(usize, WriteOp, bool), &'static Script>;
    static SCRIPTS: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);
    // Keyed by the description's address: two descriptions at one address
    // are the same, and one type seen at two addresses just builds the same
    // text twice.
    let id = (desc as *const EntityDesc as usize, op, batch);
    let mut scripts = SCRIPTS.lock().unwrap_or_else(|e| e.into_inner());
    scripts
        .entry(id)
        .or_insert_with(|| Box::leak(Box::new(Script::new(text(desc, op, batch)))))
}

/// The text of a write script.
pub(crate) fn text(desc: &EntityDesc, op: WriteOp, batch: bool) -> String {
    let (flags, body) = op.body();
    let mut s = header(desc);
    s.push_str(flags);
    s.push_str(include_str!("lua/write_prelude.lua"));
    s.push_str(body);
    s.push_str(if batch {
        include_str!("lua/batch.lua")
    } else {
        include_str!("lua/one.lua")
    });
    s
}

/// The roles of an entity's keys, in the order of [`crate::EntityKeys::all`]:
/// `p` its existence means the entity exists, `o` a column with a TTL of its
/// own, `d` other data (a `#[hash]` map), `s` the index shadow.
pub(crate) fn roles(desc: &EntityDesc) -> String {
    let mut roles = String::from("p");
    if desc.layout == Layout::Strings {
        for c in desc.columns {
            roles.push(if c.ttl.is_some() { 'o' } else { 'p' });
        }
    }
    roles.extend(std::iter::repeat_n('d', desc.maps.len()));
    if !desc.indexes.is_empty() {
        roles.push('s');
    }
    roles
}

/// Which presence marker the entity keeps: one is needed when every column
/// may be absent, or nothing would show that the entity exists.
fn marker(desc: &EntityDesc) -> &'static str {
    match desc.layout {
        Layout::Hash if desc.columns.iter().all(|c| c.optional) => "hash",
        Layout::Strings if !desc.columns.iter().any(|c| !c.optional && c.ttl.is_none()) => "string",
        _ => "none",
    }
}

/// The letter of an index kind in the header.
fn kind_code(kind: IndexKind) -> &'static str {
    match kind {
        IndexKind::Equality => "e",
        IndexKind::Unique => "u",
        IndexKind::Tags => "t",
        IndexKind::Prefix => "p",
        IndexKind::Sorted => "s",
    }
}

/// A Lua pattern matching one character of the escape alphabet.
fn escaped_class() -> String {
    let mut class = String::from("[");
    for c in crate::key::ALWAYS_ESCAPED.chars() {
        if "^$()%.[]*+-?".contains(c) {
            class.push('%');
        }
        class.push(c);
    }
    class.push(']');
    class
}

/// `local ESCAPED, T = ...`: the type's description in Lua.
fn header(desc: &EntityDesc) -> String {
    let q = |s: &str| lua_string(s.as_bytes());
    let roles = roles(desc);
    let mut idx = Vec::new();
    for i in desc.indexes {
        let (k, field, pk) = match (i.source, desc.layout) {
            (IndexSource::Pk, _) => (1, String::new(), true),
            (IndexSource::Column(c), Layout::Strings) => (2 + c, String::new(), false),
            (IndexSource::Column(c), _) => (1, desc.columns[c].name.to_owned(), false),
        };
        let key = match i.kind {
            IndexKind::Prefix | IndexKind::Sorted => keyspace::index_zset(desc, "", i.field),
            _ => keyspace::index_prefix(desc, "", i.field),
        };
        idx.push(format!(
            "{{ kind = {}, k = {k}, field = {}, pk = {pk}, key = {} }}",
            q(kind_code(i.kind)),
            q(&field),
            q(&key)
        ));
    }
    let numbers = |f: &dyn Fn(usize) -> bool| {
        (0..desc.indexes.len())
            .filter(|&n| f(n))
            .map(|n| (n + 1).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let version = match desc.version {
        Some(c) => match desc.layout {
            Layout::Strings => format!("{{ k = {}, field = \"\" }}", 2 + c),
            _ => format!("{{ k = 1, field = {} }}", q(desc.columns[c].name)),
        },
        None => "false".into(),
    };
    let suffixes = keyspace::presence_suffixes(desc)
        .iter()
        .map(|s| q(s))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "-- redis-entity write script for {type_name}.\n\
         local ESCAPED = {escaped}\n\
         local T = {{\n  roles = {roles_q}, shadow = {shadow}, marker = {marker},\n  \
         default_ttl = {ttl}, empty = {empty}, rel = {rel},\n  \
         ids = {ids}, expiry = {expiry}, head = {head}, suffixes = {{ {suffixes} }},\n  \
         idx = {{ {idx} }},\n  all = {{ {all} }}, unique = {{ {unique} }},\n  version = {version},\n}}\n",
        type_name = desc.type_name,
        escaped = q(&escaped_class()),
        roles_q = q(&roles),
        shadow = roles
            .find('s')
            .map_or("false".to_owned(), |i| (i + 1).to_string()),
        marker = q(marker(desc)),
        ttl = desc.ttl.unwrap_or(0) * 1000,
        empty = q(crate::key::EMPTY),
        rel = q(keyspace::RELATION_REGISTER_SUFFIX),
        ids = q(&keyspace::ids_key(desc, "")),
        expiry = q(&keyspace::expiry_key(desc, "")),
        head = q(&keyspace::owner_head(desc, "")),
        idx = idx.join(", "),
        all = numbers(&|_| true),
        unique = numbers(&|n| desc.indexes[n].kind == IndexKind::Unique),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_escape_class_covers_the_alphabet() {
        assert_eq!(escaped_class(), "[%%:{}%*%?%[%]\\]");
    }
}
