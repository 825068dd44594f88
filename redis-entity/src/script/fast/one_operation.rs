//! The commonest updates in straight-line code of their own: one column
//! incremented (a counter, a sorted index's score) or set (a field no index
//! reads, or one an equality index reads), every other column kept. One
//! table read of the call's operation word (`FAST_ONE`) finds them before
//! the column operations are read one by one; what runs then is what the
//! rest of `fast_change` would run for the same update, without a branch
//! per column or index (benches/NOTES.md, *One operation in code of its
//! own*). A type with a `#[version]` has none: each of its updates
//! increments the version too.

use super::{stored_in_place, Index, Type, OP_INCR, OP_INCR_FLOAT, OP_KEEP, OP_SET};
use crate::schema::entity::IndexKind;
use crate::script::lua_string;
use std::fmt::Write;

/// In `FAST_ONE`, a set of column `j` is `SET_BASE + j`; an increment is
/// `j`, or `-j` for a float one.
const SET_BASE: usize = 1000;

/// The columns (1-based) an update may increment alone here: no index
/// reads their value as a key or a prefix (a sorted index is sent its
/// score after the write).
fn incremented(t: &Type<'_>) -> Vec<usize> {
    if t.desc.version.is_some() {
        return Vec::new();
    }
    (1..=t.desc.columns.len()).filter(|&j| !t.owns(j)).collect()
}

/// The columns (1-based) an update may set alone here, with the equality
/// index that reads each, if any: no sorted index scores them (the call
/// sends the score) and no other index reads them.
fn set<'a>(t: &'a Type<'_>) -> Vec<(usize, Option<&'a Index>)> {
    if t.desc.version.is_some() {
        return Vec::new();
    }
    (1..=t.desc.columns.len())
        .filter(|&j| !t.scored(j))
        .filter_map(|j| {
            let readers: Vec<&Index> = t.idx.iter().filter(|i| i.col == Some(j)).collect();
            match readers[..] {
                [] => Some((j, None)),
                [i] if i.kind == IndexKind::Equality => Some((j, Some(i))),
                _ => None,
            }
        })
        .collect()
}

/// `FAST_ONE`: the operation word of each such update (without a
/// namespace), to what it does (`SET_BASE`).
pub(super) fn table(w: &mut String, t: &Type<'_>) {
    let n = t.desc.columns.len();
    let word = |j: usize, code: u8| {
        let mut ops = vec![OP_KEEP; n];
        ops[j - 1] = code;
        lua_string(&ops)
    };
    let mut entries = Vec::new();
    for j in incremented(t) {
        entries.push(format!("[{}] = {j}", word(j, OP_INCR)));
        entries.push(format!("[{}] = -{j}", word(j, OP_INCR_FLOAT)));
    }
    for (j, _) in set(t) {
        entries.push(format!("[{}] = {}", word(j, OP_SET), SET_BASE + j));
    }
    if !entries.is_empty() {
        emit!(w, "local FAST_ONE = {{ {} }}", entries.join(", "));
    }
}

/// The code, at the start of `fast_change`: the entity must be stored,
/// without a TTL (one with a TTL goes to the general code, as below), and
/// its maps hashes; then the set or the increment.
pub(super) fn code(w: &mut String, t: &Type<'_>) {
    let (incremented, set) = (incremented(t), set(t));
    if incremented.is_empty() && set.is_empty() {
        return;
    }
    let n = t.desc.columns.len();
    emit!(w, "  if mode == 'update' and x == last then");
    emit!(
        w,
        "    local one = FAST_ONE[ns == '' and ops or string.sub(ops, 1, {n})]"
    );
    emit!(w, "    if one then");
    stored_in_place(w, t, "      ");
    if !set.is_empty() {
        set_code(w, &set);
    }
    if !incremented.is_empty() {
        increment_code(w, t, &incremented);
    }
    emit!(w, "    end");
    emit!(w, "  end");
}

/// A set: the field written, and an equality index's entry moved first
/// from the stored value's set to the new one's (`SMOVE`, catching its
/// error: nothing is written before it).
fn set_code(w: &mut String, set: &[(usize, Option<&Index>)]) {
    emit!(w, "      if one > {SET_BASE} then");
    emit!(
        w,
        "        local field, v = FAST_COLUMNS[one - {SET_BASE}], A[x]"
    );
    let heads: Vec<String> = set
        .iter()
        .filter_map(|(j, i)| i.map(|i| (j, i)))
        .map(|(j, i)| {
            let key = lua_string(i.key.as_bytes());
            format!(
                "one == {} and (ns == '' and {key} or ns .. {key})",
                SET_BASE + j
            )
        })
        .collect();
    if !heads.is_empty() {
        // The head of the equality index's keys, or false.
        emit!(w, "        local p = {} or false", heads.join(" or "));
        emit!(w, "        local o = p and rcall('HGET', K[1], field)");
        emit!(w, "        if p and o ~= v then");
        emit!(w, "          local kn, r = p .. esc(v), nil");
        emit!(w, "          if o then");
        emit!(w, "            local ko = p .. esc(o)");
        emit!(w, "            r = rpcall('SMOVE', ko, kn, m)");
        emit!(w, "            if r ~= 0 and r ~= 1 then return wrong_type(ko, 'set') or wrong_type(kn, 'set') or r end");
        emit!(w, "          end");
        // No old value, or an entry missing from its set.
        emit!(w, "          if r ~= 1 then");
        emit!(w, "            r = rpcall('SADD', kn, m)");
        emit!(
            w,
            "            if r ~= 0 and r ~= 1 then return wrong_type(kn, 'set') or r end"
        );
        emit!(w, "          end");
        emit!(w, "        end");
    }
    emit!(w, "        rcall('HSET', K[1], field, v)");
    emit!(w, "        return 0");
    emit!(w, "      end");
}

/// An increment: the score's sorted set checked, the increment run catching
/// its error (nothing is written before it), then the score's entry from
/// its reply.
fn increment_code(w: &mut String, t: &Type<'_>, incremented: &[usize]) {
    // The sorted indexes of the columns incremented here, with the column.
    let scores: Vec<(usize, &Index)> = incremented
        .iter()
        .flat_map(|&j| t.scores_of(j).map(move |i| (j, i)))
        .collect();
    emit!(w, "      local j = one > 0 and one or -one");
    for (j, i) in &scores {
        let key = lua_string(i.key.as_bytes());
        emit!(
            w,
            "      local p{n} = j == {j} and (ns == '' and {key} or ns .. {key})",
            n = i.n
        );
        emit!(
            w,
            "      if p{n} then err = wrong_type(p{n}, 'zset'); if err then return err end end",
            n = i.n
        );
    }
    emit!(
        w,
        "      local field, cmd = FAST_COLUMNS[j], one > 0 and 'HINCRBY' or 'HINCRBYFLOAT'"
    );
    emit!(w, "      local r = rpcall(cmd, K[1], field, A[x])");
    emit!(
        w,
        "      if type(r) == 'table' and r.err then return fast_incr_error(K, {{ field, A[x], cmd }}, r) end"
    );
    for (_, i) in &scores {
        emit!(
            w,
            "      if p{n} then r = fast_stored(r); if tonumber(r) then rcall('ZADD', p{n}, r, m) end end",
            n = i.n
        );
    }
    emit!(w, "      return 0");
}
