//! Set-algebra queries over equality indexes and tag relations:
//! `store.query::<Book>().all(Book::TAGS, ["php", "web"]).fetch()`.
//!
//! A query is one script call that returns the matching members (SINTER /
//! SUNION / SDIFF done on the server, no temporary keys), then one pipelined
//! read of the page's entities. Every fetched entity is checked against the
//! conditions; an index entry that no longer matches is dropped from the
//! result and removed (atomically, only if still stale) in a third call that
//! happens only when such an entry was met.

use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::write::{self as plan, WritePlan};
use crate::schema::entity::{Entity, EntityDesc, IndexKind, IndexSource, Row};
use crate::schema::escape::{escape_bytes_into, Namespace};
use crate::script::args::{
    Query, QueryGroup, QueryPart, QuerySort, QuerySource, Rank, RankAhead, RankIndex,
};
use crate::script::write::WriteOp;
use redis::Value;
use std::collections::BTreeSet;
use std::ops::Bound;

/// How a condition combines its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Every value (SINTER).
    All,
    /// At least one value (SUNION).
    Any,
    /// None of the values (SDIFF).
    None,
    /// The value starts with the one given (prefix indexes).
    StartsWith,
}

impl SetOp {
    fn name(self) -> &'static str {
        match self {
            SetOp::All => "all",
            SetOp::Any => "any",
            SetOp::None => "none",
            SetOp::StartsWith => "all",
        }
    }
}

/// One condition: an index, an operation, and the values' escaped forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// Position in [`EntityDesc::indexes`].
    pub index: usize,
    /// How the values combine.
    pub op: SetOp,
    /// The values, stored form escaped (the last segment of the index key).
    pub values: Vec<Vec<u8>>,
}

/// A score range on a sorted index.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeCondition {
    /// Position in [`EntityDesc::indexes`].
    pub index: usize,
    /// Lower bound.
    pub min: Bound<f64>,
    /// Upper bound.
    pub max: Bound<f64>,
}

impl RangeCondition {
    pub(crate) fn contains(&self, score: f64) -> bool {
        (match self.min {
            Bound::Included(m) => score >= m,
            Bound::Excluded(m) => score > m,
            Bound::Unbounded => true,
        }) && (match self.max {
            Bound::Included(m) => score <= m,
            Bound::Excluded(m) => score < m,
            Bound::Unbounded => true,
        })
    }
}

/// A ZRANGEBYSCORE bound.
fn score_bound(b: Bound<f64>, unbounded: &str) -> Vec<u8> {
    match b {
        Bound::Included(v) => crate::schema::codec::score_text(v).into_bytes(),
        Bound::Excluded(v) => format!("({}", crate::schema::codec::score_text(v)).into_bytes(),
        Bound::Unbounded => unbounded.as_bytes().to_vec(),
    }
}

/// Everything a query asks, independent of the store it runs on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spec {
    /// Set-algebra and prefix conditions.
    pub conditions: Vec<Condition>,
    /// Score ranges.
    pub ranges: Vec<RangeCondition>,
    /// Ordering: (sorted index position, descending).
    pub order: Option<(usize, bool)>,
    /// `limit(offset, n)`.
    pub page: Option<(usize, usize)>,
    /// `any_of`: each an OR of (index, escaped value) terms on equality or
    /// tag indexes of different fields, ANDed with the rest.
    pub unions: Vec<Vec<(usize, Vec<u8>)>>,
}

impl Spec {
    /// The positions of the indexes the query reads.
    pub(crate) fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.conditions
            .iter()
            .map(|c| c.index)
            .chain(self.ranges.iter().map(|r| r.index))
            .chain(self.order.map(|(i, _)| i))
            .chain(self.unions.iter().flatten().map(|(i, _)| *i))
    }
}

/// The one native set command (`SINTER`, `SUNION` or `SDIFF`) that answers
/// `spec` when nothing of the type can have expired, for the common
/// shapes: equality / tag conditions only, no order, no page. `None` when
/// the query needs the script.
pub(crate) fn native_set_command(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
) -> Option<redis::Cmd> {
    let (name, keys) = native_set_parts(desc, ns, spec)?;
    let mut cmd = redis::cmd(name);
    cmd.arg(keys);
    Some(cmd)
}

/// The name and keys of [`native_set_command`].
fn native_set_parts(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
) -> Option<(&'static str, Vec<Vec<u8>>)> {
    if !spec.ranges.is_empty() || spec.order.is_some() || spec.page.is_some() {
        return None;
    }
    let (mut all, mut any, mut none) = (Vec::new(), Vec::new(), Vec::new());
    for u in &spec.unions {
        if u.is_empty() {
            return None;
        }
        any.push(
            u.iter()
                .map(|(i, v)| keyspace::index_key(desc, ns, desc.indexes[*i].field, v))
                .collect::<Vec<_>>(),
        );
    }
    for c in &spec.conditions {
        let idx = &desc.indexes[c.index];
        if idx.kind == IndexKind::Prefix || c.op == SetOp::StartsWith {
            return None;
        }
        let keys: Vec<Vec<u8>> = c
            .values
            .iter()
            .map(|v| keyspace::index_key(desc, ns, idx.field, v))
            .collect();
        match c.op {
            SetOp::All => all.extend(keys),
            SetOp::Any if keys.is_empty() => return None,
            SetOp::Any if keys.len() == 1 => all.extend(keys),
            SetOp::Any => any.push(keys),
            SetOp::None => none.extend(keys),
            SetOp::StartsWith => return None,
        }
    }
    let name = match (all.len(), any.len(), none.is_empty()) {
        (1.., 0, true) => "SINTER",
        (0, 1, true) => "SUNION",
        (1, 0, false) => "SDIFF",
        _ => return None,
    };
    Some((name, [all, any.concat(), none].concat()))
}

/// The native read of a leaderboard page (`top`: an order on a sorted
/// index and a first page, no condition): `ZRANGE .. REV WITHSCORES`, or
/// ascending; `None` for any other shape.
pub(crate) fn native_top_command(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
) -> Option<redis::Cmd> {
    let plain = spec.conditions.is_empty() && spec.ranges.is_empty() && spec.unions.is_empty();
    let (Some((index, descending)), Some((0, n)), true) = (spec.order, spec.page, plain) else {
        return None;
    };
    if n == 0 {
        return None;
    }
    let mut cmd = redis::cmd("ZRANGE");
    cmd.arg(keyspace::index_zset(desc, ns, desc.indexes[index].field))
        .arg(0)
        .arg(n - 1);
    if descending {
        cmd.arg("REV");
    }
    cmd.arg("WITHSCORES");
    Some(cmd)
}

/// Adds to `pipe` the native reads counting the members of one shard
/// (`ns`) ranked ahead of `member` (of another shard) with `score`, when
/// nothing of the type can have expired: the `ZCARD` of the shard's expiry
/// set (which must be 0 for the rest to hold), the `ZCOUNT` above the score
/// and the members of that score (those after `member` count: `REV`
/// orders ties backwards). [`rank_ahead_native`] reads the replies.
pub(crate) fn rank_ahead_reads(
    desc: &'static EntityDesc,
    ns: &Namespace,
    index: usize,
    score: &str,
    pipe: &mut redis::Pipeline,
) {
    let zset = keyspace::index_zset(desc, ns, desc.indexes[index].field);
    pipe.cmd("ZCARD").arg(keyspace::expiry_key(desc, ns));
    pipe.cmd("ZCOUNT")
        .arg(&zset)
        .arg(format!("({score}"))
        .arg("+inf");
    pipe.cmd("ZRANGE")
        .arg(&zset)
        .arg(score)
        .arg(score)
        .arg("BYSCORE");
}

/// The count of [`rank_ahead_reads`]' replies (taken from `it`); `None`
/// when the shard holds expiring entities (the rank script must walk) or
/// a reply is not what was asked.
pub(crate) fn rank_ahead_native(member: &str, it: &mut impl Iterator<Item = Value>) -> Option<u64> {
    let (Some(Value::Int(0)), Some(Value::Int(above)), Some(ties)) =
        (it.next(), it.next(), it.next())
    else {
        return None;
    };
    let ties: Vec<String> = redis::from_redis_value(ties).ok()?;
    let after = ties.iter().filter(|m| m.as_str() > member).count() as u64;
    Some(above.max(0) as u64 + after)
}

/// The native command counting what [`native_set_command`] lists, when it
/// is an intersection: `SCARD` of one set, `SINTERCARD` of several (a
/// count is then one command, not the query script).
pub(crate) fn native_count_command(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
) -> Option<redis::Cmd> {
    let (name, keys) = native_set_parts(desc, ns, spec)?;
    if name != "SINTER" {
        return None;
    }
    let cmd = match keys.as_slice() {
        [one] => {
            let mut c = redis::cmd("SCARD");
            c.arg(one);
            c
        }
        _ => {
            let mut c = redis::cmd("SINTERCARD");
            c.arg(keys.len()).arg(keys);
            c
        }
    };
    Some(cmd)
}

/// The escaped stored form of a value: the last segment of its index key.
pub(crate) fn index_value<V: crate::schema::codec::Scalar>(v: &V) -> Vec<u8> {
    let mut out = Vec::new();
    escape_bytes_into(&mut out, &crate::schema::codec::to_bytes(v));
    out
}

/// The position of the index of the field stored as `name`.
pub(crate) fn index_of(desc: &'static EntityDesc, name: &str) -> Option<usize> {
    desc.indexes.iter().position(|i| i.field == name)
}

/// How much one query call may read (`StoreBuilder::members_per_call`):
/// a query whose whole answer would read more than `whole` members is
/// answered in pages of about `per_call` members each, and a native set
/// command answers only while the type has at most `native` entities (C
/// reads them about ten times as fast as the script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallBudget {
    /// Members one page reads at most (0: no bound).
    pub per_call: usize,
    /// The whole answer's estimated work above which a query is paged.
    pub whole: usize,
    /// Entities of a type above which no native set command answers.
    pub native: usize,
}

impl CallBudget {
    /// The budget of `per_call` members a page.
    pub(crate) fn new(per_call: usize) -> Self {
        CallBudget {
            per_call,
            whole: per_call.saturating_mul(4),
            native: per_call.saturating_mul(48),
        }
    }
}

impl Default for CallBudget {
    fn default() -> Self {
        CallBudget::new(1_000)
    }
}

/// The call of the query script for `spec`; `count_only` asks only the count,
/// `with_scores` the order field's score of each member of the page.
pub(crate) fn script_call(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
    count_only: bool,
    with_scores: bool,
) -> crate::script::Call<'static> {
    script_query(
        desc,
        ns,
        spec,
        count_only,
        with_scores,
        CallBudget::default(),
    )
    .call()
}

/// The query script's arguments for `spec` (see [`script_call`]), whose
/// answer is paged past `budget`; the caller sets the cursor of each next
/// page.
pub(crate) fn script_query(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
    count_only: bool,
    with_scores: bool,
    budget: CallBudget,
) -> Query {
    // An OR across fields: the union of their sets (equality and tag
    // indexes only; `any_of` refuses the others).
    let unions = spec.unions.iter().map(|u| QueryGroup {
        op: SetOp::Any.name(),
        source: QuerySource::Sets,
        parts: u
            .iter()
            .map(|(i, v)| QueryPart {
                key: keyspace::index_key(desc, ns, desc.indexes[*i].field, v),
                range: None,
            })
            .collect(),
    });
    let ranges = spec.ranges.iter().map(|r| QueryGroup {
        op: SetOp::All.name(),
        source: QuerySource::Scores,
        parts: vec![QueryPart {
            key: keyspace::index_zset(desc, ns, desc.indexes[r.index].field).into_bytes(),
            range: Some((score_bound(r.min, "-inf"), score_bound(r.max, "+inf"))),
        }],
    });
    let conditions = spec.conditions.iter().map(|c| condition_group(desc, ns, c));
    let (sort, offset, limit) = page_of(desc, spec, count_only);
    Query {
        groups: unions.chain(ranges).chain(conditions).collect(),
        ids_set: keyspace::ids_key(desc, ns),
        sort,
        offset,
        limit,
        expiry_set: keyspace::expiry_key(desc, ns),
        owner_head: keyspace::owner_head(desc, ns),
        presence_suffixes: keyspace::presence_suffixes(desc, ns),
        order: spec.order.map(|(index, desc_order)| {
            (
                keyspace::index_zset(desc, ns, desc.indexes[index].field),
                desc_order,
            )
        }),
        with_scores,
        per_call: budget.per_call,
        whole: budget.whole,
        cursor: String::new(),
    }
}

/// One condition's group of the query script: per value the sorted set
/// and the lex range of a prefix index, or the set of an index of sets.
fn condition_group(desc: &'static EntityDesc, ns: &Namespace, c: &Condition) -> QueryGroup {
    let idx = &desc.indexes[c.index];
    if idx.kind == IndexKind::Prefix {
        // Entries are `escaped value:member`; escaped values have no ':'.
        let zset = keyspace::index_zset(desc, ns, idx.field).into_bytes();
        let parts = c.values.iter().map(|v| QueryPart {
            key: zset.clone(),
            range: Some(match c.op {
                SetOp::StartsWith if v.as_slice() == crate::schema::escape::EMPTY.as_bytes() => {
                    (b"-".to_vec(), b"+".to_vec())
                }
                SetOp::StartsWith => (lex(b"[", v, b""), lex(b"(", v, b"\xff")),
                _ => (lex(b"[", v, b":"), lex(b"(", v, b":\xff")),
            }),
        });
        return QueryGroup {
            op: c.op.name(),
            source: QuerySource::Lex,
            parts: parts.collect(),
        };
    }
    let prefix = keyspace::index_prefix(desc, ns, idx.field);
    let parts = c.values.iter().map(|v| {
        let mut key = prefix.clone().into_bytes();
        key.extend_from_slice(v);
        QueryPart { key, range: None }
    });
    QueryGroup {
        op: c.op.name(),
        source: QuerySource::Sets,
        parts: parts.collect(),
    }
}

/// How the query script sorts and cuts the page: sort mode, offset, limit.
fn page_of(desc: &'static EntityDesc, spec: &Spec, count_only: bool) -> (QuerySort, usize, i64) {
    let page = spec.page;
    // A whole result is sorted by the caller (cheaper than Lua's sort); a
    // page must be cut from the sorted result on the server.
    let sort = match (page, desc.numeric_pk) {
        _ if spec.order.is_some() => QuerySort::Ordered,
        (None, _) => QuerySort::Unsorted,
        (Some(_), true) => QuerySort::Numeric,
        (Some(_), false) => QuerySort::Text,
    };
    let (offset, limit) = match (count_only, page) {
        (true, _) => (0, 0i64),
        (false, Some((o, n))) => (o, n as i64),
        (false, None) => (0, -1),
    };
    (sort, offset, limit)
}

/// A ZRANGEBYLEX bound: `open`, the escaped value, `tail`.
fn lex(open: &[u8], value: &[u8], tail: &[u8]) -> Vec<u8> {
    [open, value, tail].concat()
}

/// Sorts a whole result the way the script sorts a page: numerically for
/// integer pks (as Lua numbers, ties by text), by bytes otherwise.
pub(crate) fn sort_members(desc: &'static EntityDesc, members: &mut [String]) {
    // The usual ids (counters): below 10^15 every integer is exact as a
    // Lua number, so number order is the integers' order. Each is read
    // once into a u64 and the pairs sorted (comparing two strings costs a
    // length test and a `memcmp`, and a page of thousands of ids takes
    // tens of thousands of comparisons).
    if desc.numeric_pk && members.iter().all(|m| small_natural(m)) {
        let mut keyed: Vec<(u64, String)> = members
            .iter_mut()
            .map(|m| (m.parse().unwrap_or(0), std::mem::take(m)))
            .collect();
        keyed.sort_unstable_by_key(|(n, _)| *n);
        for (slot, (_, m)) in members.iter_mut().zip(keyed) {
            *slot = m;
        }
        return;
    }
    if desc.numeric_pk {
        // Parsed once each, and the strings moved rather than cloned.
        let mut keyed: Vec<(OrdF64, String)> = members
            .iter_mut()
            .map(|m| (OrdF64(m.parse::<f64>().unwrap_or(0.0)), std::mem::take(m)))
            .collect();
        keyed.sort_unstable();
        for (slot, (_, m)) in members.iter_mut().zip(keyed) {
            *slot = m;
        }
    } else {
        members.sort_unstable();
    }
}

/// `m` is a whole number from 0 to 10^15 - 1 as a pk writes it.
fn small_natural(m: &str) -> bool {
    m.len() <= 15 && !m.starts_with('-') && crate::schema::escape::canonical_integer(m)
}

/// A total order on f64 (parsed members are never NaN; `total_cmp` anyway).
struct OrdF64(f64);
impl PartialEq for OrdF64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// What the query script answered.
pub(crate) struct Answer {
    /// Matches, ignoring the page.
    pub total: u64,
    /// The page's members, in query order.
    pub members: Vec<String>,
    /// Members whose entity has expired; their entries are to be removed.
    pub ghosts: Vec<String>,
    /// With scores asked: the order field's score of each page member.
    pub scores: Vec<f64>,
}

/// A score as Redis writes it (`inf`, `-inf`, decimal).
pub(crate) fn parse_score(s: &str) -> Option<f64> {
    match s {
        "inf" | "+inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// The keys and liveness test of the rank script for sorted index `index`.
fn rank_index(desc: &'static EntityDesc, ns: &Namespace, index: usize) -> RankIndex {
    RankIndex {
        sorted_index: keyspace::index_zset(desc, ns, desc.indexes[index].field),
        expiry_set: keyspace::expiry_key(desc, ns),
        owner_head: keyspace::owner_head(desc, ns),
        presence_suffixes: keyspace::presence_suffixes(desc, ns),
    }
}

/// The call of the rank script for `member` in sorted index `index`.
pub(crate) fn rank_call(
    desc: &'static EntityDesc,
    ns: &Namespace,
    index: usize,
    member: &str,
) -> crate::script::Call<'static> {
    Rank {
        index: rank_index(desc, ns, index),
        member,
    }
    .call()
}

/// The call counting the live members of one shard (`ns`) ranked ahead of
/// `member` (of another shard) with `score` (see `rank.lua`).
pub(crate) fn rank_ahead_call(
    desc: &'static EntityDesc,
    ns: &Namespace,
    index: usize,
    member: &str,
    score: &str,
) -> crate::script::Call<'static> {
    RankAhead {
        index: rank_index(desc, ns, index),
        member,
        score,
    }
    .call()
}

/// The spec of `top(field, n)`.
pub(crate) fn top_spec(index: usize, n: usize) -> Spec {
    Spec {
        order: Some((index, true)),
        page: Some((0, n)),
        ..Spec::default()
    }
}

/// A leaderboard page (an error in place of a record that does not decode)
/// and the repairs its read called for.
pub(crate) type Top<E> = (Vec<Result<(E, f64)>>, Vec<WritePlan>);

/// Pairs the fetched entities of a `top` with their scores; missing ones
/// (deleted since) are skipped and their entries cleaned.
pub(crate) fn finish_top<E: Entity>(
    ns: &Namespace,
    answer: &Answer,
    keys: &[EntityKeys],
    records: Vec<Result<Option<Row>>>,
) -> Top<E> {
    let desc = E::DESC;
    let mut out = Vec::with_capacity(answer.members.len());
    let mut repairs = Vec::new();
    let mut spelled = String::new();
    for (((member, k), score), record) in answer
        .members
        .iter()
        .zip(keys)
        .zip(&answer.scores)
        .zip(records)
    {
        let row = match record {
            Ok(row) => row,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        match (row, parse_member_with::<E>(member, &mut spelled)) {
            (Some(row), Some(pk)) => {
                out.push(crate::plan::read::entity_from_row(&pk, k, row).map(|e| (e, *score)));
            }
            _ => repairs.push(repair_plan(desc, ns, member, &[], false)),
        }
    }
    (out, repairs)
}

impl Answer {
    /// The answer of a native set command: every member, none expired.
    pub(crate) fn from_members(desc: &'static EntityDesc, mut members: Vec<String>) -> Self {
        sort_members(desc, &mut members);
        Answer {
            total: members.len() as u64,
            members,
            ghosts: Vec::new(),
            scores: Vec::new(),
        }
    }

    /// An answer from a `member, score, member, score...` reply.
    pub(crate) fn from_scored(flat: Vec<String>) -> Self {
        let mut answer = Answer {
            total: 0,
            members: Vec::with_capacity(flat.len() / 2),
            ghosts: Vec::new(),
            scores: Vec::with_capacity(flat.len() / 2),
        };
        let mut it = flat.into_iter();
        while let Some(member) = it.next() {
            let score = it.next().and_then(|s| parse_score(&s)).unwrap_or(f64::NAN);
            answer.members.push(member);
            answer.scores.push(score);
        }
        answer.total = answer.members.len() as u64;
        answer
    }
}

/// What each shard of a sharded type is asked for `spec`: the first
/// `offset + n` of its matches in the query's order when there is a page
/// (the page is cut after the merge), with scores when ordered (to merge).
pub(crate) fn shard_spec(spec: &Spec) -> Spec {
    let mut s = spec.clone();
    s.page = spec.page.map(|(offset, n)| (0, offset.saturating_add(n)));
    s
}

/// The answer one server would give for `spec`, from the answers of every
/// shard to [`shard_spec`] (asked with scores when `spec` is ordered):
/// totals summed, members merged in the query's order (score, then member
/// as Redis orders a sorted set's ties; unordered: the members' order),
/// then the page cut. Scores are kept when `with_scores`.
pub(crate) fn merge_shards(
    desc: &'static EntityDesc,
    spec: &Spec,
    with_scores: bool,
    answers: Vec<Answer>,
) -> Answer {
    let total = answers.iter().map(|a| a.total).sum();
    let rows: Vec<(String, f64)> = answers
        .into_iter()
        .flat_map(|a| {
            let scores = a.scores.into_iter().chain(std::iter::repeat(f64::NAN));
            a.members.into_iter().zip(scores).collect::<Vec<_>>()
        })
        .collect();
    answer_of_rows(desc, spec, with_scores, total, rows)
}

/// The answer to `spec` from every match (member, order score or NaN):
/// sorted in the query's order (score then member, or by member), the page
/// cut; scores kept when `with_scores`.
pub(crate) fn answer_of_rows(
    desc: &'static EntityDesc,
    spec: &Spec,
    with_scores: bool,
    total: u64,
    mut rows: Vec<(String, f64)>,
) -> Answer {
    sort_rows(desc, spec, &mut rows);
    if let Some((offset, n)) = spec.page {
        rows = rows.into_iter().skip(offset).take(n).collect();
    }
    let (members, scores): (Vec<String>, Vec<f64>) = rows.into_iter().unzip();
    Answer {
        total,
        members,
        ghosts: Vec::new(),
        scores: if with_scores { scores } else { Vec::new() },
    }
}

/// Sorts matches (member, order score or NaN) in the query's order: score
/// then member, or by member.
pub(crate) fn sort_rows(desc: &'static EntityDesc, spec: &Spec, rows: &mut Vec<(String, f64)>) {
    match spec.order {
        Some((_, descending)) => rows.sort_by(|a, b| order_cmp(a, b, descending)),
        None => {
            let mut members: Vec<String> = std::mem::take(rows).into_iter().map(|r| r.0).collect();
            sort_members(desc, &mut members);
            *rows = members.into_iter().map(|m| (m, f64::NAN)).collect();
        }
    }
}

/// The query script's order of scored members: score then member (both
/// reversed for descending), members without a score (NaN) last in member
/// order, whichever the direction.
pub(crate) fn order_cmp(
    a: &(String, f64),
    b: &(String, f64),
    descending: bool,
) -> std::cmp::Ordering {
    match (a.1.is_nan(), b.1.is_nan()) {
        (true, true) => a.0.cmp(&b.0),
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => {
            let order = OrdF64(a.1).cmp(&OrdF64(b.1)).then_with(|| a.0.cmp(&b.0));
            if descending {
                order.reverse()
            } else {
                order
            }
        }
    }
}

/// How many expired entities one read cleans at most (the query script's
/// `GHOST_BUDGET`, which reports no more per call).
pub(crate) const GHOST_BUDGET: usize = 100;

/// The sweep writes for ghosts a query met.
pub(crate) fn sweep_plans(
    desc: &'static EntityDesc,
    ns: &Namespace,
    ghosts: &[String],
) -> Vec<WritePlan> {
    ghosts
        .iter()
        .map(|m| {
            let keys = EntityKeys::new(desc, ns, m.clone());
            plan::lifecycle(desc, ns, keys, WriteOp::Sweep, None)
        })
        .collect()
}

/// The query script's reply (`script::reply::query`) as the answer to
/// `spec`: scores split from the members, a whole result sorted.
pub(crate) fn parse_reply(
    desc: &'static EntityDesc,
    spec: &Spec,
    with_scores: bool,
    reply: Value,
) -> Result<Answer> {
    let bad = |detail: String| Error::UnexpectedReply {
        key: keyspace::ids_key(desc, &Namespace::none()),
        detail,
    };
    let crate::script::reply::QueryReply {
        page: mut members,
        ghosts,
        total,
    } = crate::script::reply::query(reply).map_err(bad)?;
    let mut scores = Vec::new();
    if with_scores {
        let page = std::mem::take(&mut members);
        for pair in page.chunks(2) {
            members.push(pair[0].clone());
            scores.push(pair.get(1).and_then(|s| parse_score(s)).unwrap_or(f64::NAN));
        }
    }
    if spec.order.is_none() {
        sort_members(desc, &mut members);
    }
    Ok(Answer {
        total,
        members,
        ghosts,
        scores,
    })
}

/// The escaped index entries the stored entity `member` implies for index `i`.
pub(crate) fn row_entries(
    desc: &'static EntityDesc,
    member: &str,
    row: &Row,
    i: usize,
) -> BTreeSet<Vec<u8>> {
    let idx = &desc.indexes[i];
    let stored = match idx.source {
        IndexSource::Column(c) => row.columns[c].clone(),
        IndexSource::Pk => (desc.pk_index_value)(member, idx.field),
    };
    match (&stored, idx.kind) {
        (None, _) => BTreeSet::new(),
        // A sorted entry is the member's score, in one canonical spelling.
        (Some(raw), IndexKind::Sorted) => idx
            .score
            .and_then(|f| f(raw))
            .map(|s| BTreeSet::from([crate::schema::codec::score_text(s).into_bytes()]))
            .unwrap_or_default(),
        (Some(raw), IndexKind::Tags) => raw
            .split(|&b| b == b':')
            .filter(|p| !p.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
        (Some(raw), _) => {
            let mut out = Vec::new();
            escape_bytes_into(&mut out, raw);
            BTreeSet::from([out])
        }
    }
}

/// What a fetched row says about the index entries that led to it.
pub(crate) enum Check {
    /// It matches every condition.
    Match,
    /// It does not: these (index, escaped value) entries pointed at it and
    /// are stale; `missing` when a `none` condition was violated (an entry
    /// the entity needs is absent from an index).
    Stale {
        entries: Vec<(usize, Vec<u8>)>,
        missing: bool,
    },
}

/// True when the escaped form of `raw` equals `escaped` (no allocation when
/// `raw` needs no escaping, the common case).
fn escaped_eq(raw: &[u8], escaped: &[u8]) -> bool {
    let plain = !raw.is_empty()
        && !raw
            .iter()
            .any(|b| b.is_ascii() && crate::schema::escape::ALWAYS_ESCAPED.as_bytes().contains(b));
    if plain {
        return raw == escaped;
    }
    let mut out = Vec::with_capacity(raw.len() + 8);
    escape_bytes_into(&mut out, raw);
    out == escaped
}

/// True when the stored row (`None`: gone) holds a score in range `r`.
fn holds_range(desc: &'static EntityDesc, r: &RangeCondition, row: Option<&Row>) -> bool {
    let idx = &desc.indexes[r.index];
    let score = match (row, idx.column(), idx.score) {
        (Some(row), Some(c), Some(f)) => row.columns[c].as_deref().and_then(f),
        _ => None,
    };
    score.is_some_and(|s| r.contains(s))
}

/// The fast paths of `check`: true when condition `c` is an equality on a
/// stored scalar column, or a tag condition, that the stored value holds
/// (no index entries derived). False says nothing: the entries decide.
fn holds_on_stored_column(desc: &'static EntityDesc, c: &Condition, row: Option<&Row>) -> bool {
    let idx = &desc.indexes[c.index];
    if let (
        Some(r),
        IndexKind::Equality | IndexKind::Unique,
        IndexSource::Column(col),
        SetOp::All,
        [v],
    ) = (row, idx.kind, idx.source, c.op, c.values.as_slice())
    {
        if r.columns[col]
            .as_deref()
            .is_some_and(|raw| escaped_eq(raw, v))
        {
            return true;
        }
    }
    // Tags are stored escaped.
    if let (Some(r), IndexKind::Tags, IndexSource::Column(col)) = (row, idx.kind, idx.source) {
        // Scanned in place: a fetch checks every row it reads.
        let raw = r.columns[col].as_deref().unwrap_or_default();
        let has = |v: &Vec<u8>| !raw.is_empty() && raw.split(|&b| b == b':').any(|t| t == v);
        return match c.op {
            SetOp::All => c.values.iter().all(has),
            SetOp::Any => c.values.iter().any(has),
            SetOp::None => !c.values.iter().any(has),
            SetOp::StartsWith => false,
        };
    }
    false
}

/// Checks a fetched row against the conditions (`None`: the entity is gone).
pub(crate) fn check(
    desc: &'static EntityDesc,
    spec: &Spec,
    member: &str,
    row: Option<&Row>,
) -> Check {
    let mut entries = Vec::new();
    let mut missing = false;
    for r in &spec.ranges {
        // A sorted entry that disagrees with the stored value is re-derived
        // from it (the entity is re-indexed).
        if !holds_range(desc, r, row) {
            missing = true;
        }
    }
    for c in &spec.conditions {
        if holds_on_stored_column(desc, c, row) {
            continue;
        }
        let have = match row {
            Some(r) => row_entries(desc, member, r, c.index),
            None => BTreeSet::new(),
        };
        let hit = |v: &Vec<u8>| have.contains(v);
        let starts = |p: &Vec<u8>| {
            p.as_slice() == crate::schema::escape::EMPTY.as_bytes() && !have.is_empty()
                || have.iter().any(|h| h.starts_with(p))
        };
        let ok = match c.op {
            SetOp::All => c.values.iter().all(hit),
            SetOp::Any => c.values.iter().any(hit),
            SetOp::None => !c.values.iter().any(hit),
            SetOp::StartsWith => c.values.iter().all(starts),
        };
        if !ok {
            match c.op {
                SetOp::All | SetOp::Any | SetOp::StartsWith => entries.extend(
                    c.values
                        .iter()
                        .filter(|v| !have.contains(*v))
                        .map(|v| (c.index, v.clone())),
                ),
                SetOp::None => missing = true,
            }
        }
    }
    for u in &spec.unions {
        let holds = row.is_some_and(|r| {
            u.iter()
                .any(|(i, v)| row_entries(desc, member, r, *i).contains(v))
        });
        if !holds {
            // Listed by one of the terms, which the stored value does not
            // need: each is cleaned only if still stale.
            entries.extend(u.iter().cloned());
        }
    }
    if row.is_none() || !entries.is_empty() || missing {
        Check::Stale { entries, missing }
    } else {
        Check::Match
    }
}

/// The write that removes stale entries of `member` (only those the stored
/// entity still does not need), or re-adds its entries when one was missing.
pub(crate) fn repair_plan(
    desc: &'static EntityDesc,
    ns: &Namespace,
    member: &str,
    entries: &[(usize, Vec<u8>)],
    missing: bool,
) -> WritePlan {
    let keys = EntityKeys::new(desc, ns, member.to_owned());
    if missing {
        return plan::lifecycle(desc, ns, keys, WriteOp::Reindex, None);
    }
    plan::clean(desc, ns, keys, entries)
}

/// What `fetch` does with the replies of the page read.
pub(crate) struct Fetched<E> {
    /// In the page's order; an error in place of a record that does not
    /// decode.
    pub entities: Vec<Result<E>>,
    pub repairs: Vec<WritePlan>,
}

/// Decodes, checks and parses the page's rows (the members are the keys').
pub(crate) fn finish_fetch<E: Entity>(
    ns: &Namespace,
    spec: &Spec,
    keys: &[EntityKeys],
    records: Vec<Result<Option<Row>>>,
) -> Fetched<E> {
    let mut out = Fetched::with_capacity(keys.len());
    let mut spelled = String::new();
    for (k, record) in keys.iter().zip(records) {
        out.take(ns, spec, k, record, &mut spelled);
    }
    out
}

impl<E: Entity> Fetched<E> {
    /// The page's records, for `len` of them.
    pub(crate) fn with_capacity(len: usize) -> Self {
        Fetched {
            entities: Vec::with_capacity(len),
            repairs: Vec::new(),
        }
    }

    /// Takes one record of the page (of the entity with keys `k`): checked,
    /// parsed, or its repair noted. `spelled` is a buffer the page shares.
    pub(crate) fn take(
        &mut self,
        ns: &Namespace,
        spec: &Spec,
        k: &EntityKeys,
        record: Result<Option<Row>>,
        spelled: &mut String,
    ) {
        let desc = E::DESC;
        let member = &k.member;
        let row = match record {
            Ok(row) => row,
            Err(e) => {
                self.entities.push(Err(e));
                return;
            }
        };
        match check(desc, spec, member, row.as_ref()) {
            Check::Match => {}
            Check::Stale { entries, missing } => {
                self.repairs.push(repair_plan(
                    desc,
                    ns,
                    member,
                    &entries,
                    missing && row.is_some(),
                ));
                return;
            }
        }
        let (Some(row), Some(pk)) = (row, parse_member_with::<E>(member, spelled)) else {
            self.repairs.push(repair_plan(desc, ns, member, &[], false));
            return;
        };
        self.entities
            .push(crate::plan::read::entity_from_row(&pk, k, row));
    }
}

/// The pks of `members`, skipping text no pk spells (one buffer for the
/// check of every spelling).
pub(crate) fn parse_members<E: Entity>(members: &[String]) -> Vec<E::Pk> {
    let mut buf = String::new();
    members
        .iter()
        .filter_map(|m| parse_member_with::<E>(m, &mut buf))
        .collect()
}

/// Parses a member, accepting only the canonical spelling of a pk (spelled
/// back into `buf`, which a page's members share).
pub(crate) fn parse_member_with<E: Entity>(member: &str, buf: &mut String) -> Option<E::Pk> {
    let pk = E::read_member(member)?;
    buf.clear();
    E::write_member(&pk, buf);
    (buf == member).then_some(pk)
}

/// The keys of the page's members (which they take), for reading their
/// records (no index shadow: a repair spells its own keys).
pub(crate) fn member_keys(
    desc: &'static EntityDesc,
    ns: &Namespace,
    members: impl IntoIterator<Item = String>,
) -> Vec<EntityKeys> {
    members
        .into_iter()
        .map(|m| EntityKeys::for_record(desc, ns, m))
        .collect()
}

/// `GET` of the unique index key for `value`.
pub(crate) fn unique_key<V: crate::schema::codec::Scalar>(
    desc: &'static EntityDesc,
    ns: &Namespace,
    index: usize,
    value: &V,
) -> (String, Vec<u8>) {
    let v = index_value(value);
    // Spelled into one buffer (every unique lookup names one).
    let key = keyspace::index_key(desc, ns, desc.indexes[index].field, &v);
    let key = String::from_utf8(key)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (key, v)
}

/// Checks the entity found through a unique key: it must still hold `value`.
pub(crate) fn finish_unique<E: Entity>(
    ns: &Namespace,
    index: usize,
    value: Vec<u8>,
    keys: &EntityKeys,
    records: Vec<Result<Option<Row>>>,
) -> Result<(Option<E>, Option<WritePlan>)> {
    let spec = Spec {
        conditions: vec![Condition {
            index,
            op: SetOp::All,
            values: vec![value],
        }],
        ..Spec::default()
    };
    let fetched = finish_fetch::<E>(ns, &spec, std::slice::from_ref(keys), records);
    Ok((
        fetched.entities.into_iter().next().transpose()?,
        fetched.repairs.into_iter().next(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::entity::Layout;
    use crate::schema::fixtures::*;

    const COUNTRY_IDX: usize = 1;
    const RATING_IDX: usize = 2;
    const EMAIL_IDX: usize = 3;
    const TAGS_IDX: usize = 4;

    fn ns() -> Namespace {
        Namespace::new("t")
    }

    fn cond(index: usize, op: SetOp, values: &[&str]) -> Condition {
        Condition {
            index,
            op,
            values: values.iter().map(|v| b(v)).collect(),
        }
    }

    fn texts(v: &[Vec<u8>]) -> Vec<String> {
        v.iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    /// Stale (index, escaped value) entries.
    type Entries = Vec<(usize, Vec<u8>)>;

    /// The stale entries and the missing flag of a check, `None` for a match.
    fn stale(c: Check) -> Option<(Entries, bool)> {
        match c {
            Check::Match => None,
            Check::Stale { entries, missing } => Some((entries, missing)),
        }
    }

    fn ann() -> Row {
        row(
            &[
                Some("a:b"),
                Some("DE"),
                Some("7.50"),
                Some("ann@x"),
                Some("1"),
                Some("php:web"),
            ],
            &[&[]],
        )
    }

    #[test]
    fn a_spec_names_indexes_and_escaped_values() {
        assert_eq!(index_of(&USER, "country"), Some(COUNTRY_IDX));
        assert_eq!(index_of(&USER, "tags"), Some(TAGS_IDX));
        assert_eq!(index_of(&USER, "nickname"), None);
        assert_eq!(index_value(&"a:b{c}".to_owned()), b("a%3Ab%7Bc%7D"));
        assert_eq!(index_value(&String::new()), b("%_"));
        assert_eq!(index_value(&42i64), b("42"));
        assert_eq!(
            top_spec(RATING_IDX, 10),
            Spec {
                conditions: vec![],
                ranges: vec![],
                order: Some((RATING_IDX, true)),
                page: Some((0, 10)),
                unions: vec![],
            }
        );
    }

    #[test]
    fn the_script_call_lists_ranges_then_conditions_then_the_ids() {
        let spec = Spec {
            conditions: vec![
                cond(COUNTRY_IDX, SetOp::Any, &["DE", "FR"]),
                cond(EMAIL_IDX, SetOp::StartsWith, &["an"]),
                cond(EMAIL_IDX, SetOp::All, &["ann@x"]),
                cond(TAGS_IDX, SetOp::None, &["php"]),
            ],
            ranges: vec![RangeCondition {
                index: RATING_IDX,
                min: Bound::Excluded(1.5),
                max: Bound::Unbounded,
            }],
            order: Some((RATING_IDX, true)),
            page: None,
            unions: vec![],
        };
        let call = script_call(&USER, &ns(), &spec, false, true);
        assert_eq!(
            texts(&call.keys().to_vecs()),
            [
                "t:user:@rating",
                "t:user:@country:DE",
                "t:user:@country:FR",
                "t:user:@email",
                "t:user:@email",
                "t:user:@tags:php",
                "t:user:@ids",
            ]
        );
        // The bounds of each range, in ZRANGEBYSCORE / ZRANGEBYLEX syntax.
        for bound in [
            &b"(1.5"[..],
            b"+inf",
            b"[an",
            b"(an\xff",
            b"[ann@x:",
            b"(ann@x:\xff",
            b"t:user:",
            b"desc",
        ] {
            assert!(
                call.args().iter().any(|a| a == bound),
                "{}",
                String::from_utf8_lossy(bound)
            );
        }
    }

    #[test]
    fn starts_with_the_empty_value_reads_the_whole_prefix_index() {
        let spec = Spec {
            conditions: vec![cond(EMAIL_IDX, SetOp::StartsWith, &["%_"])],
            ..Spec::default()
        };
        let call = script_call(&USER, &Namespace::none(), &spec, true, false);
        assert_eq!(texts(&call.keys().to_vecs()), ["user:@email", "user:@ids"]);
        assert!(call.args().iter().any(|a| a == b"-"));
        assert!(call.args().iter().any(|a| a == b"+"));
        assert!(!call.args().iter().any(|a| a.starts_with(b"[%_")));
    }

    #[test]
    fn the_rank_call_names_the_sorted_set_and_the_expiry_set() {
        let call = rank_call(&USER, &ns(), RATING_IDX, "9");
        assert_eq!(
            texts(&call.keys().to_vecs()),
            ["t:user:@rating", "t:user:@expiry"]
        );
        assert_eq!(texts(&call.args().to_vecs()), ["9", "t:user:", ""]);
    }

    #[test]
    fn a_reply_gives_totals_ghosts_and_sorted_members() {
        // The page, the ghosts, the ghost count, the total.
        let reply = Value::Array(vec![
            bulk("10"),
            bulk("2"),
            bulk("7"),
            Value::Int(1),
            Value::Int(5),
        ]);
        let answer = parse_reply(&USER, &Spec::default(), false, reply).unwrap();
        assert_eq!(answer.total, 5);
        assert_eq!(answer.ghosts, ["7"]);
        // Integer pks sort numerically.
        assert_eq!(answer.members, ["2", "10"]);
        assert!(answer.scores.is_empty());
    }

    #[test]
    fn an_ordered_reply_keeps_its_order_and_pairs_scores() {
        let reply = Value::Array(vec![
            bulk("9"),
            bulk("inf"),
            bulk("10"),
            bulk("-3.5"),
            Value::Int(0),
            Value::Int(2),
        ]);
        let answer = parse_reply(&USER, &top_spec(RATING_IDX, 2), true, reply).unwrap();
        assert_eq!(answer.total, 2);
        assert!(answer.ghosts.is_empty());
        assert_eq!(answer.members, ["9", "10"]);
        assert_eq!(answer.scores, [f64::INFINITY, -3.5]);
    }

    #[test]
    fn a_bad_reply_is_a_typed_error() {
        for reply in [
            Value::Int(3),
            Value::Array(vec![bulk("3")]),
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![Value::Int(1), Value::Int(0), Value::Int(7)]),
            // More ghosts than entries.
            Value::Array(vec![bulk("3"), Value::Int(2), Value::Int(1)]),
        ] {
            match parse_reply(&USER, &Spec::default(), false, reply) {
                Err(Error::UnexpectedReply { key, .. }) => assert_eq!(key, "user:@ids"),
                Err(other) => panic!("{other:?}"),
                Ok(a) => panic!("accepted: {:?}", a.members),
            }
        }
        let not_utf8 = Value::Array(vec![
            Value::Int(1),
            Value::Int(0),
            Value::BulkString(vec![0xff]),
        ]);
        assert!(matches!(
            parse_reply(&USER, &Spec::default(), false, not_utf8),
            Err(Error::UnexpectedReply { .. })
        ));
    }

    #[test]
    fn scored_answers_and_scores_as_redis_writes_them() {
        assert_eq!(parse_score("inf"), Some(f64::INFINITY));
        assert_eq!(parse_score("+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score("1.25"), Some(1.25));
        assert_eq!(parse_score("high"), None);

        let answer = Answer::from_scored(vec!["a".into(), "2".into(), "b".into(), "-inf".into()]);
        assert_eq!(answer.total, 2);
        assert_eq!(answer.members, ["a", "b"]);
        assert_eq!(answer.scores, [2.0, f64::NEG_INFINITY]);
    }

    #[test]
    fn members_sort_numerically_for_integer_pks_and_by_bytes_otherwise() {
        let mut m: Vec<String> = ["10", "9", "2", "-1"].map(String::from).to_vec();
        sort_members(&USER, &mut m);
        assert_eq!(m, ["-1", "2", "9", "10"]);
        assert_eq!(SESSION.layout, Layout::Strings);
        let mut m: Vec<String> = ["b", "10", "a", "9"].map(String::from).to_vec();
        sort_members(&SESSION, &mut m);
        assert_eq!(m, ["10", "9", "a", "b"]);
    }

    proptest::proptest! {
        /// The shortcut for small natural numbers orders as the numbers do
        /// (the general order: parsed as Lua numbers, ties by text).
        #[test]
        fn small_naturals_sort_as_numbers(
            picks in proptest::collection::vec(
                proptest::prop_oneof![0u64..1_000, 0u64..1_000_000_000_000_000, 999_999_999_999_990u64..1_000_000_000_000_010],
                0..40,
            ),
            text in proptest::collection::vec("(-?[0-9]{1,17})|(0[0-9]{1,3})", 0..3),
        ) {
            let mut m: Vec<String> = picks.iter().map(u64::to_string).collect();
            m.extend(text);
            let mut general: Vec<(OrdF64, String)> = m
                .iter()
                .map(|s| (OrdF64(s.parse::<f64>().unwrap_or(0.0)), s.clone()))
                .collect();
            general.sort();
            sort_members(&USER, &mut m);
            let general: Vec<String> = general.into_iter().map(|(_, s)| s).collect();
            proptest::prop_assert_eq!(m, general);
        }
    }

    #[test]
    fn a_row_implies_escaped_entries_per_index_kind() {
        let r = ann();
        let set = |v: &[&str]| v.iter().map(|s| b(s)).collect::<BTreeSet<_>>();
        assert_eq!(row_entries(&USER, "9", &r, 0), set(&["a%3Ab"]));
        assert_eq!(row_entries(&USER, "9", &r, COUNTRY_IDX), set(&["DE"]));
        // One canonical spelling of the score.
        assert_eq!(row_entries(&USER, "9", &r, RATING_IDX), set(&["7.5"]));
        assert_eq!(row_entries(&USER, "9", &r, TAGS_IDX), set(&["php", "web"]));
        let mut none = r.clone();
        none.columns[EMAIL] = None;
        assert!(row_entries(&USER, "9", &none, EMAIL_IDX).is_empty());
        let order = row(&[Some("paid")], &[]);
        assert_eq!(row_entries(&ORDER, "a%3Ab_7", &order, 0), set(&["a%3Ab"]));
    }

    #[test]
    fn a_fetched_row_that_holds_the_values_matches() {
        let spec = Spec {
            conditions: vec![
                cond(0, SetOp::All, &["a%3Ab"]),
                cond(COUNTRY_IDX, SetOp::Any, &["FR", "DE"]),
                cond(TAGS_IDX, SetOp::All, &["php"]),
                cond(TAGS_IDX, SetOp::None, &["go"]),
                cond(EMAIL_IDX, SetOp::StartsWith, &["an"]),
            ],
            ranges: vec![RangeCondition {
                index: RATING_IDX,
                min: Bound::Included(7.5),
                max: Bound::Excluded(8.0),
            }],
            ..Spec::default()
        };
        assert_eq!(stale(check(&USER, &spec, "9", Some(&ann()))), None);
    }

    #[test]
    fn a_fetched_row_that_no_longer_holds_a_value_is_stale() {
        let spec = Spec {
            conditions: vec![
                cond(COUNTRY_IDX, SetOp::All, &["FR"]),
                cond(EMAIL_IDX, SetOp::StartsWith, &["bo"]),
            ],
            ..Spec::default()
        };
        assert_eq!(
            stale(check(&USER, &spec, "9", Some(&ann()))),
            Some((vec![(COUNTRY_IDX, b("FR")), (EMAIL_IDX, b("bo"))], false))
        );
        // Gone: every entry that led to it is stale.
        let spec = Spec {
            conditions: vec![cond(COUNTRY_IDX, SetOp::Any, &["DE", "FR"])],
            ..Spec::default()
        };
        assert_eq!(
            stale(check(&USER, &spec, "9", None)),
            Some((vec![(COUNTRY_IDX, b("DE")), (COUNTRY_IDX, b("FR"))], false))
        );
    }

    #[test]
    fn a_violated_none_or_range_means_an_entry_is_missing() {
        let none = Spec {
            conditions: vec![cond(TAGS_IDX, SetOp::None, &["web"])],
            ..Spec::default()
        };
        assert_eq!(
            stale(check(&USER, &none, "9", Some(&ann()))),
            Some((vec![], true))
        );
        let range = Spec {
            ranges: vec![RangeCondition {
                index: RATING_IDX,
                min: Bound::Unbounded,
                max: Bound::Excluded(7.5),
            }],
            ..Spec::default()
        };
        assert_eq!(
            stale(check(&USER, &range, "9", Some(&ann()))),
            Some((vec![], true))
        );
    }

    #[test]
    fn repairs_clean_stale_entries_or_reindex_missing_ones() {
        let entries = vec![(COUNTRY_IDX, b("FR"))];
        let clean = repair_plan(&USER, &ns(), "9", &entries, false);
        assert_eq!(clean.op, WriteOp::Clean);
        assert_eq!(clean.keys.base, "t:user:9");
        assert_eq!(clean.stale, entries);
        let reindex = repair_plan(&USER, &ns(), "9", &entries, true);
        assert_eq!(reindex.op, WriteOp::Reindex);
        assert!(reindex.stale.is_empty());

        let sweeps = sweep_plans(&USER, &ns(), &["3".into(), "4".into()]);
        let got: Vec<(WriteOp, &str)> = sweeps
            .iter()
            .map(|p| (p.op, p.keys.member.as_str()))
            .collect();
        assert_eq!(got, [(WriteOp::Sweep, "3"), (WriteOp::Sweep, "4")]);
        assert_eq!(sweeps[0].ns.as_str(), "t:");
    }

    #[test]
    fn the_unique_key_of_a_value_is_escaped() {
        let (key, value) = unique_key(&USER, &ns(), 0, &"a:b".to_owned());
        assert_eq!(key, "t:user:@username:a%3Ab");
        assert_eq!(value, b("a%3Ab"));
    }

    #[test]
    fn the_page_read_names_each_member() {
        let keys = member_keys(&ACCOUNT, &ns(), ["1".into(), "2".into()]);
        let bases: Vec<&str> = keys.iter().map(|k| k.base.as_str()).collect();
        assert_eq!(bases, ["t:account:1", "t:account:2"]);
    }
}
