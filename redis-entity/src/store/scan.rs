//! Walking every entity of a type, or every entity a query matches, in
//! pages, with a cursor: `SSCAN` of the set of all ids for an indexed type
//! (for an integer pk, then `SSCAN` of the directory of its buckets, whose
//! buckets are read a few per page), `SCAN` of the entity keys otherwise;
//! for a query, `SSCAN` of the index set of one of its `eq`/`all` values, or
//! `ZSCAN` of the sorted index of its range, or of the set of all ids, each
//! page checked against the whole query.
//! Memory stays bounded by the page, and each page costs the same whatever
//! the position (no rereading of what came before, as paging by offset
//! does). Like every Redis cursor, an entity stored or deleted during the
//! walk may or may not be seen; one present the whole time is seen at
//! least once (`SCAN` may return a key twice: pages may repeat an entity).

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::query::{self, Check, RangeCondition, SetOp, Spec};
use crate::schema::entity::{Entity, EntityDesc, IndexKind};
use crate::schema::escape::Namespace;
use redis::aio::ConnectionLike;
use std::marker::PhantomData;

/// A walk over every stored `E`, or every `E` a query matches, a page at a
/// time: [`Query::scan`](crate::Query::scan), on a query with no terms for
/// the whole type.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let mut users = store.query::<User>().scan(500);
/// while let Some(page) = users.next_page().await? {
///     for user in page {
///         let user = user?; // a record that does not decode is an error in its place
///         println!("{}", user.name);
///     }
///     // `users.cursor()` resumes from here later (`Scan::resume_at`).
/// }
/// # Ok(()) }
/// ```
pub struct Scan<'s, E, C> {
    store: &'s Store<C>,
    cursor: u64,
    count: usize,
    done: bool,
    source: Source,
    /// Whether `source` is a query's (else the whole type's).
    of_query: bool,
    /// The spaces walked one after the other: the store's namespace, or
    /// each shard's for a sharded type; `shard` is the one being walked
    /// (for a type without indexes on a cluster: the master, see `hints`).
    spaces: Vec<Namespace>,
    shard: usize,
    /// A type without indexes on a cluster: one routing key per master,
    /// fetched at the first page (`SCAN` walks one master at a time).
    hints: Option<Vec<Option<String>>>,
    /// The query each candidate is checked against (empty for a whole type:
    /// every stored entity matches).
    filter: Spec,
    /// A query's error, returned by the first page.
    error: Option<Error>,
    /// [`Source::Ids`]: the buckets of the directory page being walked not
    /// read yet (a small directory comes back whole, whatever the `COUNT`),
    /// and where the directory's walk goes on once they are.
    pending: Vec<String>,
    pending_next: u64,
    /// The directory cursor of the page `pending` came from.
    page_cursor: u64,
    _e: PhantomData<fn() -> E>,
}

/// Where the candidates of a page come from.
#[derive(Debug, Clone)]
enum Source {
    /// `SCAN MATCH` of the entity keys (types without indexes).
    Keys,
    /// `SSCAN` of a set of members: the ids set or one index set.
    Set(Vec<u8>),
    /// `ZSCAN` of a sorted index, keeping the members whose score is in range.
    Sorted(String, RangeCondition),
    /// The ids of a type that keeps them in buckets (its ids key named):
    /// `SSCAN` of the one set a store written before buckets holds, then
    /// (from [`IDS_BUCKETS`] on) `SSCAN` of the directory, whose buckets
    /// (at most 100 ids each) are read a few per page.
    Ids(String),
}

/// The bit of a shard's cursor that says its walk of the ids is in the
/// directory of buckets (below: in the one set).
const IDS_BUCKETS: u64 = 1 << (SHARD_SHIFT - 1);
/// With [`IDS_BUCKETS`]: the walk stopped inside the directory page at
/// this cursor, so a walk resumed there reads all of that page's buckets
/// in its first page (repeating some: this cursor cannot say which were
/// read), and so always gets past it.
const IDS_WHOLE: u64 = 1 << (SHARD_SHIFT - 2);
/// With [`IDS_BUCKETS`]: the walk stopped inside a directory that came
/// back whole (Redis answers a small set at once, whatever the `COUNT`),
/// after the bucket whose order ([`bucket_order`]) the bits below hold,
/// offset by [`AFTER_BIAS`]: a walk resumed there reads the directory
/// again and goes on after that bucket, repeating nothing.
const IDS_AFTER: u64 = 1 << (SHARD_SHIFT - 3);
const AFTER_BIAS: i64 = 1 << (SHARD_SHIFT - 4);
/// Ids a bucket holds at most.
const BUCKET_IDS: usize = 100;

impl Source {
    /// The smallest source known to hold every match of `spec` without a
    /// round trip to measure: an `eq`/`all` value's set, else the range's
    /// sorted index, else every id of the type.
    fn for_query(desc: &'static EntityDesc, ns: &Namespace, spec: &Spec) -> Self {
        let set_condition = spec.conditions.iter().find(|c| {
            c.op == SetOp::All
                && matches!(
                    desc.indexes[c.index].kind,
                    IndexKind::Equality | IndexKind::Tags
                )
        });
        if let Some(v) = set_condition.and_then(|c| c.values.first().map(|v| (c, v))) {
            let field = desc.indexes[v.0.index].field;
            return Source::Set(keyspace::index_key(desc, ns, field, v.1));
        }
        if let Some(r) = spec.ranges.first() {
            let field = desc.indexes[r.index].field;
            return Source::Sorted(keyspace::index_zset(desc, ns, field), r.clone());
        }
        Source::all_ids(desc, ns)
    }

    /// The set of all ids, or its buckets (`keyspace::bucketed_ids`).
    fn all_ids(desc: &'static EntityDesc, ns: &Namespace) -> Self {
        let ids = keyspace::ids_key(desc, ns);
        if keyspace::bucketed_ids(desc) {
            Source::Ids(ids)
        } else {
            Source::Set(ids.into_bytes())
        }
    }

    /// Every stored entity of the type.
    fn for_type(desc: &'static EntityDesc, ns: &Namespace) -> Self {
        // An indexed type keeps the set of its ids; others are found by
        // their keys.
        if desc.indexes.is_empty() {
            Source::Keys
        } else {
            Source::all_ids(desc, ns)
        }
    }
}

/// Where a sharded walk's cursor keeps the shard.
const SHARD_SHIFT: u32 = 48;

impl<E, C> std::fmt::Debug for Scan<'_, E, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("cursor", &self.cursor)
            .field("source", &self.source)
            .field("done", &self.done)
            .finish()
    }
}

impl<'s, E: Entity, C> Scan<'s, E, C> {
    pub(crate) fn of_query(
        store: &'s Store<C>,
        spec: Spec,
        error: Option<Error>,
        cursor: u64,
        count: usize,
    ) -> Self {
        let error = error.or_else(|| {
            (spec.order.is_some() || spec.page.is_some()).then_some(Error::InvalidQuery {
                reason: "a scan walks a cursor in Redis' order: drop order_asc/order_desc and limit, or use fetch",
            })
        });
        // A query with no terms walks the type, as it would with none.
        let of_query = spec != Spec::default();
        let mut scan = Scan {
            filter: spec,
            error,
            of_query,
            ..Scan::new(store, cursor, count)
        };
        scan.source = scan.source_of_shard();
        scan
    }

    fn new(store: &'s Store<C>, cursor: u64, count: usize) -> Self {
        let spaces = keyspace::spaces(E::DESC, &store.ns);
        // A sharded walk's cursor: the shard above bit 48, the shard's own
        // cursor below (a set's cursor never reaches 2^48).
        let shard = (cursor >> SHARD_SHIFT) as usize;
        let mut scan = Scan {
            store,
            cursor,
            count: count.max(1),
            done: false,
            source: Source::Keys,
            of_query: false,
            spaces,
            shard,
            hints: None,
            filter: Spec::default(),
            error: None,
            pending: Vec::new(),
            pending_next: 0,
            page_cursor: 0,
            _e: PhantomData,
        };
        scan.source = scan.source_of_shard();
        scan
    }

    /// The source in the space being walked.
    fn source_of_shard(&self) -> Source {
        let space = &self.spaces[self.shard.min(self.spaces.len() - 1)];
        if self.of_query {
            Source::for_query(E::DESC, space, &self.filter)
        } else {
            Source::for_type(E::DESC, space)
        }
    }

    /// The cursor within the shard being walked.
    fn inner_cursor(&self) -> u64 {
        self.cursor & ((1 << SHARD_SHIFT) - 1)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Walks every stored `E` (`store.query::<E>().scan(count)`).
    pub(crate) fn scan<E: Entity>(&self, count: usize) -> Scan<'_, E, C> {
        Scan::new(self, 0, count)
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Scan<'_, E, C> {
    /// Ends the walk: the next page is `None`.
    pub(crate) fn stop(&mut self) {
        self.done = true;
    }

    /// Where the walk is: give it to [`resume_at`](Self::resume_at) of a
    /// new walk of the same type (or of the same query) to go on later. 0
    /// once the walk is over.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The same walk, resumed at a cursor given by [`cursor`](Self::cursor)
    /// of an earlier walk of the same type or query (0 starts over): a
    /// walk can stop and go on later, even in another process.
    pub fn resume_at(mut self, cursor: u64) -> Self {
        self.cursor = cursor;
        self.pending.clear();
        self.shard = (cursor >> SHARD_SHIFT) as usize;
        self.source = self.source_of_shard();
        self
    }

    /// The next page: one round trip for the cursor, one for the records;
    /// `None` when the walk is over. Entities deleted since they were listed,
    /// and for a query those that do not match it, are left out; a record
    /// that does not decode is an error in its place. A page may be empty
    /// while the walk goes on.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Result<E>>>> {
        if let Some(e) = self.error.take() {
            self.done = true;
            return Err(e);
        }
        if self.done {
            return Ok(None);
        }
        let (store, desc) = (self.store, E::DESC);
        // A walk through an index set, or the ids set, needs it complete
        // (see `store::schema`): a store's check, cached.
        if self.of_query {
            store.schema_read_check(desc, self.filter.indexes()).await?;
        } else {
            store.schema_ids_check(desc).await?;
        }
        // Keys are walked master by master on a cluster; sets and sorted
        // sets are keys, which the connection routes.
        let keys_walk = matches!(self.source, Source::Keys);
        let hint = if keys_walk {
            if self.hints.is_none() {
                self.hints = Some(store.node_hints().await?);
            }
            let hints = self.hints.as_deref().unwrap_or_default();
            let Some(hint) = hints.get(self.shard) else {
                self.done = true;
                return Ok(None);
            };
            hint.clone()
        } else {
            None
        };
        let parts = match &self.hints {
            Some(h) if keys_walk => h.len(),
            _ => self.spaces.len(),
        };
        let (next, found) = if self.pending.is_empty() {
            let (cmd, key) = self.scan_command();
            let mut pipe = redis::pipe();
            pipe.add_command(cmd);
            crate::keyspace::nodes::route_to(&mut pipe, hint.as_deref());
            let ((next, found),): ((u64, Vec<String>),) = pipe
                .query_async(&mut store.reader())
                .await
                .map_err(|e| Error::redis(&key, e))?;
            match &self.source {
                Source::Ids(_) => self.ids_page(next, found).await?,
                _ => (next, found),
            }
        } else {
            self.read_buckets(false).await?
        };
        let members = self.members_found(found);
        self.advance(next, parts, keys_walk);
        if members.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let keys: Vec<EntityKeys> = query::member_keys(desc, &store.ns, members);
        let records = store.rows(desc, &keys).await?;
        Ok(Some(self.page_of(&keys, records)))
    }

    /// The namespace of the shard the walk is in.
    fn space(&self) -> &Namespace {
        &self.spaces[self.shard.min(self.spaces.len() - 1)]
    }

    /// The command that reads the next page of the source (SCAN of the
    /// entity keys, SSCAN of a set, ZSCAN of a sorted set), and the key to
    /// name in its error.
    fn scan_command(&self) -> (redis::Cmd, String) {
        let inner = self.inner_cursor();
        let (mut cmd, key) = match &self.source {
            Source::Keys => {
                let pattern = keyspace::entity_scan_pattern(E::DESC, self.space());
                let mut c = redis::cmd("SCAN");
                c.arg(inner).arg("MATCH").arg(&pattern);
                (c, pattern)
            }
            Source::Set(set) => {
                let mut c = redis::cmd("SSCAN");
                c.arg(set).arg(inner);
                (c, String::from_utf8_lossy(set).into_owned())
            }
            Source::Sorted(zset, _) => {
                let mut c = redis::cmd("ZSCAN");
                c.arg(zset).arg(inner);
                (c, zset.clone())
            }
            Source::Ids(ids) if inner & IDS_BUCKETS == 0 => {
                let mut c = redis::cmd("SSCAN");
                c.arg(ids).arg(inner);
                (c, ids.clone())
            }
            Source::Ids(ids) => {
                let directory = keyspace::ids_directory(ids);
                let mut c = redis::cmd("SSCAN");
                c.arg(&directory).arg(directory_cursor(inner));
                c.arg("COUNT").arg((self.count / BUCKET_IDS).max(1));
                return (c, directory);
            }
        };
        cmd.arg("COUNT").arg(self.count);
        (cmd, key)
    }

    /// A page of [`Source::Ids`]: in the one set, its members, and the
    /// walk goes on in the directory when the set's is over; in the
    /// directory, the buckets it named, read a few at a time.
    async fn ids_page(&mut self, next: u64, found: Vec<String>) -> Result<(u64, Vec<String>)> {
        if self.inner_cursor() & IDS_BUCKETS == 0 {
            return Ok((if next == 0 { IDS_BUCKETS } else { next }, found));
        }
        let at = self.inner_cursor();
        let mut buckets = found;
        buckets.sort_by_cached_key(|b| {
            let order = bucket_order(b);
            (order.is_none(), order, b.clone())
        });
        if at & IDS_AFTER != 0 {
            let after = (at & (IDS_AFTER - 1)) as i64 - AFTER_BIAS;
            buckets.retain(|b| bucket_order(b).is_none_or(|o| o > after));
        }
        self.pending = buckets;
        self.pending_next = if next == 0 { 0 } else { next | IDS_BUCKETS };
        self.page_cursor = directory_cursor(at);
        // A page of a directory paged by its `COUNT` is read whole (about
        // `count` ids), so the directory's cursor is exact; one that came
        // back whole is read a few buckets at a time.
        let whole_directory = self.page_cursor == 0 && next == 0;
        self.read_buckets(at & IDS_WHOLE != 0 || !whole_directory)
            .await
    }

    /// The members of the next buckets of the directory page being walked
    /// (in their order): as many buckets as make about `count` ids, or all
    /// of them (`whole`). Until its last (only a directory that came back
    /// whole is read in parts), the cursor says where a walk resumed there
    /// goes on: after the last bucket read ([`IDS_AFTER`]); or, for a bucket
    /// name no write spells or an order too far out, the directory again,
    /// all at once ([`IDS_WHOLE`]: entities may repeat, none is skipped, as
    /// with any Redis cursor).
    async fn read_buckets(&mut self, whole: bool) -> Result<(u64, Vec<String>)> {
        let Source::Ids(ids) = &self.source else {
            return Ok((self.pending_next, Vec::new()));
        };
        let take = match whole {
            true => self.pending.len(),
            false => (self.count / BUCKET_IDS).max(1).min(self.pending.len()),
        };
        let buckets: Vec<String> = self.pending.drain(..take).collect();
        let after = buckets
            .last()
            .and_then(|b| bucket_order(b))
            .filter(|o| (-AFTER_BIAS..AFTER_BIAS).contains(o));
        let next = match (self.pending.is_empty(), after) {
            (true, _) => self.pending_next,
            (false, Some(o)) => IDS_BUCKETS | IDS_AFTER | (o + AFTER_BIAS) as u64,
            (false, _) => IDS_BUCKETS | IDS_WHOLE | self.page_cursor,
        };
        if buckets.is_empty() {
            return Ok((next, buckets));
        }
        let mut pipe = redis::pipe();
        for bucket in &buckets {
            pipe.cmd("SMEMBERS").arg(format!("{ids}:{bucket}"));
        }
        let members: Vec<Vec<String>> = pipe
            .query_async(&mut self.store.reader())
            .await
            .map_err(|e| Error::redis(ids, e))?;
        Ok((next, members.into_iter().flatten().collect()))
    }

    /// The members a page of the source names, sorted, each once.
    fn members_found(&self, found: Vec<String>) -> Vec<String> {
        let mut members: Vec<String> = match &self.source {
            // Sub keys (columns, maps, relation sets) name their entity too.
            Source::Keys => found
                .iter()
                .filter_map(|k| keyspace::member_of_key(E::DESC, self.space(), k))
                .collect(),
            Source::Set(_) | Source::Ids(_) => found,
            // Member, score pairs: a member out of range is not read at all.
            Source::Sorted(_, range) => found
                .chunks_exact(2)
                .filter(|p| query::parse_score(&p[1]).is_some_and(|s| range.contains(s)))
                .map(|p| p[0].clone())
                .collect(),
        };
        members.sort();
        members.dedup();
        members
    }

    /// Moves the cursor past a page whose reply cursor was `next`, of a
    /// walk in `parts` shards or masters.
    fn advance(&mut self, next: u64, parts: usize, keys_walk: bool) {
        // The next shard's walk starts when this one's is over.
        let shard = self.shard as u64;
        if next == 0 && self.shard + 1 < parts {
            self.shard += 1;
            if !keys_walk {
                self.source = self.source_of_shard();
            }
            self.cursor = (self.shard as u64) << SHARD_SHIFT;
        } else {
            self.cursor = if next == 0 {
                0
            } else {
                (shard << SHARD_SHIFT) | next
            };
            self.done = next == 0;
        }
    }

    /// The entities of a page's records: those gone since they were
    /// listed, and for a query those not matching it, left out.
    fn page_of(&self, keys: &[EntityKeys], records: Vec<super::rows::Record>) -> Vec<Result<E>> {
        let mut page = Vec::with_capacity(keys.len());
        let mut spelled = String::new();
        for (k, record) in keys.iter().zip(records) {
            let member = &k.member;
            let row = match record {
                Ok(row) => row,
                Err(e) => {
                    page.push(Err(e));
                    continue;
                }
            };
            // Gone since it was listed, or (for a query) not a match.
            if !matches!(
                query::check(E::DESC, &self.filter, member, row.as_ref()),
                Check::Match
            ) {
                continue;
            }
            if let (Some(row), Some(pk)) =
                (row, query::parse_member_with::<E>(member, &mut spelled))
            {
                page.push(crate::plan::read::entity_from_row(&pk, k, row));
            }
        }
        page
    }
}

/// The directory cursor in a shard's cursor of the walk of the ids (0 for
/// a walk resumed after a bucket: the directory is read whole again).
fn directory_cursor(inner: u64) -> u64 {
    if inner & IDS_AFTER != 0 {
        0
    } else {
        inner & (IDS_AFTER - 1)
    }
}

/// The order of a bucket of ids by the ids it holds: `-1xx` (-199..-100)
/// -2, `-xx` (-99..-10) -1, `xx` (-9..99) 0, `12xx` 12; `None` for a name
/// no write spells.
fn bucket_order(name: &str) -> Option<i64> {
    let head = name.strip_suffix("xx")?;
    match head {
        "" => Some(0),
        "-" => Some(-1),
        _ => match head.strip_prefix('-') {
            Some(n) => n.parse::<i64>().ok().map(|n| -n - 1),
            None => head.parse::<i64>().ok(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets sort as the ids they hold, for every id the writes spell.
    #[test]
    fn buckets_order_as_their_ids() {
        let ids: [i64; 9] = [i64::MIN, -1234, -150, -99, -10, -9, 0, 99, 1234];
        let orders: Vec<i64> = ids
            .iter()
            .map(|id| {
                let bucket = keyspace::ids_bucket(&id.to_string()).unwrap();
                bucket_order(&bucket).unwrap()
            })
            .collect();
        assert_eq!(orders, [-92233720368547759, -13, -2, -1, -1, 0, 0, 0, 12]);
        assert_eq!(bucket_order("@buckets"), None);
        assert_eq!(bucket_order("1x2xx"), None);
        // A resumed walk after a bucket reads the directory from its start.
        assert_eq!(directory_cursor(IDS_BUCKETS | IDS_AFTER | 7), 0);
        assert_eq!(directory_cursor(IDS_BUCKETS | IDS_WHOLE | 7), 7);
    }
}
