//! The write functions: one Redis function library per entity type, with
//! one function per operation (and a batch form of each), composed from a
//! header describing the type, the shared prelude, and one body per
//! operation.
//!
//! The header carries what would otherwise travel with every call (the
//! roles of the entity's keys, its index descriptions and key prefixes), and
//! the library is set up once per server, so a call sends only what changes
//! (the namespace, the member, the TTL, the new values and the data
//! commands) and pays only for its own work. Libraries are built on first
//! use and kept for the life of the process.

use super::{lua_string, Library, Script};
use crate::keyspace;
use crate::schema::entity::{EntityDesc, IndexKind, IndexSource, Layout};
use crate::schema::escape::{KeyLayout, Namespace};
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
    const ALL: [WriteOp; 10] = [
        WriteOp::Save,
        WriteOp::Insert,
        WriteOp::Update,
        WriteOp::Cas,
        WriteOp::Reindex,
        WriteOp::Delete,
        WriteOp::Expire,
        WriteOp::Persist,
        WriteOp::Clean,
        WriteOp::Sweep,
    ];

    /// The operation's name in function names.
    fn name(self) -> &'static str {
        match self {
            WriteOp::Save => "save",
            WriteOp::Insert => "insert",
            WriteOp::Update => "update",
            WriteOp::Cas => "cas",
            WriteOp::Reindex => "reindex",
            WriteOp::Delete => "delete",
            WriteOp::Expire => "expire",
            WriteOp::Persist => "persist",
            WriteOp::Clean => "clean",
            WriteOp::Sweep => "sweep",
        }
    }

    /// True for an operation that only removes (an entity, the index
    /// entries of one gone or expired): its functions are flagged
    /// `allow-oom`, so that memory can be freed through the library when
    /// the server is at its `maxmemory` (a function without the flag is
    /// refused there before it runs). The request record of a write with
    /// a token is the only thing they add.
    fn frees_memory(self) -> bool {
        matches!(self, WriteOp::Delete | WriteOp::Clean | WriteOp::Sweep)
    }

    /// The body function that runs the operation, and its flags.
    fn body_call(self) -> (&'static str, &'static str) {
        match self {
            WriteOp::Save => ("save", "false"),
            WriteOp::Insert => ("save", "true"),
            WriteOp::Update => ("update", "false, false"),
            WriteOp::Cas => ("update", "true, false"),
            WriteOp::Reindex => ("update", "false, true"),
            WriteOp::Expire => ("lifecycle", "true"),
            WriteOp::Persist => ("lifecycle", "false"),
            WriteOp::Delete => ("delete", "nil"),
            WriteOp::Clean => ("clean", "nil"),
            WriteOp::Sweep => ("sweep", "nil"),
        }
    }
}

/// The bodies, in library order.
const BODIES: [&str; 6] = [
    include_str!("lua/save.lua"),
    include_str!("lua/update.lua"),
    include_str!("lua/lifecycle.lua"),
    include_str!("lua/delete.lua"),
    include_str!("lua/clean.lua"),
    include_str!("lua/sweep.lua"),
];

/// The function of `desc`'s library for `op`: one entity per call, or
/// (`batch`) many entities per call with a result each.
pub(crate) fn script(
    desc: &'static EntityDesc,
    layout: KeyLayout,
    op: WriteOp,
    batch: bool,
) -> &'static Script {
    function(desc, layout, (op, batch, false))
}

/// The straight-line function of `desc`'s library for `op` (script/fast.rs),
/// if the type and the operation have one: it takes the compact call of
/// `script::args::FastWrite`, for a write that needs none of the general
/// code's other arguments.
pub(crate) fn fast_script(
    desc: &'static EntityDesc,
    layout: KeyLayout,
    op: WriteOp,
    batch: bool,
) -> Option<&'static Script> {
    if !FAST_OPS.contains(&op) || !super::fast::covers(desc) {
        return None;
    }
    Some(function(desc, layout, (op, batch, true)))
}

/// The function of `desc`'s library for (operation, batch form,
/// straight-line form); the library is built on first use.
fn function(
    desc: &'static EntityDesc,
    layout: KeyLayout,
    which: (WriteOp, bool, bool),
) -> &'static Script {
    /// One library's functions, at [`slot`].
    type Functions = [Option<&'static Script>; SLOTS];
    const SLOTS: usize = WriteOp::ALL.len() * 4;
    /// The place of (operation, batch, straight-line) in [`Functions`]:
    /// by the operation's place in `WriteOp::ALL`, which the library
    /// registers (an operation missing there has no function).
    fn slot((op, batch, fast): (WriteOp, bool, bool)) -> Option<usize> {
        let at = WriteOp::ALL.iter().position(|o| *o == op)?;
        Some(at * 4 + usize::from(batch) * 2 + usize::from(fast))
    }
    // Every write looks its function up (once or twice): a short list of
    // the types seen, searched by the description's address, and the
    // function by its place, cost less than two hashed maps did (SipHash
    // of each key: about 500 instructions per write).
    static LIBRARIES: Mutex<Vec<(usize, KeyLayout, &'static Functions)>> = Mutex::new(Vec::new());
    // Keyed by the description's address: two descriptions at one address
    // are the same, and one type seen at two addresses just builds the same
    // library twice.
    let address = desc as *const EntityDesc as usize;
    let mut libraries = LIBRARIES.lock().unwrap_or_else(|e| e.into_inner());
    let found = libraries
        .iter()
        .find(|(a, l, _)| *a == address && *l == layout)
        .map(|(_, _, f)| *f);
    let functions = match found {
        Some(f) => f,
        None => {
            let (library, name) = Library::new(&code(desc, layout));
            let library: &'static Library = Box::leak(Box::new(library));
            let mut functions: Functions = [None; SLOTS];
            for op in WriteOp::ALL {
                for batch in [false, true] {
                    let f = Script::function(library, function_name(&name, op, batch));
                    if let Some(at) = slot((op, batch, false)) {
                        functions[at] = Some(&*Box::leak(Box::new(f)));
                    }
                }
            }
            if super::fast::covers(desc) {
                for op in FAST_OPS {
                    for batch in [false, true] {
                        let f = Script::function(library, fast_function_name(&name, op, batch));
                        if let Some(at) = slot((op, batch, true)) {
                            functions[at] = Some(&*Box::leak(Box::new(f)));
                        }
                    }
                }
            }
            let functions: &'static Functions = Box::leak(Box::new(functions));
            libraries.push((address, layout, functions));
            functions
        }
    };
    slot(which)
        .and_then(|at| functions[at])
        .expect("every write function of the library is registered")
}

fn function_name(library: &str, op: WriteOp, batch: bool) -> String {
    format!(
        "{library}_{}{}",
        op.name(),
        if batch { "_batch" } else { "" }
    )
}

/// The code of `desc`'s library (without its `#!lua` line): header,
/// prelude, bodies, and the registration of one function per operation.
/// The registered names start with `__LIB__`, which [`Library::new`]
/// replaces by the library's name. For a type the straight-line code
/// covers, the general code is a string compiled on its first call
/// (lua/general_loader.lua): most writes never run it.
pub(crate) fn code(desc: &EntityDesc, layout: KeyLayout) -> String {
    let mut s = header(desc, layout);
    let fast = super::fast::covers(desc);
    if fast {
        s.push_str(include_str!("lua/key_types.lua"));
        s.push_str(include_str!("lua/write_shared.lua"));
        s.push_str(include_str!("lua/fast.lua"));
        s.push_str(&super::fast::fast_change(desc, layout));
        s.push_str(include_str!("lua/fast_general.lua"));
        s.push_str("\nlocal GENERAL_CODE = ");
        s.push_str(&long_string(&general_chunk()));
        s.push('\n');
        s.push_str(include_str!("lua/general_loader.lua"));
        s.push_str(include_str!("lua/fast_entry.lua"));
    } else {
        s.push_str(&general_code());
    }
    s.push_str("\n-- One function per operation, and a batch form of each.\n");
    for op in WriteOp::ALL {
        let (body, flags) = op.body_call();
        for batch in [false, true] {
            let name = function_name("__LIB__", op, batch);
            let run = match (batch, fast) {
                (true, false) => format!("return batch({body}, k, a, {flags})"),
                (false, false) => format!("return once({body}, k, a, 1, #a, {flags})"),
                (true, true) => {
                    format!("local G = general() return G.batch(G.{body}, k, a, {flags})")
                }
                (false, true) => {
                    format!("local G = general() return G.once(G.{body}, k, a, 1, #a, {flags})")
                }
            };
            s.push_str(&registration(&name, &run, op.frees_memory()));
        }
    }
    if fast {
        for op in FAST_OPS {
            let mode = op.name();
            for batch in [false, true] {
                let name = fast_function_name("__LIB__", op, batch);
                let run = if batch {
                    format!("return fast_batch(k, a, '{mode}')")
                } else {
                    // fast_change called here, not through a helper:
                    // one Lua call fewer per write (about 1,000 server
                    // instructions, benches/NOTES.md).
                    format!(
                        "local d = fast_change(k, a, 1, #a, '{mode}') \
                         if d ~= nil then return d end \
                         return fast_fallback(k, a, 1, #a, '{mode}')"
                    )
                };
                s.push_str(&format!(
                    "redis.register_function('{name}', function(k, a) {run} end)\n"
                ));
            }
        }
    }
    s
}

/// The registration of function `name` running `run`; `allow_oom`: it
/// may run while the server is out of memory.
fn registration(name: &str, run: &str, allow_oom: bool) -> String {
    if allow_oom {
        format!(
            "redis.register_function{{function_name='{name}', callback=function(k, a) {run} end, flags={{'allow-oom'}}}}\n"
        )
    } else {
        format!("redis.register_function('{name}', function(k, a) {run} end)\n")
    }
}

/// The general write code: the key types' checks, the shared helpers, the
/// prelude, the batch loop and the bodies, which every call of a type the
/// straight-line code does not cover runs.
fn general_code() -> String {
    let mut s = String::new();
    s.push_str(include_str!("lua/key_types.lua"));
    s.push_str(include_str!("lua/write_shared.lua"));
    s.push_str(include_str!("lua/slot_tag.lua"));
    s.push_str(include_str!("lua/write_prelude.lua"));
    s.push_str(include_str!("lua/batch.lua"));
    for body in BODIES {
        s.push_str(body);
    }
    s
}

/// The general code as a chunk compiled on first use (lua/general_loader.lua):
/// it takes the type's `T` and `ESCAPED` and returns the entry points the
/// registered functions and `fast_fallback` call.
fn general_chunk() -> String {
    // The bodies the registered functions name (`WriteOp::body_call`),
    // and the two ways they are run.
    let mut entries = vec!["once", "batch"];
    for op in WriteOp::ALL {
        let body = op.body_call().0;
        if !entries.contains(&body) {
            entries.push(body);
        }
    }
    let fields: Vec<String> = entries.iter().map(|e| format!("{e} = {e}")).collect();
    format!(
        "local T, ESCAPED = ...\n{}\nreturn {{ {} }}\n",
        general_code(),
        fields.join(", ")
    )
}

/// `text` as a Lua long string: brackets of a level whose closing the text
/// does not hold, at least 1 (Lua 5.1 refuses `[[` inside a string of
/// level 0), and a newline before the closing (a text ending in `]=` would
/// otherwise close early). A newline right after the opening bracket is
/// not part of the string.
fn long_string(text: &str) -> String {
    let level = (1..)
        .map(|n| "=".repeat(n))
        .find(|eq| !text.contains(&format!("]{eq}]")))
        .expect("some level of brackets is not in the text");
    format!("[{level}[\n{text}\n]{level}]")
}

/// The operations with a straight-line form (script/fast.rs).
const FAST_OPS: [WriteOp; 3] = [WriteOp::Save, WriteOp::Insert, WriteOp::Update];

fn fast_function_name(library: &str, op: WriteOp, batch: bool) -> String {
    format!(
        "{library}_fast_{}{}",
        op.name(),
        if batch { "_batch" } else { "" }
    )
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
    for c in crate::schema::escape::ALWAYS_ESCAPED.chars() {
        if "^$()%.[]*+-?".contains(c) {
            class.push('%');
        }
        class.push(c);
    }
    class.push(']');
    class
}

/// `local ESCAPED, T = ...`: the type's description in Lua.
fn header(desc: &EntityDesc, layout: KeyLayout) -> String {
    format!(
        "-- redis-entity: the write functions of {}.\nlocal ESCAPED = {}\nlocal T = {}\n",
        desc.type_name,
        lua_string(escaped_class().as_bytes()),
        type_table(desc, layout)
    )
}

/// The unit of work function over `types` (lua/unit.lua): a library of
/// their descriptions (`TYPES`, in this order, each in the key layout its
/// writes spell keys in: a grouped or sharded type on a cluster spells its
/// keys as on one server inside its slot's tag; `T` is the one of the
/// operation running), the prelude, the bodies and the steps of relations,
/// timelines and boards. One library per list of types, built once.
pub(crate) fn unit_script(types: &[(&'static EntityDesc, KeyLayout)]) -> &'static Script {
    type Registry = HashMap<Vec<(usize, KeyLayout)>, &'static Script>;
    static UNITS: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);
    let id = types
        .iter()
        .map(|(d, layout)| (*d as *const EntityDesc as usize, *layout))
        .collect();
    let mut units = UNITS.lock().unwrap_or_else(|e| e.into_inner());
    units.entry(id).or_insert_with(|| {
        let (library, name) = Library::new(&unit_code(types));
        let library: &'static Library = Box::leak(Box::new(library));
        Box::leak(Box::new(Script::function(library, format!("{name}_unit"))))
    })
}

fn unit_code(types: &[(&EntityDesc, KeyLayout)]) -> String {
    let names: Vec<&str> = types.iter().map(|(d, _)| d.type_name).collect();
    let mut s = format!(
        "-- redis-entity: units of work over {}.\nlocal ESCAPED = {}\nlocal TYPES = {{\n",
        names.join(", "),
        lua_string(escaped_class().as_bytes())
    );
    for (d, layout) in types {
        s.push_str(&type_table(d, *layout));
        s.push_str(",\n");
    }
    s.push_str("}\nlocal T = TYPES[1]\n");
    s.push_str(include_str!("lua/key_types.lua"));
    s.push_str(include_str!("lua/write_shared.lua"));
    s.push_str(include_str!("lua/slot_tag.lua"));
    s.push_str(include_str!("lua/write_prelude.lua"));
    for body in BODIES {
        s.push_str(body);
    }
    s.push_str(include_str!("lua/steps.lua"));
    s.push_str(&unit_fast_code(types));
    s.push_str(include_str!("lua/unit.lua"));
    s.push_str("redis.register_function('__LIB___unit', function(k, a) return unit(k, a) end)\n");
    s
}

/// `FAST[n]`: the straight-line write (script/fast.rs) of the unit
/// library's `n`th type as a unit operation (`unit`, its checks, and
/// `write`) and the general code's arguments for the writes it leaves
/// there (`general`), for each type [`super::fast::covers`] covers; each
/// in its own block, as each type's tables have the same names.
fn unit_fast_code(types: &[(&EntityDesc, KeyLayout)]) -> String {
    let mut s = String::from("local FAST = {}\n");
    if !types.iter().any(|(d, _)| super::fast::covers(d)) {
        return s;
    }
    s.push_str(include_str!("lua/fast.lua"));
    for (n, (d, layout)) in types.iter().enumerate() {
        if super::fast::covers(d) {
            s.push_str("do\n");
            s.push_str(&super::fast::fast_unit(d, *layout));
            s.push_str(include_str!("lua/fast_general.lua"));
            s.push_str(&format!(
                "FAST[{}] = {{ unit = fast_unit, write = fast_unit_write, general = fast_general }}\nend\n",
                n + 1
            ));
        }
    }
    s
}

/// The description of an entity type as the write functions read it (`T`).
fn type_table(desc: &EntityDesc, layout: KeyLayout) -> String {
    let q = |s: &str| lua_string(s.as_bytes());
    let ns = &Namespace::none().in_layout(layout);
    let roles = roles(desc);
    let mut idx = Vec::new();
    for i in desc.indexes {
        let (k, field, pk) = match (i.source, desc.layout) {
            (IndexSource::Pk, _) => (1, String::new(), true),
            (IndexSource::Column(c), Layout::Strings) => (2 + c, String::new(), false),
            (IndexSource::Column(c), _) => (1, desc.columns[c].name.to_owned(), false),
        };
        let key = match i.kind {
            IndexKind::Prefix | IndexKind::Sorted => keyspace::index_zset(desc, ns, i.field),
            _ => keyspace::index_prefix(desc, ns, i.field),
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
    let suffixes = keyspace::presence_suffixes(desc, ns)
        .iter()
        .map(|s| q(s))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{{\n  roles = {roles_q}, shadow = {shadow}, marker = {marker},\n  \
         default_ttl = {ttl}, empty = {empty}, rel = {rel},\n  \
         request = {request}, request_ms = {request_ms},\n  \
         ids = {ids}, idb = {idb}, expiry = {expiry}, head = {head}, suffixes = {{ {suffixes} }},\n  \
         idx = {{ {idx} }},\n  all = {{ {all} }}, unique = {{ {unique} }},\n  version = {version},\n}}",
        roles_q = q(&roles),
        shadow = roles
            .find('s')
            .map_or("false".to_owned(), |i| (i + 1).to_string()),
        marker = q(marker(desc)),
        ttl = desc.ttl.unwrap_or(0) * 1000,
        empty = q(crate::schema::escape::EMPTY),
        rel = q(keyspace::RELATION_REGISTER_SUFFIX),
        request = q(keyspace::REQUEST_SUFFIX),
        request_ms = keyspace::REQUEST_WINDOW_MS,
        ids = q(&keyspace::ids_key(desc, ns)),
        idb = keyspace::bucketed_ids(desc),
        expiry = q(&keyspace::expiry_key(desc, ns)),
        head = q(&keyspace::owner_head(desc, ns)),
        idx = idx.join(", "),
        all = numbers(&|_| true),
        unique = numbers(&|n| desc.indexes[n].kind == IndexKind::Unique),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::entity::{ColumnDesc, IndexDesc};
    use crate::schema::fixtures::{DOC, ORDER, SESSION, USER};

    #[test]
    fn the_escape_class_covers_the_alphabet() {
        assert_eq!(escaped_class(), "[%%:{}%*%?%[%]\\]");
    }

    #[test]
    fn the_plain_values_esc_keeps_without_a_search_need_no_escape() {
        // lua/write_shared.lua `PLAIN`: `%w` (ASCII letters and digits in
        // the server's C locale) and these marks.
        let shared = include_str!("lua/write_shared.lua");
        assert!(shared.contains("local PLAIN = '^[%w_%-%.@ ]*$'"));
        let plain = ('a'..='z')
            .chain('A'..='Z')
            .chain('0'..='9')
            .chain("_-.@ ".chars());
        for c in plain {
            assert!(!crate::schema::escape::ALWAYS_ESCAPED.contains(c), "{c:?}");
        }
    }

    /// The header's line that starts with `  <name> = `.
    fn line<'h>(header: &'h str, start: &str) -> &'h str {
        header
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in\n{header}"))
            .trim()
    }

    #[test]
    fn a_hash_header_describes_keys_indexes_and_version() {
        let h = header(&USER, KeyLayout::Standalone);
        assert!(h.starts_with("-- redis-entity: the write functions of User.\n"));
        assert_eq!(
            line(&h, "roles"),
            r#"roles = "pds", shadow = 3, marker = "none","#
        );
        assert_eq!(
            line(&h, "default_ttl"),
            r#"default_ttl = 0, empty = "%_", rel = ":@rel","#
        );
        assert_eq!(
            line(&h, "ids"),
            r#"ids = "user:@ids", idb = true, expiry = "user:@expiry", head = "user:", suffixes = { "" },"#
        );
        assert_eq!(
            line(&h, "idx"),
            concat!(
                r#"idx = { { kind = "u", k = 1, field = "username", pk = false, key = "user:@username:" }, "#,
                r#"{ kind = "e", k = 1, field = "country", pk = false, key = "user:@country:" }, "#,
                r#"{ kind = "s", k = 1, field = "rating", pk = false, key = "user:@rating" }, "#,
                r#"{ kind = "p", k = 1, field = "email", pk = false, key = "user:@email" }, "#,
                r#"{ kind = "t", k = 1, field = "tags", pk = false, key = "user:@tags:" } },"#,
            )
        );
        assert_eq!(line(&h, "all"), "all = { 1, 2, 3, 4, 5 }, unique = { 1 },");
        assert_eq!(
            line(&h, "version"),
            r#"version = { k = 1, field = "version" },"#
        );
    }

    #[test]
    fn a_strings_header_gives_each_column_its_key_and_role() {
        assert_eq!(roles(&SESSION), "ppopps");
        let h = header(&SESSION, KeyLayout::Standalone);
        assert_eq!(
            line(&h, "roles"),
            r#"roles = "ppopps", shadow = 6, marker = "none","#
        );
        assert!(line(&h, "default_ttl").starts_with("default_ttl = 3600000,"));
        assert!(line(&h, "ids").ends_with(r#"suffixes = { "", ":user", ":hits", ":rev" },"#));
        assert_eq!(
            line(&h, "idx"),
            r#"idx = { { kind = "e", k = 2, field = "", pk = false, key = "session:@user:" } },"#
        );
        assert_eq!(line(&h, "all"), "all = { 1 }, unique = {  },");
        assert_eq!(line(&h, "version"), r#"version = { k = 5, field = "" },"#);
    }

    #[test]
    fn pk_indexes_and_unindexed_types() {
        let h = header(&ORDER, KeyLayout::Standalone);
        assert_eq!(roles(&ORDER), "ps");
        assert!(line(&h, "idx").starts_with(
            r#"idx = { { kind = "e", k = 1, field = "", pk = true, key = "order:@shop:" }, "#
        ));
        assert_eq!(line(&h, "version"), "version = false,");

        let h = header(&DOC, KeyLayout::Standalone);
        assert_eq!(
            line(&h, "roles"),
            r#"roles = "pd", shadow = false, marker = "none","#
        );
        assert_eq!(line(&h, "idx"), "idx = {  },");
    }

    #[test]
    fn a_marker_is_kept_when_no_column_shows_the_entity_exists() {
        const OPTIONAL: &[ColumnDesc] = &[ColumnDesc {
            name: "note",
            rust_type: "Option<String>",
            optional: true,
            ttl: None,
            form: crate::schema::entity::ColumnForm::Text,
            alias: None,
        }];
        const WITH_TTL: &[ColumnDesc] = &[ColumnDesc {
            name: "code",
            rust_type: "String",
            optional: false,
            ttl: Some(5),
            form: crate::schema::entity::ColumnForm::Text,
            alias: None,
        }];
        assert_eq!(marker(&USER), "none");
        assert_eq!(marker(&SESSION), "none");
        assert_eq!(marker(&DOC), "none");
        let hash = EntityDesc {
            columns: OPTIONAL,
            ..ORDER
        };
        assert_eq!(marker(&hash), "hash");
        for columns in [OPTIONAL, WITH_TTL] {
            let strings = EntityDesc { columns, ..SESSION };
            assert_eq!(marker(&strings), "string");
        }
        assert!(header(&hash, KeyLayout::Standalone).contains(r#"marker = "hash""#));
    }

    #[test]
    fn every_operation_has_a_function_and_a_batch_form() {
        assert_eq!(function_name("lib", WriteOp::Update, false), "lib_update");
        assert_eq!(
            function_name("lib", WriteOp::Sweep, true),
            "lib_sweep_batch"
        );
        let code = code(&USER, KeyLayout::Standalone);
        // 10 operations and their batch forms, and the straight-line save,
        // insert and update (a hash-layout type) and theirs; the removing
        // ones (delete, clean, sweep) in the form that takes flags.
        assert_eq!(code.matches("redis.register_function(").count(), 20);
        assert_eq!(code.matches("redis.register_function{").count(), 6);
        assert_eq!(code.matches("flags={'allow-oom'}").count(), 6);
        assert!(code.contains(
            "redis.register_function{function_name='__LIB___delete', callback=function(k, a) local G = general() return G.once(G.delete, k, a, 1, #a, nil) end, flags={'allow-oom'}}"
        ));
        assert!(code.contains(
            "redis.register_function('__LIB___fast_update_batch', function(k, a) return fast_batch(k, a, 'update') end)"
        ));
        assert!(fast_script(&USER, KeyLayout::Standalone, WriteOp::Save, false).is_some());
        assert!(fast_script(&USER, KeyLayout::Standalone, WriteOp::Delete, false).is_none());
        // A strings-layout type has none.
        let strings = super::code(&SESSION, KeyLayout::Standalone);
        assert_eq!(strings.matches("redis.register_function(").count(), 14);
        assert_eq!(strings.matches("flags={'allow-oom'}").count(), 6);
        assert!(fast_script(&SESSION, KeyLayout::Standalone, WriteOp::Save, false).is_none());
        assert!(strings.contains(
            "redis.register_function('__LIB___insert', function(k, a) return once(save, k, a, 1, #a, true) end)"
        ));
        assert!(strings.contains(
            "redis.register_function('__LIB___cas_batch', function(k, a) return batch(update, k, a, true, false) end)"
        ));
        // A type the straight-line code covers reaches the general code
        // through `general()`, compiled on first use.
        assert!(code.contains(
            "redis.register_function('__LIB___insert', function(k, a) local G = general() return G.once(G.save, k, a, 1, #a, true) end)"
        ));
        assert!(code.contains(
            "redis.register_function('__LIB___cas_batch', function(k, a) local G = general() return G.batch(G.update, k, a, true, false) end)"
        ));

        let (_, library) = Library::new(&code);
        for op in WriteOp::ALL {
            for batch in [false, true] {
                let f = script(&USER, KeyLayout::Standalone, op, batch);
                // One function object per (type, op, form), built once.
                assert!(std::ptr::eq(
                    f,
                    script(&USER, KeyLayout::Standalone, op, batch)
                ));
                match &f.kind {
                    super::super::Kind::Function { name, library: l } => {
                        assert_eq!(*name, function_name(&library, op, batch));
                        assert!(l.text.starts_with(&format!("#!lua name={library}\n")));
                        assert!(!l.text.contains("__LIB__"));
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_covered_type_compiles_its_general_code_on_first_use() {
        let code = code(&USER, KeyLayout::Standalone);
        let start = code
            .find("local GENERAL_CODE = [")
            .expect("the general code as a string");
        let (eager, string) = code.split_at(start);
        // Outside the string, only what the straight-line write runs.
        assert!(eager.contains("local function fast_change("));
        assert!(eager.contains("local function esc("));
        for general in [
            "local function begin(",
            "local function update(",
            "local function batch(",
        ] {
            assert!(!eager.contains(general), "{general} is compiled at load");
            assert!(
                string.contains(general),
                "{general} is not in the general code"
            );
        }
        let after = &string[string.find("return { once = once").unwrap()..];
        assert!(after.contains("local function general()"));
        // A type without the straight-line form keeps it all compiled.
        let strings = super::code(&SESSION, KeyLayout::Standalone);
        assert!(!strings.contains("GENERAL_CODE"));
        assert!(strings.contains("local function update("));
    }

    #[test]
    fn a_long_string_closes_at_a_level_its_text_does_not_hold() {
        assert_eq!(long_string("a"), "[=[\na\n]=]");
        assert_eq!(long_string("a[[b]]"), "[=[\na[[b]]\n]=]");
        assert_eq!(long_string("x]]y]=]"), "[==[\nx]]y]=]\n]==]");
        // Closed after a newline: `x]=` then `]=]` would close at `]=]` early.
        assert_eq!(long_string("x]="), "[=[\nx]=\n]=]");
    }

    #[test]
    fn the_library_name_follows_the_code() {
        let name = |d: &EntityDesc| Library::new(&code(d, KeyLayout::Standalone)).1;
        let user = name(&USER);
        assert!(user.starts_with("redis_entity_"), "{user}");
        assert_eq!(user.len(), "redis_entity_".len() + 16);
        // The same description at another address: the same library.
        let copy = EntityDesc { ..USER };
        assert_eq!(name(&copy), user);
        // Any change to what the scripts rely on: another library.
        assert_ne!(name(&SESSION), user);
        assert_ne!(
            name(&EntityDesc {
                prefix: "member",
                ..USER
            }),
            user
        );
        const INDEXES: &[IndexDesc] = &[IndexDesc {
            field: "username",
            source: crate::schema::entity::IndexSource::Column(0),
            kind: IndexKind::Equality,
            score: None,
        }];
        assert_ne!(
            name(&EntityDesc {
                indexes: INDEXES,
                ..USER
            }),
            user
        );
    }

    #[test]
    fn hostile_prefixes_are_quoted_as_lua_strings() {
        let d = EntityDesc {
            prefix: "a\"b\\c\n]]",
            key_head: "a\"b\\c\n]]:",
            ..USER
        };
        let h = header(&d, KeyLayout::Standalone);
        assert!(h.contains(r#"ids = "a\"b\\c\010]]:@ids""#), "{h}");
        assert!(h.contains(&format!(
            "key = {} }}",
            lua_string(keyspace::index_prefix(&d, &Namespace::none(), "username").as_bytes())
        )));
        assert!(h.contains(r#"head = "a\"b\\c\010]]:""#), "{h}");
        // No raw newline from a value: the header keeps its shape.
        assert_eq!(
            h.lines().count(),
            header(&USER, KeyLayout::Standalone).lines().count()
        );
    }
}
