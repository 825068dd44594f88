//! The straight-line write of one entity type: Lua generated from the
//! type's description, with its keys, fields and index kinds written in.
//!
//! The general write code (lua/write_prelude.lua) interprets the type's
//! description on every call: loops over index kinds, a context table,
//! sets of entries. That costs 2-5x the server time of a hand-written
//! function for the same type (benches/NOTES.md). The common write (a
//! save, insert or update of a hash-layout entity without a TTL, request
//! token, condition, version check or unique claim) needs none of that: the
//! generated `fast_change` does it in the order a careful engineer would
//! write by hand (read the stored indexed fields, check the keys it will
//! write and the unique owners, write the index sets catching their errors,
//! then the rest), and returns nil, having written nothing, for any other
//! write, which the general code then runs. Both give the same keys and
//! replies (tests/model.rs runs random writes of both kinds against a
//! model), and the same errors but for which key is named when two are of
//! the wrong type at once (docs/consistency.md).

use super::lua_string;
use crate::keyspace;
use crate::schema::entity::{EntityDesc, IndexDesc, IndexKind, IndexSource, Layout};
use crate::schema::escape::{KeyLayout, Namespace};
use std::fmt::Write;

/// One line of generated code into `w` (`writeln!` into a String cannot
/// fail).
macro_rules! emit {
    ($w:expr, $($t:tt)*) => {{
        let _ = writeln!($w, $($t)*);
    }};
}

mod one_operation;

/// Lua 5.1 limits a function to 200 locals and 250 registers. The
/// generated function declares about 25 locals of its own and at most 9
/// per index (`op`, `val`, `o`, `n`, `p`, `ko`, `kn`, `ow`, `nw` of a unique
/// index on a column), and its literal `HSET` of every column needs 3 + 2
/// registers per column on top of them. A type whose count passes this
/// budget (well below 250, so that expressions' temporaries fit) keeps the
/// general code only; `tests/wide_types.rs` loads types at the edge.
const REGISTER_BUDGET: usize = 200;
const LOCALS_PER_INDEX: usize = 9;
const OWN_LOCALS: usize = 25;

/// The column operation codes of the straight-line call (one byte per
/// column in its `ops` argument).
pub(crate) const OP_KEEP: u8 = b'.';
pub(crate) const OP_SET: u8 = b's';
pub(crate) const OP_DEL: u8 = b'd';
pub(crate) const OP_INCR: u8 = b'i';
pub(crate) const OP_INCR_FLOAT: u8 = b'f';

/// One index as the generated code sees it.
struct Index {
    /// 1-based, as in `T.idx` and the error replies (sent 0-based).
    n: usize,
    kind: IndexKind,
    /// The hash field holding the value (`None`: the pk).
    field: Option<&'static str>,
    /// The column (1-based) whose operation gives the value, when the call
    /// does not send it.
    col: Option<usize>,
    /// The key (equality, unique, tags: the head before the value) without
    /// the namespace.
    key: String,
}

impl Index {
    /// The write leaves the value as it is.
    fn unchanged(&self) -> String {
        match self.col {
            Some(j) => format!("op{j} == {OP_KEEP}"),
            None => format!("a{} == 'u'", self.n),
        }
    }

    /// The value is known only after the write (an increment).
    fn unknown(&self) -> String {
        match self.col {
            Some(j) => format!("(op{j} == {OP_INCR} or op{j} == {OP_INCR_FLOAT})"),
            None => format!("a{} == ''", self.n),
        }
    }
}

/// Whether the straight-line call sends index `i`'s value (an indexed pk
/// field's, or a sorted index's score): any other index's value is the
/// stored form of its column, which the call sends as the column's.
pub(crate) fn sends_value(i: &IndexDesc) -> bool {
    i.source == IndexSource::Pk || i.kind == IndexKind::Sorted
}

/// Whether the straight-line write covers `desc` (a hash-layout type
/// without a presence marker or a default TTL, whose function stays within
/// Lua's limits: [`REGISTER_BUDGET`]).
pub(crate) fn covers(desc: &EntityDesc) -> bool {
    desc.layout == Layout::Hash
        && !desc.columns.iter().all(|c| c.optional)
        && desc.ttl.is_none()
        && OWN_LOCALS + LOCALS_PER_INDEX * desc.indexes.len() + 3 + 2 * desc.columns.len()
            <= REGISTER_BUDGET
}

/// The straight-line write of `desc` (`local fast_change = false` for a
/// type it does not cover): its tables and `fast_change(K, A, first, last,
/// mode)` (mode `'save'`, `'insert'` or `'update'`), which checks, then
/// writes, and returns nil, having written nothing, for a write it leaves
/// to the general code (`fast_general` in lua/fast_general.lua gives that
/// write's keys and arguments in the general code's form).
///
/// KEYS: the entity's keys without the index shadow. Arguments from
/// `first`: the member, the value of each index [`sends_value`] (as the
/// general code reads index values), one byte per column (`OP_*`)
/// followed by the namespace in the same word, the value (or delta) of each
/// column set or incremented, in column order, then the data commands of
/// the `#[hash]` maps as the general code reads them.
pub(crate) fn fast_change(desc: &EntityDesc, layout: KeyLayout) -> String {
    if !covers(desc) {
        return "local fast_change = false\n".into();
    }
    generate(desc, layout, Form::Single)
}

/// The same write as one operation of a unit of work (lua/unit.lua): the
/// type's tables; `fast_unit(K, A, f, last, mode, u, first)` (`first`: the
/// unit's first operation), which runs every check of [`fast_change`] and
/// those against the unit's earlier operations (`u`: a unique value another
/// operation gives, the entities they leave stored), then returns what the
/// writes need (an array), or an error reply, or nil for a write it leaves
/// to the general code; and `fast_unit_write(state)`, the writes, which the
/// unit runs once every operation is checked. Nothing is written before.
/// `local fast_unit = false` for a type [`covers`] does not cover.
pub(crate) fn fast_unit(desc: &EntityDesc, layout: KeyLayout) -> String {
    if !covers(desc) {
        return "local fast_unit = false\n".into();
    }
    generate(desc, layout, Form::Unit)
}

/// The two functions the generator writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `fast_change`: checks, then writes.
    Single,
    /// `fast_unit`: checks, then returns the writes' variables, which
    /// `fast_unit_write` takes.
    Unit,
}

fn generate(desc: &EntityDesc, layout: KeyLayout, form: Form) -> String {
    let ns = Namespace::none().in_layout(layout);
    let idx: Vec<Index> = desc
        .indexes
        .iter()
        .enumerate()
        .map(|(i, d)| Index {
            n: i + 1,
            kind: d.kind,
            field: match d.source {
                IndexSource::Pk => None,
                IndexSource::Column(c) => Some(desc.columns[c].name),
            },
            col: match d.source {
                IndexSource::Column(c) if !sends_value(d) => Some(c + 1),
                _ => None,
            },
            key: match d.kind {
                IndexKind::Prefix | IndexKind::Sorted => keyspace::index_zset(desc, &ns, d.field),
                _ => keyspace::index_prefix(desc, &ns, d.field),
            },
        })
        .collect();
    let t = Type { desc, ns, idx };
    let mut s = String::new();
    let w = &mut s;
    tables(w, &t);
    if form == Form::Single {
        one_operation::table(w, &t);
    }
    arguments(w, &t, form);
    if form == Form::Single {
        one_operation::code(w, &t);
    }
    columns(w, &t, form);
    if form == Form::Single {
        plain_update(w, &t);
    }
    entity_state(w, &t);
    old_and_new(w, &t.idx);
    key_checks(w, &t, form);
    unique_owners(w, &t);
    let mut writes = String::new();
    if form == Form::Single {
        set_writes(&mut writes, &t);
    }
    data(&mut writes, &t, form);
    index_moves(&mut writes, &t, form);
    match form {
        Form::Single => w.push_str(&writes),
        Form::Unit => {
            // The writes' variables go in one array (one allocation; a
            // closure over them would make one object per variable).
            unit_checks(w, &t);
            let state = state_variables(&t, &writes);
            emit!(w, "  return {{ {} }}", state.join(", "));
            emit!(w, "end");
            emit!(w, "local function fast_unit_write(st)");
            emit!(
                w,
                "  local {} = unpack(st, 1, {})",
                state.join(", "),
                state.len()
            );
            emit!(w, "  local rcall, err = redis.call, nil");
            w.push_str(&writes);
        }
    }
    emit!(w, "end");
    s
}

/// The variables of the checks that the unit form's writes read, in a
/// fixed order: those of the candidates (every local the checks may
/// declare) named in `writes` outside its string literals.
fn state_variables(t: &Type<'_>, writes: &str) -> Vec<String> {
    let named = identifiers(writes);
    let mut candidates: Vec<String> = [
        "K", "A", "x", "last", "all", "inc", "hs", "hd", "existed", "ids", "m",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for i in &t.idx {
        for v in ["o", "n", "p", "ko", "kn", "ow", "nw", "to", "tn", "a"] {
            candidates.push(format!("{v}{}", i.n));
        }
    }
    for j in 1..=t.desc.columns.len() {
        candidates.push(format!("op{j}"));
        candidates.push(format!("val{j}"));
    }
    candidates.retain(|c| named.contains(c.as_str()));
    candidates
}

/// The identifiers of Lua `code` outside its string literals.
fn identifiers(code: &str) -> std::collections::HashSet<&str> {
    let mut out = std::collections::HashSet::new();
    let bytes = code.as_bytes();
    let (mut i, mut start) = (0, None);
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'-' && bytes.get(i + 1) == Some(&b'-') {
            // A comment, to the end of the line (an apostrophe in it is no
            // string).
            if let Some(s0) = start.take() {
                out.insert(&code[s0..i]);
            }
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b == b'"' || b == b'\'' {
            // Skip the literal (a backslash escapes the next byte).
            i += 1;
            while i < bytes.len() && bytes[i] != b {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        let ident = b.is_ascii_alphanumeric() || b == b'_';
        match (ident, start) {
            (true, None) => start = Some(i),
            (false, Some(s0)) => {
                out.insert(&code[s0..i]);
                start = None;
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(s0) = start {
        out.insert(&code[s0..]);
    }
    out
}

/// The unit form's checks against the unit's earlier operations (`u`, as
/// lua/unit.lua keeps it): a unique value another entity of the unit is
/// given refuses the write; the entity is stored once the unit is applied
/// (recorded when the unit relates entities or pushes: `u.follow`).
fn unit_checks(w: &mut String, t: &Type<'_>) {
    for i in t.idx.iter().filter(|i| i.kind == IndexKind::Unique) {
        let n = i.n;
        emit!(w, "  if n{n} then");
        emit!(w, "    local key = p{n} .. {}", entry(i, &format!("n{n}")));
        emit!(w, "    local owner = u.unique[key]");
        emit!(
            w,
            "    if owner and owner ~= m then return redis.error_reply('UNIQUE_VIOLATION {}') end",
            n - 1
        );
        emit!(w, "    u.unique[key] = m");
        emit!(w, "  end");
    }
    // Only a relation reads which entities the unit leaves stored.
    emit!(w, "  if u.follow then u.exists[K[1]] = true end");
}

/// What the generator knows of the type.
struct Type<'a> {
    desc: &'a EntityDesc,
    /// The namespace the key prefixes are spelled in (none: the call's
    /// namespace comes first).
    ns: Namespace,
    idx: Vec<Index>,
}

impl Type<'_> {
    /// The indexes whose value the call sends.
    fn sent(&self) -> Vec<&Index> {
        self.idx.iter().filter(|i| i.col.is_none()).collect()
    }

    /// The local holding column `j`'s (1-based) operation: `op<j>` for a
    /// column an index reads (the checks read it again), `b<j>` otherwise.
    fn op_local(&self, j: usize) -> String {
        if self.owns(j) {
            format!("op{j}")
        } else {
            format!("b{j}")
        }
    }

    /// The sorted indexes that score column `j` (1-based): the call sends
    /// their score.
    fn scores_of(&self, j: usize) -> impl Iterator<Item = &Index> {
        let name = self.desc.columns[j - 1].name;
        self.idx
            .iter()
            .filter(move |i| i.col.is_none() && i.field == Some(name))
    }

    /// Whether a sorted index scores column `j` (1-based).
    fn scored(&self, j: usize) -> bool {
        self.scores_of(j).next().is_some()
    }

    /// Whether column `j` (1-based) gives an index its value.
    fn owns(&self, j: usize) -> bool {
        self.idx.iter().any(|i| i.col == Some(j))
    }

    /// Whether column `j`'s value names an index key (an equality, unique
    /// or tag index's).
    fn keyed_by(&self, j: usize) -> bool {
        self.idx.iter().any(|i| {
            i.col == Some(j)
                && matches!(
                    i.kind,
                    IndexKind::Equality | IndexKind::Unique | IndexKind::Tags
                )
        })
    }
}

/// The type's tables the fallback reads (`fast_entry.lua`).
fn tables(w: &mut String, t: &Type<'_>) {
    let desc = t.desc;
    let idx = &t.idx;
    let q = |s: &str| lua_string(s.as_bytes());
    let sent = t.sent();
    emit!(
        w,
        "-- The common write of {} in straight-line code (script/fast.rs).",
        desc.type_name
    );
    let columns: Vec<String> = desc.columns.iter().map(|c| q(c.name)).collect();
    emit!(w, "local FAST_COLUMNS = {{ {} }}", columns.join(", "));
    let sent_numbers: Vec<String> = sent.iter().map(|i| i.n.to_string()).collect();
    emit!(w, "local FAST_SENT = {{ {} }}", sent_numbers.join(", "));
    let index_columns: Vec<String> = idx
        .iter()
        .map(|i| i.col.map_or("false".into(), |j| j.to_string()))
        .collect();
    emit!(
        w,
        "local FAST_INDEX_COLUMN = {{ {} }}",
        index_columns.join(", ")
    );
    if !desc.indexes.is_empty() {
        emit!(w, "local FAST_SHADOW = {}", q(&keyspace::shadow_key("")));
    } else {
        emit!(w, "local FAST_SHADOW = false");
    }
}

/// The function's start: the arguments every call has.
fn arguments(w: &mut String, t: &Type<'_>, form: Form) {
    let desc = t.desc;
    let ns = &t.ns;
    let q = |s: &str| lua_string(s.as_bytes());
    let sent = t.sent();
    match form {
        Form::Single => emit!(w, "local function fast_change(K, A, f, last, mode)"),
        Form::Unit => emit!(w, "local function fast_unit(K, A, f, last, mode, u, first)"),
    }
    // `redis.call` read once: each read of a global and its field costs
    // about 200 server instructions (benches/NOTES.md).
    emit!(w, "  local rcall, rpcall = redis.call, redis.pcall");
    emit!(w, "  local m = A[f]");
    for (at, i) in sent.iter().enumerate() {
        emit!(w, "  local a{n} = A[f + {}]", 1 + at, n = i.n);
    }
    emit!(w, "  local ops = A[f + {}]", 1 + sent.len());
    emit!(w, "  local x = f + {}", 2 + sent.len());
    // The namespace follows the column operations in their word (one
    // argument fewer: about 1,300 server instructions per call).
    let n = desc.columns.len();
    emit!(
        w,
        "  local ns = #ops > {n} and string.sub(ops, {}) or ''",
        n + 1
    );
    if !desc.indexes.is_empty() {
        let ids = q(&keyspace::ids_key(desc, ns));
        emit!(w, "  local ids = ns == '' and {ids} or ns .. {ids}");
    }
}

/// The column operations read into locals and the tables of fields set,
/// removed and incremented.
fn columns(w: &mut String, t: &Type<'_>, form: Form) {
    let desc = t.desc;
    let q = |s: &str| lua_string(s.as_bytes());
    // A save of every column (the common save) writes them in one literal
    // HSET; otherwise each column's operation is read in turn, and the
    // fields set, removed and incremented are gathered (`hs`, `hd`, `inc`:
    // field, delta, command triples), each table made only if used. The
    // single write has at most one increment (a second sends the write to
    // the general code, below): its field, delta and command are locals
    // (`incf`, `incv`, `cmd`), not a table (about 1,400 server instructions).
    let own = |j: usize| t.owns(j);
    let all_set: String = std::iter::repeat_n(OP_SET as char, desc.columns.len()).collect();
    // (With a namespace the operations are the word's head.)
    emit!(
        w,
        "  local all = ops == {all} or ns ~= '' and string.sub(ops, 1, {}) == {all}",
        desc.columns.len(),
        all = q(&all_set)
    );
    match form {
        Form::Single => emit!(w, "  local hs, hd, incf, incv, cmd"),
        Form::Unit => emit!(w, "  local hs, hd, inc, cmd"),
    }
    let owned: Vec<usize> = (1..=desc.columns.len()).filter(|&j| own(j)).collect();
    for j in &owned {
        emit!(w, "  local op{j}, val{j} = {OP_SET}, false");
    }
    emit!(w, "  if all then");
    for j in &owned {
        emit!(w, "    val{j} = A[x + {}]", j - 1);
    }
    emit!(w, "    x = x + {}", desc.columns.len());
    emit!(w, "  else");
    // Every column's operation in one call (one call per column cost about
    // 500 server instructions each); the columns no index reads get locals
    // of this block only.
    let unowned: Vec<String> = (1..=desc.columns.len())
        .filter(|&j| !own(j))
        .map(|j| t.op_local(j))
        .collect();
    if !unowned.is_empty() {
        emit!(w, "    local {}", unowned.join(", "));
    }
    let ops: Vec<String> = (1..=desc.columns.len()).map(|j| t.op_local(j)).collect();
    emit!(
        w,
        "    {} = string.byte(ops, 1, {})",
        ops.join(", "),
        desc.columns.len()
    );
    for j in 1..=desc.columns.len() {
        column_operation(w, t, form, j);
    }
    emit!(w, "  end");
}

/// Column `j`'s (1-based) operation read: a value set, a field removed, or
/// an increment.
fn column_operation(w: &mut String, t: &Type<'_>, form: Form, j: usize) {
    let op = t.op_local(j);
    let name = lua_string(t.desc.columns[j - 1].name.as_bytes());
    let set = if t.owns(j) {
        format!(
            "val{j} = A[x]; {}",
            append("hs", &[&name, &format!("val{j}")])
        )
    } else {
        append("hs", &[&name, "A[x]"])
    };
    // A kept column (the most common operation) costs one comparison.
    emit!(w, "    if {op} ~= {OP_KEEP} then");
    emit!(w, "      if {op} == {OP_SET} then {set}; x = x + 1");
    emit!(
        w,
        "      elseif {op} == {OP_DEL} then {}",
        append("hd", &[&name])
    );
    emit!(w, "      else");
    if t.keyed_by(j) {
        // Its new value, known only once the increment ran, names an
        // index key: the general code probes that key first.
        emit!(w, "        return nil");
    } else {
        emit!(
            w,
            "        cmd = {op} == {OP_INCR} and 'HINCRBY' or 'HINCRBYFLOAT'"
        );
        match form {
            Form::Single => emit!(
                w,
                "        if incf then return nil end; incf, incv = {name}, A[x]; x = x + 1"
            ),
            Form::Unit => emit!(
                w,
                "        {}; x = x + 1",
                append("inc", &[&name, "A[x]", "cmd"])
            ),
        }
    }
    emit!(w, "      end");
    emit!(w, "    end");
}

/// Lua that appends `items` to the list `list`, or makes the list of them
/// if there is none yet: one table, made at its final size (growing an
/// empty one item by item costs a reallocation per doubling).
fn append(list: &str, items: &[&str]) -> String {
    let pushes: Vec<String> = items
        .iter()
        .map(|v| format!("{list}[#{list} + 1] = {v}"))
        .collect();
    format!(
        "if {list} then {} else {list} = {{ {} }} end",
        pushes.join("; "),
        items.join(", ")
    )
}

/// An update that changes no indexed value and no map (a counter's
/// increment, a field no index reads): the entity's existence, its maps'
/// types, then the data, and nothing of the indexes. It writes what the
/// rest of the function would (no index entry moves), with far less code
/// run: about 2,000 server instructions fewer per increment, and a smaller
/// share of the function's code read (benches/NOTES.md).
fn plain_update(w: &mut String, t: &Type<'_>) {
    let mut kept = vec!["mode == 'update'".to_owned(), "x > last".to_owned()];
    for i in &t.idx {
        match (i.col, i.field) {
            (Some(_), _) => kept.push(i.unchanged()),
            // A sorted index's score, sent.
            (None, Some(_)) => kept.push(format!("a{} == 'u'", i.n)),
            // The pk's: it never changes.
            (None, None) => {}
        }
    }
    emit!(w, "  if {} then", kept.join(" and "));
    stored_in_place(w, t, "    ");
    emit!(w, "    local r");
    // Nothing written before the increment: nothing to put back.
    single_increment(w, "");
    sets_and_removals(w);
    emit!(w, "    return 0");
    emit!(w, "  end");
}

/// The checks of an update written in place (nothing of the indexes
/// moves), each line after `pad`: the entity stored (missing: the typed
/// error; with a TTL, whose shadow the general code keeps: `nil`), its
/// maps hashes; `err` declared.
fn stored_in_place(w: &mut String, t: &Type<'_>, pad: &str) {
    emit!(w, "{pad}local pttl = rcall('PTTL', K[1])");
    emit!(
        w,
        "{pad}if pttl == -2 then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end"
    );
    emit!(
        w,
        "{pad}-- An entity with a TTL keeps a shadow: the general code."
    );
    emit!(w, "{pad}if pttl >= 0 then return nil end");
    emit!(w, "{pad}local err");
    for k in 2..2 + t.desc.maps.len() {
        emit!(w, "{pad}err = wrong_type(K[{k}], 'hash')");
        emit!(w, "{pad}if err then return err end");
    }
}

/// The single write's one increment, in line, catching its error (after
/// `put_back`, Lua that undoes the writes before it); its reply, the value
/// stored, kept in place of the delta.
fn single_increment(w: &mut String, put_back: &str) {
    emit!(w, "    if incf then");
    emit!(w, "      r = rpcall(cmd, K[1], incf, incv)");
    emit!(w, "      if type(r) == 'table' and r.err then {put_back}return fast_incr_error(K, {{ incf, incv, cmd }}, r) end");
    emit!(w, "      incv = r");
    emit!(w, "    end");
}

/// The fields set and removed (`hs`, `hd`), after the increments.
fn sets_and_removals(w: &mut String) {
    emit!(
        w,
        "    if hs and #hs == 2 then rcall('HSET', K[1], hs[1], hs[2])"
    );
    emit!(w, "    elseif hs then rcall('HSET', K[1], unpack(hs)) end");
    emit!(w, "    if hd then rcall('HDEL', K[1], unpack(hd)) end");
}

/// The writes the generated code leaves to the general code, and whether
/// the entity is stored (and has no TTL).
fn entity_state(w: &mut String, t: &Type<'_>) {
    let desc = t.desc;
    // (The single write's one increment runs catching its error, in line
    // in `data`: a later one that fails, an overflow, would raise after the
    // sets were written, so a write of several went to the general code
    // while its operations were read, in `columns`, as did an increment of
    // a column whose value names an index key.)
    emit!(
        w,
        "  if x <= last and not fast_tail_ok(A, x, last) then return nil end"
    );
    emit!(w, "  local pttl = rcall('PTTL', K[1])");
    emit!(
        w,
        "  -- An entity with a TTL keeps a shadow: the general code."
    );
    emit!(w, "  if pttl >= 0 then return nil end");
    emit!(w, "  local existed = pttl == -1");
    emit!(w, "  if existed then");
    emit!(w, "    if mode == 'insert' then return redis.error_reply('ENTITY_EXISTS entity already stored') end");
    emit!(w, "  else");
    emit!(w, "    if mode == 'update' then return redis.error_reply('ENTITY_NOT_FOUND no entity stored') end");
    if !desc.indexes.is_empty() {
        emit!(w, "    -- Expired leaving a shadow: the general code.");
        emit!(
            w,
            "    if rcall('EXISTS', K[1] .. FAST_SHADOW) == 1 then return nil end"
        );
    }
    emit!(w, "  end");
}

/// Before the first write: the numbers to increment, the maps, and (in a
/// unit; the single write checks them by writing them, in `set_writes`)
/// the set of all ids and every set the write moves an entry in; sorted
/// and prefix indexes' sorted sets in both. The single write leaves its
/// only increment to the write itself (caught; a failure puts back the set
/// entries written before it); so does a unit's `first` operation, while
/// for the others earlier operations have written by then, so every
/// increment is checked here.
fn key_checks(w: &mut String, t: &Type<'_>, form: Form) {
    let desc = t.desc;
    let idx = &t.idx;
    emit!(w, "  local err");
    // The single write has at most one increment (`columns`), which the
    // write itself checks: nothing to check here.
    if form == Form::Unit {
        emit!(w, "  if inc then");
        emit!(w, "    err = fast_check_incr(K, inc, first and 4 or 1)");
        emit!(w, "    if err then return err end");
        emit!(w, "  end");
    }
    for k in 2..2 + desc.maps.len() {
        emit!(w, "  err = wrong_type(K[{k}], 'hash')");
        emit!(w, "  if err then return err end");
    }
    // The single write checks the sets of ids and of equal values by
    // writing them first (set_writes).
    if !idx.is_empty() && form == Form::Unit {
        emit!(w, "  if not existed then");
        if keyspace::bucketed_ids(desc) {
            emit!(
                w,
                "    err = wrong_type(ids_bucket(ids, m), 'set') or wrong_type(ids_directory(ids), 'set')"
            );
        } else {
            emit!(w, "    err = wrong_type(ids, 'set')");
        }
        emit!(w, "    if err then return err end");
        emit!(w, "  end");
    }
    for i in idx {
        checks(w, i, form);
    }
}

/// Before the first write: a new unique value owned by another live entity
/// refuses the write.
fn unique_owners(w: &mut String, t: &Type<'_>) {
    let desc = t.desc;
    let ns = &t.ns;
    let idx = &t.idx;
    let q = |s: &str| lua_string(s.as_bytes());
    let head = q(&keyspace::owner_head(desc, ns));
    for i in idx.iter().filter(|i| i.kind == IndexKind::Unique) {
        emit!(
            w,
            "  if n{n} and n{n} ~= o{n} and nw{n} and nw{n} ~= m then",
            n = i.n
        );
        let alive: Vec<String> = keyspace::presence_suffixes(desc, ns)
            .iter()
            .map(|suffix| {
                let tail = if suffix.is_empty() {
                    String::new()
                } else {
                    format!(" .. {}", q(suffix))
                };
                format!("rcall('EXISTS', ns .. {head} .. nw{n}{tail}) == 1", n = i.n)
            })
            .collect();
        emit!(w, "    if {} then", alive.join(" or "));
        emit!(
            w,
            "      return redis.error_reply('UNIQUE_VIOLATION {}')",
            i.n - 1
        );
        emit!(w, "    end");
        emit!(w, "  end");
    }
}

/// The single write's first writes: the entries of its equality and tag
/// indexes and of the set of ids, each written with its error caught instead of
/// its key's type checked first (a check is a command, about 4,500 server
/// instructions, as much as the write). A key of another type refuses the
/// write: the entries written before it are put back (`undo`: command, key,
/// other key triples, run by `fast_undo` in lua/fast.lua) and the error is
/// the one a check would give, so that nothing is left half written. A
/// value that moves is moved by one SMOVE, which checks both sets' types
/// (but not the new one's when the old one is missing: then the SADD
/// does).
fn set_writes(w: &mut String, t: &Type<'_>) {
    let failed = |keys: &[&str]| {
        let checks: Vec<String> = keys
            .iter()
            .map(|k| format!("wrong_type({k}, 'set')"))
            .collect();
        format!(
            "if r ~= 0 and r ~= 1 then fast_undo(undo, m); return {} or r end",
            checks.join(" or ")
        )
    };
    let did = |cmd: &str, a: &str, b: &str| append("undo", &[&format!("'{cmd}'"), a, b]);
    emit!(w, "  local undo, r");
    for i in t.idx.iter().filter(|i| i.kind == IndexKind::Equality) {
        let n = i.n;
        let (ko, kn) = (format!("ko{n}"), format!("kn{n}"));
        emit!(w, "  if n{n} ~= o{n} then");
        emit!(w, "    if o{n} and n{n} then");
        emit!(w, "      r = rpcall('SMOVE', {ko}, {kn}, m)");
        emit!(w, "      {}", failed(&[&ko, &kn]));
        emit!(w, "      if r == 1 then {}", did("SMOVE", &kn, &ko));
        emit!(w, "      else");
        emit!(w, "        r = rpcall('SADD', {kn}, m)");
        emit!(w, "        {}", failed(&[&kn]));
        emit!(
            w,
            "        if r == 1 then {} end",
            did("SREM", &kn, "false")
        );
        emit!(w, "      end");
        emit!(w, "    elseif o{n} then");
        emit!(w, "      r = rpcall('SREM', {ko}, m)");
        emit!(w, "      {}", failed(&[&ko]));
        emit!(w, "      if r == 1 then {} end", did("SADD", &ko, "false"));
        emit!(w, "    else");
        emit!(w, "      r = rpcall('SADD', {kn}, m)");
        emit!(w, "      {}", failed(&[&kn]));
        emit!(w, "      if r == 1 then {} end", did("SREM", &kn, "false"));
        emit!(w, "    end");
        emit!(w, "  end");
    }
    for i in t.idx.iter().filter(|i| i.kind == IndexKind::Tags) {
        let n = i.n;
        emit!(w, "  if n{n} ~= o{n} then");
        for (from, to, cmd, back) in [("o", "n", "SREM", "SADD"), ("n", "o", "SADD", "SREM")] {
            emit!(w, "    for t in pairs(t{from}{n}) do");
            emit!(w, "      if not t{to}{n}[t] then");
            emit!(w, "        local k = p{n} .. t");
            emit!(w, "        r = rpcall('{cmd}', k, m)");
            emit!(w, "        {}", failed(&["k"]));
            emit!(w, "        if r == 1 then {} end", did(back, "k", "false"));
            emit!(w, "      end");
            emit!(w, "    end");
        }
        emit!(w, "  end");
    }
    ids_write(w, t, &failed, &did);
}

/// The single write's id of a new entity, caught as `set_writes`' entries.
fn ids_write(
    w: &mut String,
    t: &Type<'_>,
    failed: &dyn Fn(&[&str]) -> String,
    did: &dyn Fn(&str, &str, &str) -> String,
) {
    if t.idx.is_empty() {
        return;
    }
    emit!(w, "  if not existed then");
    if keyspace::bucketed_ids(t.desc) {
        // Its bucket (`ids_bucket` in lua/write_shared.lua); a new bucket
        // joins the directory, whose type its SADD checks.
        emit!(w, "    local b = ids_bucket(ids, m)");
        emit!(w, "    r = rpcall('SADD', b, m)");
        emit!(w, "    {}", failed(&["b"]));
        emit!(w, "    if r == 1 then {} end", did("SREM", "b", "false"));
        emit!(
            w,
            "    if r == 1 and b ~= ids and rcall('SCARD', b) == 1 then"
        );
        emit!(w, "      local d = ids_directory(ids)");
        emit!(w, "      r = rpcall('SADD', d, string.sub(b, #ids + 2))");
        emit!(w, "      {}", failed(&["d"]));
        emit!(w, "    end");
    } else {
        emit!(w, "    r = rpcall('SADD', ids, m)");
        emit!(w, "    {}", failed(&["ids"]));
        emit!(w, "    if r == 1 then {} end", did("SREM", "ids", "false"));
    }
    emit!(w, "  end");
}

/// The data: a literal HSET of every column, or the increments (the first
/// catching its error), fields set and removed; then the maps.
fn data(w: &mut String, t: &Type<'_>, form: Form) {
    let desc = t.desc;
    let q = |s: &str| lua_string(s.as_bytes());
    emit!(
        w,
        "  -- The first write to the entity: an increment (its error caught), or HSET."
    );
    let literal: Vec<String> = desc
        .columns
        .iter()
        .enumerate()
        .map(|(j, c)| format!("{}, A[x - {}]", q(c.name), desc.columns.len() - j))
        .collect();
    emit!(w, "  if all then");
    emit!(w, "    rcall('HSET', K[1], {})", literal.join(", "));
    emit!(w, "  else");
    match form {
        // The set entries written before it are put back if it fails.
        Form::Single => single_increment(w, "fast_undo(undo, m); "),
        Form::Unit => {
            emit!(w, "    if inc then");
            emit!(w, "      err = fast_incr(K, inc)");
            emit!(w, "      if err then return err end");
            emit!(w, "    end");
        }
    }
    sets_and_removals(w);
    emit!(w, "  end");
}

/// After the data: the index entries follow the stored values.
fn index_moves(w: &mut String, t: &Type<'_>, form: Form) {
    let idx = &t.idx;
    let q = |s: &str| lua_string(s.as_bytes());
    emit!(w, "  if x <= last then fast_tail(K, A, x, last) end");
    for i in idx {
        if let Some(field) = i.field {
            if matches!(i.kind, IndexKind::Sorted | IndexKind::Prefix) {
                // An increment's reply is the value stored.
                emit!(w, "  if {} then", i.unknown());
                match form {
                    // Its one increment, if of this field (else another
                    // write changed the value: read back).
                    Form::Single => emit!(
                        w,
                        "    n{n} = incf == {f} and fast_stored(incv) or rcall('HGET', K[1], {f})",
                        f = q(field),
                        n = i.n
                    ),
                    Form::Unit => emit!(
                        w,
                        "    n{n} = fast_incremented(inc, {f}) or rcall('HGET', K[1], {f})",
                        f = q(field),
                        n = i.n
                    ),
                }
                emit!(w, "  end");
            }
        }
        // The single write moved its set entries first (set_writes).
        if !(form == Form::Single && matches!(i.kind, IndexKind::Equality | IndexKind::Tags)) {
            moves(w, i);
        }
    }
    if !idx.is_empty() && form == Form::Unit {
        if keyspace::bucketed_ids(t.desc) {
            // `ids_add` of lua/write_prelude.lua, on the fast path's locals.
            emit!(w, "  if not existed then");
            emit!(w, "    local b = ids_bucket(ids, m)");
            emit!(
                w,
                "    if rcall('SADD', b, m) == 1 and b ~= ids and rcall('SCARD', b) == 1 then"
            );
            emit!(
                w,
                "      rcall('SADD', ids_directory(ids), string.sub(b, #ids + 2))"
            );
            emit!(w, "    end");
            emit!(w, "  end");
        } else {
            emit!(w, "  if not existed then rcall('SADD', ids, m) end");
        }
    }
    emit!(w, "  if existed then return 0 end");
    emit!(w, "  return 1");
}

/// Per index: `o<n>` the stored form the entity holds (false: none), `n<n>`
/// the one the write gives (from its column's operation, or from `a<n>`:
/// 'u' unchanged, 'n' none, '' known after the write, 'v' then the value);
/// `p<n>` its key (head).
fn old_and_new(w: &mut String, idx: &[Index]) {
    let q = |s: &str| lua_string(s.as_bytes());
    let mut l = |t: String| {
        w.push_str(&t);
        w.push('\n');
    };
    let fields: Vec<&Index> = idx.iter().filter(|i| i.field.is_some()).collect();
    for i in idx {
        l(format!("  local o{n}, n{n} = false, false", n = i.n));
        // (No namespace, the common case: the literal, no new string.)
        l(format!(
            "  local p{n} = ns == '' and {key} or ns .. {key}",
            key = q(&i.key),
            n = i.n
        ));
    }
    if !fields.is_empty() {
        // Stored values are read only when the write may move an entry (a
        // sorted entry is replaced by ZADD: its old value is not needed
        // when an increment gives the new one).
        let touched: Vec<String> = fields
            .iter()
            .map(|i| match i.kind {
                IndexKind::Sorted => format!("not ({} or {})", i.unchanged(), i.unknown()),
                _ => format!("not ({})", i.unchanged()),
            })
            .collect();
        // A save reads them all in one HMGET; an update only those it may
        // move, one HGET each (it usually changes one indexed field, and a
        // HMGET's reply of every field costs more than one HGET).
        l("  if existed and mode ~= 'update' then".into());
        let names: Vec<String> = fields.iter().filter_map(|i| i.field).map(q).collect();
        l(format!(
            "    local vs = rcall('HMGET', K[1], {})",
            names.join(", ")
        ));
        for (j, i) in fields.iter().enumerate() {
            l(format!("    o{n} = vs[{}] or false", j + 1, n = i.n));
        }
        l("  elseif existed then".into());
        for (i, t) in fields.iter().zip(&touched) {
            l(format!(
                "    if {t} then o{n} = rcall('HGET', K[1], {}) or false end",
                q(i.field.unwrap_or_default()),
                n = i.n
            ));
        }
        l("  end".into());
    }
    for i in idx {
        let n = i.n;
        match (i.field, i.col) {
            // An indexed pk field: its escaped value, the entity's for life.
            (None, _) => {
                l(format!("  n{n} = string.sub(a{n}, 2)"));
                l(format!("  if existed then o{n} = n{n} end"));
            }
            (Some(_), Some(j)) => {
                l(format!("  if op{j} == {OP_KEEP} then n{n} = o{n}"));
                l(format!("  elseif op{j} == {OP_SET} then n{n} = val{j} end"));
            }
            (Some(_), None) => {
                l(format!("  if a{n} == 'u' then n{n} = o{n}"));
                l(format!(
                    "  elseif a{n} ~= 'n' and a{n} ~= '' then n{n} = string.sub(a{n}, 2) end"
                ));
            }
        }
    }
}

/// The index entry of value `v` (a stored form; an indexed pk's value
/// comes escaped).
fn entry(i: &Index, v: &str) -> String {
    if i.field.is_none() {
        v.to_owned()
    } else {
        format!("esc({v})")
    }
}

/// Before the first write: the type of every key of index `i` the write
/// moves an entry in (a unique value's owner keys are read here, their type
/// checked by the same call). `ko<n>` / `kn<n>`: the keys (or entries) of
/// the old and new value, computed once.
fn checks(w: &mut String, i: &Index, form: Form) {
    let n = i.n;
    let mut l = |t: String| {
        w.push_str(&t);
        w.push('\n');
    };
    let (old, new) = (entry(i, &format!("o{n}")), entry(i, &format!("n{n}")));
    match i.kind {
        IndexKind::Unique | IndexKind::Equality => {
            let (t, read) = if i.kind == IndexKind::Unique {
                ("string", true)
            } else {
                ("set", false)
            };
            // The owners (ow, nw) are read only for a unique index.
            l(if read {
                format!("  local ko{n}, kn{n}, ow{n}, nw{n} = false, false, false, false")
            } else {
                format!("  local ko{n}, kn{n} = false, false")
            });
            l(format!("  if n{n} ~= o{n} then"));
            for (side, value, owner) in [("o", &old, "ow"), ("n", &new, "nw")] {
                l(format!("    if {side}{n} then"));
                l(format!("      k{side}{n} = p{n} .. {value}"));
                if read {
                    l(format!("      {owner}{n}, err = fast_owner(k{side}{n})"));
                    l("      if err then return err end".into());
                } else if form == Form::Unit {
                    l(format!("      err = wrong_type(k{side}{n}, '{t}')"));
                    l("      if err then return err end".into());
                }
                l("    end".into());
            }
            l("  end".into());
        }
        IndexKind::Tags => {
            // The two sets of tags are made only when the tags change (the
            // writes read them under the same test).
            l(format!("  local to{n}, tn{n}"));
            l(format!("  if n{n} ~= o{n} then"));
            l(format!(
                "    to{n}, tn{n} = fast_tags(o{n}), fast_tags(n{n})"
            ));
            // The single write checks them by writing them (set_writes).
            if form == Form::Unit {
                l(format!("    for t in pairs(to{n}) do"));
                l(format!("      if not tn{n}[t] then err = wrong_type(p{n} .. t, 'set'); if err then return err end end"));
                l("    end".into());
                l(format!("    for t in pairs(tn{n}) do"));
                l(format!("      if not to{n}[t] then err = wrong_type(p{n} .. t, 'set'); if err then return err end end"));
                l("    end".into());
            }
            l("  end".into());
        }
        IndexKind::Sorted | IndexKind::Prefix => {
            l(format!("  if n{n} ~= o{n} or {} then", i.unknown()));
            l(format!(
                "    err = wrong_type(p{n}, 'zset'); if err then return err end"
            ));
            l("  end".into());
        }
    }
}

/// After the data: the entries of index `i` follow the stored value.
fn moves(w: &mut String, i: &Index) {
    let n = i.n;
    let mut l = |t: String| {
        w.push_str(&t);
        w.push('\n');
    };
    match i.kind {
        IndexKind::Unique => {
            l(format!("  if n{n} ~= o{n} then"));
            // Never take an old value's key from another owner.
            l(format!(
                "    if o{n} and ow{n} == m then rcall('DEL', ko{n}) end"
            ));
            l(format!("    if n{n} then rcall('SET', kn{n}, m) end"));
            l("  end".into());
        }
        IndexKind::Equality => {
            l(format!("  if n{n} ~= o{n} then"));
            l(format!("    if o{n} then rcall('SREM', ko{n}, m) end"));
            l(format!("    if n{n} then rcall('SADD', kn{n}, m) end"));
            l("  end".into());
        }
        IndexKind::Tags => {
            l(format!("  if n{n} ~= o{n} then"));
            l(format!("    for t in pairs(to{n}) do if not tn{n}[t] then rcall('SREM', p{n} .. t, m) end end"));
            l(format!("    for t in pairs(tn{n}) do if not to{n}[t] then rcall('SADD', p{n} .. t, m) end end"));
            l("  end".into());
        }
        IndexKind::Sorted => {
            // A stored value that is not a number has no entry, and leaves
            // the old one (as the general code does).
            l(format!("  if n{n} ~= o{n} then"));
            l(format!("    if n{n} then"));
            l(format!(
                "      if tonumber(n{n}) then rcall('ZADD', p{n}, n{n}, m) end"
            ));
            l(format!("    elseif o{n} then rcall('ZREM', p{n}, m) end"));
            l("  end".into());
        }
        IndexKind::Prefix => {
            l(format!("  if n{n} ~= o{n} then"));
            l(format!(
                "    if o{n} then rcall('ZREM', p{n}, {} .. ':' .. m) end",
                entry(i, &format!("o{n}"))
            ));
            l(format!(
                "    if n{n} then rcall('ZADD', p{n}, 0, {} .. ':' .. m) end",
                entry(i, &format!("n{n}"))
            ));
            l("  end".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::{DOC, ORDER, PLAYER, SESSION, USER};

    /// `code` against the snapshot `name` in src/script/snapshots/, or
    /// (with `UPDATE_SNAPSHOTS=1`) written there.
    fn snapshot(name: &str, code: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/script/snapshots")
            .join(name);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, code).unwrap();
        }
        let pinned = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            pinned == code,
            "the generated code differs from {}: review the change, then regenerate with \
             UPDATE_SNAPSHOTS=1 cargo test -p redis-entity --lib fast\n{code}",
            path.display()
        );
    }

    /// The generated code of the fixture types, pinned: a change here is a
    /// change of every write's server code, made on purpose.
    #[test]
    fn the_generated_code_of_the_fixture_types() {
        snapshot("fast_user.lua", &fast_change(&USER, KeyLayout::Standalone));
        snapshot(
            "fast_order.lua",
            &fast_change(&ORDER, KeyLayout::Standalone),
        );
        // A counter and a sorted index's score, each incremented alone.
        snapshot(
            "fast_player.lua",
            &fast_change(&PLAYER, KeyLayout::Standalone),
        );
        snapshot(
            "fast_user_unit.lua",
            &fast_unit(&USER, KeyLayout::Standalone),
        );
    }

    /// An apostrophe in a Lua comment opens no string: the names after it
    /// are still found (one such comment once emptied the unit form's
    /// state list, and every unit library failed to load).
    #[test]
    fn identifiers_skip_comments_and_strings() {
        let code = "  local ko1 = 1 -- the entity's key\n  kn1 = 'o1 ow1' .. nw1\n";
        let found = identifiers(code);
        for name in ["ko1", "kn1", "nw1"] {
            assert!(found.contains(name), "{name} in {found:?}");
        }
        for inside in ["entity", "s", "o1", "ow1"] {
            assert!(!found.contains(inside), "{inside} in {found:?}");
        }
    }

    #[test]
    fn types_outside_the_straight_line_write_keep_the_general_code() {
        for d in [&SESSION, &DOC] {
            let code = fast_change(d, KeyLayout::Standalone);
            if d.layout != Layout::Hash || d.ttl.is_some() {
                assert_eq!(code, "local fast_change = false\n", "{}", d.type_name);
            }
        }
    }
}
