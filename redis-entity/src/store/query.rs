//! Queries over indexes: the [`Query`] builder (set algebra, prefixes,
//! ranges, order, pages) and the store's reads through indexes (`find`,
//! `find_unique`, `top`, `rank`). Planning is in [`crate::plan::query`].

use super::scan::Scan;
use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::query::{self, index_of, index_value, Condition, RangeCondition, SetOp, Spec};
use crate::plan::write::{self, WritePlan};
use crate::schema::codec::SortScore;
use crate::schema::entity::Entity;
use crate::schema::field::{Field, PrefixIndex, RangeOf, SetIndex, SortedIndex, UniqueIndex};
use crate::script;
use crate::script::write::WriteOp;
use redis::aio::ConnectionLike;
use redis::Value;
use std::marker::PhantomData;
use std::ops::Bound;

/// One term of an OR across fields ([`Query::any_of`]): a field with an
/// equality index or a tag relation, and a value.
pub struct Term<E> {
    field: &'static str,
    value: Vec<u8>,
    _e: PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for Term<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Term({} = {})",
            self.field,
            String::from_utf8_lossy(&self.value)
        )
    }
}

impl<E: Entity> Term<E> {
    /// `field` equals `value` (or, for tags, contains it).
    pub fn eq<T, C, K: SetIndex<N>, N>(
        field: Field<E, T, C, K, N>,
        value: impl Into<K::Value>,
    ) -> Self {
        Term {
            field: field.name(),
            value: index_value(&value.into()),
            _e: PhantomData,
        }
    }
}

/// The future of a call whose field argument is checked at the call alone.
pub type Pending<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T>> + Send + 'a>>;

/// How many deletes one pipelined round trip of `Query::delete` carries.
const DELETE_BATCH: usize = 500;

/// A query being built; see the module docs. `S` is the store it runs on.
#[must_use = "a query does nothing until `fetch()`, `ids()` or `count()` is called"]
pub struct Query<'s, E: Entity, S> {
    pub(crate) store: &'s S,
    pub(crate) spec: Spec,
    pub(crate) error: Option<Error>,
    _e: PhantomData<fn() -> E>,
}

impl<'s, E: Entity, S> Query<'s, E, S> {
    pub(crate) fn new(store: &'s S) -> Self {
        Query {
            store,
            spec: Spec::default(),
            error: None,
            _e: PhantomData,
        }
    }

    fn push<T, C, K: SetIndex<N>, N, V: Into<K::Value>>(
        mut self,
        field: Field<E, T, C, K, N>,
        op: SetOp,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        match index_of(E::DESC, field.name()) {
            Some(index) => self.spec.conditions.push(Condition {
                index,
                op,
                values: values.into_iter().map(|v| index_value(&v.into())).collect(),
            }),
            None => {
                // Unreachable with derived entities: the handle's type says it is indexed.
                self.error.get_or_insert(Error::UnexpectedReply {
                    key: String::new(),
                    detail: format!("field `{}` has no index", field.name()),
                });
            }
        }
        self
    }

    /// Entities that match at least one of `terms`, which may name
    /// different fields (an OR across fields: `author = "knuth" OR tag =
    /// "algorithms"`), ANDed with the other conditions: one `SUNION` of
    /// their sets. Each field needs an equality index or a tag relation.
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store, Term};
    /// # #[derive(RedisEntity)] struct Book { #[pk] id: u64, #[index] author: String, #[index] tags: std::collections::BTreeSet<String> }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// let books = store
    ///     .query::<Book>()
    ///     .any_of([Term::eq(Book::AUTHOR, "knuth"), Term::eq(Book::TAGS, "algorithms")])
    ///     .fetch()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn any_of(mut self, terms: impl IntoIterator<Item = Term<E>>) -> Self {
        let mut union = Vec::new();
        for t in terms {
            match index_of(E::DESC, t.field) {
                Some(i) if E::DESC.indexes[i].kind != crate::schema::entity::IndexKind::Prefix => {
                    union.push((i, t.value))
                }
                _ => {
                    self.error.get_or_insert(Error::InvalidKey {
                        segment: t.field.to_owned(),
                        reason: "`any_of` takes fields with an equality index or a tag \
                                 relation (not a prefix index)",
                    });
                }
            }
        }
        self.spec.unions.push(union);
        self
    }

    /// The same query on another store (the blocking store runs the async one).
    pub(crate) fn rebind<'t, T>(self, store: &'t T) -> Query<'t, E, T> {
        Query {
            store,
            spec: self.spec,
            error: self.error,
            _e: PhantomData,
        }
    }

    /// Entities whose field equals `value` (or whose tags contain it).
    pub fn eq<T, C, K: SetIndex<N>, N>(
        self,
        field: Field<E, T, C, K, N>,
        value: impl Into<K::Value>,
    ) -> Self {
        self.push(field, SetOp::All, [value])
    }

    /// Entities having every one of `values` (SINTER).
    pub fn all<T, C, K: SetIndex<N>, N, V: Into<K::Value>>(
        self,
        field: Field<E, T, C, K, N>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.push(field, SetOp::All, values)
    }

    /// Entities having at least one of `values` (SUNION). An empty list matches nothing.
    pub fn any<T, C, K: SetIndex<N>, N, V: Into<K::Value>>(
        self,
        field: Field<E, T, C, K, N>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.push(field, SetOp::Any, values)
    }

    /// Entities having none of `values` (SDIFF).
    pub fn none<T, C, K: SetIndex<N>, N, V: Into<K::Value>>(
        self,
        field: Field<E, T, C, K, N>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.push(field, SetOp::None, values)
    }

    /// Entities whose text field starts with `prefix` (ZRANGEBYLEX on its
    /// prefix index; byte order, so it is correct for any UTF-8 text).
    pub fn prefix<T, C, K: PrefixIndex<N>, N>(
        self,
        field: Field<E, T, C, K, N>,
        prefix: impl Into<K::Value>,
    ) -> Self {
        self.push(field, SetOp::StartsWith, [prefix])
    }

    /// Only `n` results after skipping `offset`, in the stable order of the
    /// members (numeric for integer pks, byte order otherwise). `count()`
    /// ignores it.
    pub fn limit(mut self, offset: usize, n: usize) -> Self {
        self.spec.page = Some((offset, n));
        self
    }

    fn sorted_index<T, C, K, N>(&mut self, field: Field<E, T, C, K, N>) -> Option<usize> {
        let found = index_of(E::DESC, field.name());
        if found.is_none() {
            self.error.get_or_insert(Error::UnexpectedReply {
                key: String::new(),
                detail: format!("field `{}` has no index", field.name()),
            });
        }
        found
    }

    /// Entities whose sorted `field` lies in `range` (`a..b`, `a..=b`, `a..`,
    /// `..b`, `..`; ZRANGEBYSCORE).
    pub fn range<T, C, K: SortedIndex<N>, N>(
        mut self,
        field: Field<E, T, C, K, N>,
        range: impl RangeOf<K::Value, N>,
    ) -> Self {
        let map = |b: Bound<&K::Value>| match b {
            Bound::Included(v) => Bound::Included(v.score()),
            Bound::Excluded(v) => Bound::Excluded(v.score()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let (min, max) = (map(range.start_bound()), map(range.end_bound()));
        // NaN bounds nothing; an error before anything is sent, naming the
        // field. (Infinite bounds are fine: `..` in other words.)
        let nan =
            |b: &Bound<f64>| matches!(b, Bound::Included(v) | Bound::Excluded(v) if v.is_nan());
        if (nan(&min) || nan(&max)) && self.error.is_none() {
            self.error = Some(Error::Encode {
                field: field.name(),
                reason: "a range bound is NaN, which bounds nothing".into(),
            });
        }
        if let Some(index) = self.sorted_index(field) {
            self.spec.ranges.push(RangeCondition { index, min, max });
        }
        self
    }

    /// Results in ascending order of the sorted `field`; equal scores in
    /// byte order of their members (Redis' own order); entities without a
    /// value last.
    pub fn order_asc<T, C, K: SortedIndex<N>, N>(mut self, field: Field<E, T, C, K, N>) -> Self {
        if let Some(index) = self.sorted_index(field) {
            self.spec.order = Some((index, false));
        }
        self
    }

    /// Results in descending order of the sorted `field`; equal scores in
    /// reverse byte order of their members (as `ZREVRANGE`); entities
    /// without a value last.
    pub fn order_desc<T, C, K: SortedIndex<N>, N>(mut self, field: Field<E, T, C, K, N>) -> Self {
        if let Some(index) = self.sorted_index(field) {
            self.spec.order = Some((index, true));
        }
        self
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Starts a set-algebra query over `E`'s equality indexes and tag relations.
    pub fn query<E: Entity>(&self) -> Query<'_, E, Self> {
        Query::new(self)
    }

    /// Every `E` whose indexed `field` equals `value` (or, for a tag
    /// relation, has the tag): `query().eq(field, value).fetch()`.
    pub fn find<E: Entity, T, Co, K: SetIndex<N>, N>(
        &self,
        field: Field<E, T, Co, K, N>,
        value: impl Into<K::Value>,
    ) -> Pending<'_, Vec<E>> {
        Box::pin(self.query::<E>().eq(field, value).fetch())
    }

    /// The `E` whose unique `field` holds `value`, if any; the entity read
    /// is checked to still hold it. One round trip on one server (a script
    /// reads the unique key and the owner's hash), two otherwise (the
    /// unique key, then the entity: in a cluster, or for a type with
    /// `#[hash]` maps, another layout or in the near cache).
    pub fn find_unique<E: Entity, T, Co, K: UniqueIndex<N>, N>(
        &self,
        field: Field<E, T, Co, K, N>,
        value: impl Into<K::Value>,
    ) -> Pending<'_, Option<E>> {
        // The value is encoded here and the future's type names `E` alone,
        // so that a field of the wrong kind is one error, at the call (an
        // `async fn` would repeat it for its future and its `.await`).
        // A type of one shard keeps the unique key in it; a type of many, on
        // a cluster, names the owner in the value's owner key.
        let space = keyspace::type_space(E::DESC, &self.ns);
        let found = query::index_of(E::DESC, field.name()).map(|index| {
            (
                index,
                query::unique_key(E::DESC, &space, index, &value.into()),
            )
        });
        Box::pin(self.find_unique_at::<E>(found))
    }

    async fn find_unique_at<E: Entity>(
        &self,
        found: Option<(usize, (String, Vec<u8>))>,
    ) -> Result<Option<E>> {
        let Some((index, (key, v))) = found else {
            return Ok(None);
        };
        self.schema_read_check(E::DESC, [index]).await?;
        let claims = keyspace::needs_claims(E::DESC, &self.ns);
        // `None`: the two plain reads below (or the claims' owner key).
        let one_call = if !claims && self.looks_up_in_one_call(E::DESC) {
            self.owner_and_record(E::DESC, &key).await
        } else {
            None
        };
        let (keys, records) = match one_call {
            Some(read) => match read? {
                Some(read) => read,
                None => return Ok(None),
            },
            // Boxed: the common lookup on one server is the one call, and
            // the two reads would make its future their size.
            None => match Box::pin(self.owner_then_record(E::DESC, claims, index, &key, &v)).await?
            {
                Some(read) => read,
                None => return Ok(None),
            },
        };
        let (found, repair) = query::finish_unique::<E>(&self.ns, index, v, &keys[0], records)?;
        if let Some(plan) = repair {
            Box::pin(self.write(&plan)).await?;
        }
        Ok(found)
    }

    pub(crate) async fn top_at<E: Entity>(
        &self,
        index: Option<usize>,
        n: usize,
    ) -> Result<Vec<Result<(E, f64)>>> {
        let Some(index) = index else {
            return Ok(Vec::new());
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        self.schema_read_check(E::DESC, [index]).await?;
        // A sharded type: each shard's top n, merged.
        if keyspace::sharded(E::DESC, &self.ns) {
            let answer = self
                .run_query::<E>(&query::top_spec(index, n), false, true)
                .await?;
            return self.fetch_scored(&answer, true).await;
        }
        // One plain read when no entity of the type has a TTL (nothing can
        // have expired); the query script otherwise.
        let zset = keyspace::index_zset(E::DESC, &self.ns, E::DESC.indexes[index].field);
        let mut pipe = redis::pipe();
        pipe.cmd("ZCARD")
            .arg(keyspace::expiry_key(E::DESC, &self.ns));
        pipe.cmd("ZRANGE")
            .arg(&zset)
            .arg(0)
            .arg(n.saturating_sub(1))
            .arg("REV")
            .arg("WITHSCORES");
        let (expiring, flat): (u64, Vec<String>) = pipe
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&zset, e))?;
        let answer = if expiring == 0 {
            query::Answer::from_scored(flat)
        } else {
            self.run_query::<E>(&query::top_spec(index, n), false, true)
                .await?
        };
        self.fetch_scored(&answer, true).await
    }

    /// The entities of a scored answer with their scores, in one pipelined
    /// read; those gone since are skipped (and, with `clean`, their entries
    /// removed).
    pub(crate) async fn fetch_scored<E: Entity>(
        &self,
        answer: &query::Answer,
        clean: bool,
    ) -> Result<Vec<Result<(E, f64)>>> {
        if answer.members.is_empty() {
            return Ok(Vec::new());
        }
        let keys = query::member_keys(E::DESC, &self.ns, answer.members.iter().cloned());
        let records = self.rows(E::DESC, &keys).await?;
        let (top, repairs) = query::finish_top::<E>(&self.ns, answer, &keys, records);
        if clean && !repairs.is_empty() {
            Box::pin(self.write_many(&repairs)).await?;
        }
        Ok(top)
    }

    pub(crate) async fn rank_at<E: Entity>(
        &self,
        index: Option<usize>,
        member: String,
    ) -> Result<Option<u64>> {
        let Some(index) = index else {
            return Ok(None);
        };
        self.schema_read_check(E::DESC, [index]).await?;
        // A type of one index shard ranks in its one space, as on one
        // server: one call.
        let sharded = keyspace::sharded(E::DESC, &self.ns);
        if sharded && E::DESC.shards > 1 {
            return self.rank_across_shards::<E>(index, &member).await;
        }
        let own;
        let space = if sharded {
            own = keyspace::entity_space(E::DESC, &self.ns, &member);
            &own
        } else {
            &self.ns
        };
        let call = query::rank_call(E::DESC, space, index, &member);
        let reply: Option<u64> = script::invoke(&mut self.reader(), self.reader_sent(), &call)
            .await
            .map_err(|e| {
                Error::redis(
                    &keyspace::index_zset(E::DESC, space, E::DESC.indexes[index].field),
                    e,
                )
            })?;
        Ok(reply)
    }

    /// The rank of `member` over every shard, as the rank script gives it
    /// on one server: in its own shard, `None` unless it is live, with its
    /// score; then in every shard the live members with a higher score, and
    /// those with the same score ordered after it (sorted sets order ties
    /// by member, `REV` backwards). Two waves of round trips.
    async fn rank_across_shards<E: Entity>(
        &self,
        index: usize,
        member: &str,
    ) -> Result<Option<u64>> {
        let field = E::DESC.indexes[index].field;
        let own = keyspace::entity_space(E::DESC, &self.ns, member);
        let own_zset = keyspace::index_zset(E::DESC, &own, field);
        let score = match self.own_score_native::<E>(&own, &own_zset, member).await? {
            Some(known) => known,
            None => {
                self.own_score_checked::<E>(&own, index, &own_zset, member)
                    .await?
            }
        };
        let Some(score) = score else {
            return Ok(None);
        };
        let text = crate::schema::codec::score_text(score);
        let spaces = keyspace::spaces(E::DESC, &self.ns);
        // Nothing can have expired: plain reads, one call per shard.
        if let Some(ahead) = self
            .rank_ahead_native::<E>(&spaces, index, member, &text)
            .await?
        {
            return Ok(Some(ahead));
        }
        // One call per node when the slot map groups them.
        let calls: Vec<_> = spaces
            .iter()
            .map(|space| query::rank_ahead_call(E::DESC, space, index, member, &text))
            .collect();
        if let Some(replies) = self.invoke_across(&script::RANK_ACROSS, &calls).await {
            let counts: Option<Vec<u64>> = replies
                .into_iter()
                .map(|v| redis::from_redis_value::<u64>(v).ok())
                .collect();
            if let Some(counts) = counts {
                return Ok(Some(counts.into_iter().sum()));
            }
        }
        let counts = futures_util::future::try_join_all(spaces.iter().map(|space| {
            let call = query::rank_ahead_call(E::DESC, space, index, member, &text);
            let zset = keyspace::index_zset(E::DESC, space, field);
            async move {
                script::invoke::<u64, _>(&mut self.reader(), self.reader_sent(), &call)
                    .await
                    .map_err(|e| Error::redis(&zset, e))
            }
        }))
        .await?;
        Ok(Some(counts.into_iter().sum()))
    }

    /// The member's score in its own shard when nothing of the type can
    /// have expired there (the `ZCARD` of its expiry set, read with the
    /// score, is 0): `Some(score)` (`Some(None)`: not ranked); `None` when
    /// the rank script must say whether the member is live.
    async fn own_score_native<E: Entity>(
        &self,
        own: &crate::schema::escape::Namespace,
        own_zset: &str,
        member: &str,
    ) -> Result<Option<Option<f64>>> {
        if self.may_expire(E::DESC) {
            return Ok(None);
        }
        let mut pipe = redis::pipe();
        pipe.cmd("ZCARD").arg(keyspace::expiry_key(E::DESC, own));
        pipe.cmd("ZSCORE").arg(own_zset).arg(member);
        let (expiring, score): (u64, Option<f64>) = pipe
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(own_zset, e))?;
        if expiring > 0 {
            self.expiring.insert(super::desc_id(E::DESC));
            return Ok(None);
        }
        Ok(Some(score))
    }

    /// The member's score in its own shard, `None` unless the rank script
    /// finds it live (one round trip: the script and `ZSCORE`).
    async fn own_score_checked<E: Entity>(
        &self,
        own: &crate::schema::escape::Namespace,
        index: usize,
        own_zset: &str,
        member: &str,
    ) -> Result<Option<f64>> {
        let call = query::rank_call(E::DESC, own, index, member);
        // The rank script and the score in one round trip (one slot).
        let (live, rest) =
            script::invoke_then(&mut self.reader(), self.reader_sent(), &call, |pipe| {
                pipe.cmd("ZSCORE").arg(own_zset).arg(member);
            })
            .await
            .map_err(|e| Error::redis(own_zset, e))?;
        let live: Option<u64> = decode_named(live, own_zset)?;
        let score: Option<f64> =
            decode_named(rest.into_iter().next().unwrap_or(Value::Nil), own_zset)?;
        Ok(live.and(score))
    }

    /// The members ranked ahead of `member` (with score `text`) over every
    /// shard in `spaces`, by plain reads (one pipeline per shard, sent
    /// together), when nothing of the type can have expired; `None`
    /// otherwise, or when a shard holds an expiring entity (the rank script
    /// answers).
    async fn rank_ahead_native<E: Entity>(
        &self,
        spaces: &[crate::schema::escape::Namespace],
        index: usize,
        member: &str,
        text: &str,
    ) -> Result<Option<u64>> {
        if self.may_expire(E::DESC) {
            return Ok(None);
        }
        let zsets: Vec<String> = spaces
            .iter()
            .map(|space| keyspace::index_zset(E::DESC, space, E::DESC.indexes[index].field))
            .collect();
        let reads: Vec<(&str, redis::Pipeline)> = spaces
            .iter()
            .zip(&zsets)
            .map(|(space, zset)| {
                let mut pipe = redis::pipe();
                query::rank_ahead_reads(E::DESC, space, index, text, &mut pipe);
                (zset.as_str(), pipe)
            })
            .collect();
        let mut counts = Vec::with_capacity(spaces.len());
        for (reply, zset) in self.read_slots(&reads, false).await.into_iter().zip(&zsets) {
            let values = reply.map_err(|e| Error::redis(zset, e))?;
            counts.push(query::rank_ahead_native(member, &mut values.into_iter()));
        }
        let counts: Option<Vec<u64>> = counts.into_iter().collect();
        if counts.is_none() {
            self.expiring.insert(super::desc_id(E::DESC));
        }
        Ok(counts.map(|c| c.into_iter().sum()))
    }

    pub(crate) async fn run_query<E: Entity>(
        &self,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Result<query::Answer> {
        let op = super::observe::Op::Query {
            entity: E::DESC.type_name,
        };
        op.run(
            &self.counters,
            self.run_query_untraced::<E>(spec, count_only, with_scores),
        )
        .await
    }

    async fn run_query_untraced<E: Entity>(
        &self,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Result<query::Answer> {
        self.schema_read_check(E::DESC, spec.indexes()).await?;
        // One server, or a type of one space: no copy of the namespace.
        if !keyspace::sharded(E::DESC, &self.ns) {
            return self
                .query_in::<E>(&self.ns, spec, count_only, with_scores)
                .await;
        }
        let spaces = keyspace::spaces(E::DESC, &self.ns);
        // Sharded: set algebra in each shard, then the union; ordered
        // pages merged by score (exactly one server's answer).
        let shard_spec = query::shard_spec(spec);
        let scored = with_scores || spec.order.is_some();
        // Native reads of every shard a master serves in one pipeline to
        // it, the query script of every shard a master serves in one call
        // to it (reads cheaper one by one than inside a script); what
        // could not be grouped, one pipeline per shard.
        let native = self
            .native_query::<E>(&self.ns, &shard_spec, count_only, scored)
            .is_some();
        let mut grouped = None;
        if native {
            grouped =
                Box::pin(self.native_across::<E>(&spaces, &shard_spec, count_only, scored)).await;
        }
        // The scripts, grouped, also where the native read just found a
        // shard with expiring entities (it marked the type).
        if grouped.is_none() && (!native || self.may_expire(E::DESC)) {
            // Boxed out of the one-server query's future.
            grouped =
                Box::pin(self.query_across::<E>(&spaces, &shard_spec, count_only, scored)).await?;
        }
        let mut answers = match grouped {
            Some(answers) => answers,
            None => {
                futures_util::future::try_join_all(
                    spaces
                        .iter()
                        .map(|space| self.query_in::<E>(space, &shard_spec, count_only, scored)),
                )
                .await?
            }
        };
        let mut cleans = Vec::new();
        // `spaces` lists shard 0, 1, ... in order.
        for (shard, (space, answer)) in spaces.iter().zip(answers.iter_mut()).enumerate() {
            cleans.extend(self.drop_foreign::<E>(shard, space, spec, answer));
        }
        if !cleans.is_empty() {
            Box::pin(self.write_many(&cleans)).await?;
        }
        Ok(query::merge_shards(E::DESC, spec, with_scores, answers))
    }

    /// The native read of a query in `ns`: the `ZCARD` of the type's expiry
    /// set there and the native command, in one pipeline (one slot), with
    /// the expiry set's key; `None` when no native command answers.
    fn native_read<E: Entity>(
        &self,
        ns: &crate::schema::escape::Namespace,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Option<(String, redis::Pipeline)> {
        let native = self.native_query::<E>(ns, spec, count_only, with_scores)?;
        let expiry = keyspace::expiry_key(E::DESC, ns);
        let mut pipe = redis::pipe();
        pipe.cmd("ZCARD").arg(&expiry);
        Self::size_reads::<E>(ns, &mut pipe);
        pipe.add_command(native);
        Some((expiry, pipe))
    }

    /// Adds to `pipe` the reads of how many entities of the type `ns`
    /// holds (`O(1)` each): the one ids set and the bucket directory (a
    /// bucket holds at most 100).
    fn size_reads<E: Entity>(ns: &crate::schema::escape::Namespace, pipe: &mut redis::Pipeline) {
        let ids = keyspace::ids_key(E::DESC, ns);
        pipe.cmd("SCARD").arg(keyspace::ids_directory(&ids));
        pipe.cmd("SCARD").arg(ids);
    }

    /// Notes how many entities of the type one space holds (from the
    /// reads of [`Self::size_reads`] or the query script's reply): past the
    /// budget's `native` in all, no native set command answers its queries
    /// any more (its sets may be large). A type's first query takes the
    /// script, which reports it.
    fn note_size<E: Entity>(&self, in_space: u64) {
        let spaces = if keyspace::sharded(E::DESC, &self.ns) {
            u64::from(E::DESC.shards.max(1))
        } else {
            1
        };
        if in_space.saturating_mul(spaces) > self.budget.native as u64 {
            self.large.insert(super::desc_id(E::DESC));
        }
        self.sized.insert(super::desc_id(E::DESC));
    }

    /// The native query of every shard in `spaces`, each with the `ZCARD`
    /// of its expiry set, in one pipeline per master (see
    /// [`Store::read_slots`]); `None` when a shard holds expiring entities
    /// or a reply is not what was asked (each shard's query then says why,
    /// or takes the script).
    async fn native_across<E: Entity>(
        &self,
        spaces: &[crate::schema::escape::Namespace],
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Option<Vec<query::Answer>> {
        let reads: Vec<(String, redis::Pipeline)> = spaces
            .iter()
            .map(|space| self.native_read::<E>(space, spec, count_only, with_scores))
            .collect::<Option<_>>()?;
        let mut answers = Vec::with_capacity(spaces.len());
        for reply in self.read_slots(&reads, false).await {
            let four: [Value; 4] = reply.ok()?.try_into().ok()?;
            match four {
                [Value::Int(0), Value::Int(buckets), Value::Int(ids), reply] => {
                    let (buckets, ids) = (buckets.max(0) as u64, ids.max(0) as u64);
                    self.note_size::<E>(buckets.saturating_mul(100).saturating_add(ids));
                    answers.push(Self::native_answer::<E>(count_only, with_scores, reply)?)
                }
                // As `query_in` does: the type's reads take the scripts.
                [Value::Int(_), ..] => {
                    self.expiring.insert(super::desc_id(E::DESC));
                    return None;
                }
                _ => return None,
            }
        }
        Some(answers)
    }

    /// Takes out of a shard's answer the members that belong to another
    /// shard (only writes around the library put them there: no entity
    /// writes outside its shard), and returns the writes that remove the
    /// query's entries of them from this shard.
    fn drop_foreign<E: Entity>(
        &self,
        shard: usize,
        space: &crate::schema::escape::Namespace,
        spec: &query::Spec,
        answer: &mut query::Answer,
    ) -> Vec<crate::plan::write::WritePlan> {
        // A hash of each member, no key spelled: every query of a sharded
        // type passes here.
        let foreign = |m: &str| usize::from(keyspace::shard_of(E::DESC, m)) != shard;
        if !answer.members.iter().any(|m| foreign(m)) {
            return Vec::new();
        }
        let mut plans = Vec::new();
        let scored = answer.scores.len() == answer.members.len();
        let (mut members, mut scores) = (Vec::new(), Vec::new());
        for (i, m) in answer.members.drain(..).enumerate() {
            if !foreign(&m) {
                if scored {
                    scores.push(answer.scores[i]);
                }
                members.push(m);
                continue;
            }
            answer.total = answer.total.saturating_sub(1);
            if let query::Check::Stale { entries, .. } = query::check(E::DESC, spec, &m, None) {
                plans.push(query::repair_plan(E::DESC, space, &m, &entries, false));
            }
        }
        answer.members = members;
        if scored {
            answer.scores = scores;
        }
        plans
    }

    /// The query in one space: the store's namespace, or one shard's.
    async fn query_in<E: Entity>(
        &self,
        ns: &crate::schema::escape::Namespace,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Result<query::Answer> {
        // The common shapes run as one native set command, when nothing of
        // the type can have expired (checked in the same round trip); the
        // script otherwise.
        if let Some((expiry, pipe)) = self.native_read::<E>(ns, spec, count_only, with_scores) {
            let reply: redis::RedisResult<(u64, u64, u64, Value)> =
                pipe.query_async(&mut self.reader()).await;
            match reply {
                Ok((0, buckets, ids, reply)) => {
                    self.note_size::<E>(buckets.saturating_mul(100).saturating_add(ids));
                    return Self::native_answer::<E>(count_only, with_scores, reply).ok_or_else(
                        || Error::UnexpectedReply {
                            key: expiry.clone(),
                            detail: "not the reply of a set read".into(),
                        },
                    );
                }
                Ok(_) => self.expiring.insert(super::desc_id(E::DESC)),
                // A native command cannot say which of its keys holds the
                // wrong type: the script below, which names it, answers.
                // (A pipeline reports it as one of its failures.)
                Err(e) if e.to_string().contains("WRONGTYPE") => {}
                Err(e) => return Err(Error::redis(&expiry, e)),
            }
        }
        let call = query::script_query(E::DESC, ns, spec, count_only, with_scores, self.budget);
        let reply: Value = script::invoke(&mut self.reader(), self.reader_sent(), &call.call())
            .await
            .map_err(|e| Error::redis(&keyspace::ids_key(E::DESC, ns), e))?;
        let mut answer = self
            .answer_of::<E>(call, spec, count_only, with_scores, reply)
            .await?;
        let sweeps = self.ghost_sweeps::<E>(ns, &mut answer);
        if !sweeps.is_empty() {
            Box::pin(self.write_many(&sweeps)).await?;
        }
        Ok(answer)
    }

    /// The answer of the query script's `reply` to `call`: a whole answer,
    /// or the first page of a paged one, whose next pages are then asked
    /// one call at a time and gathered (query.lua, "Paged answers").
    async fn answer_of<E: Entity>(
        &self,
        mut call: crate::script::args::Query,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
        mut reply: Value,
    ) -> Result<query::Answer> {
        if let Some((expiring, n)) = script::reply::take_query_sizes(&mut reply) {
            if expiring {
                self.expiring.insert(super::desc_id(E::DESC));
            }
            self.note_size::<E>(n);
        }
        if !script::reply::is_query_page(&reply) {
            return query::parse_reply(E::DESC, spec, with_scores, reply);
        }
        let key = call.ids_set.clone();
        let mut pages = crate::plan::pages::Pages::new(E::DESC, spec, count_only);
        loop {
            let page =
                script::reply::query_page(reply).map_err(|detail| Error::UnexpectedReply {
                    key: key.clone(),
                    detail,
                })?;
            call.cursor = pages.add(page);
            if call.cursor.is_empty() {
                return Ok(pages.answer(with_scores));
            }
            reply = script::invoke(&mut self.reader(), self.reader_sent(), &call.call())
                .await
                .map_err(|e| Error::redis(&key, e))?;
            script::reply::take_query_sizes(&mut reply);
        }
    }

    /// Whether an entity of `desc` may have expired: a type with a default
    /// TTL, or one this store saw with expiring entities (its reads take the
    /// scripts, which skip expired entities).
    fn may_expire(&self, desc: &'static crate::schema::entity::EntityDesc) -> bool {
        desc.ttl.is_some() || self.expiring.contains(super::desc_id(desc))
    }

    /// The native set command answering `spec` in `ns` (one of the common
    /// shapes), when nothing of the type can have expired; `None` when the
    /// query script answers.
    fn native_query<E: Entity>(
        &self,
        ns: &crate::schema::escape::Namespace,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Option<redis::Cmd> {
        // A type with a default TTL, or one seen with expiring entities,
        // goes to the script directly (2 round trips with the fetch); so
        // does a type that may hold large sets (the script pages them).
        let id = super::desc_id(E::DESC);
        if self.may_expire(E::DESC) || !self.sized.contains(id) || self.large.contains(id) {
            return None;
        }
        if count_only {
            return query::native_count_command(E::DESC, ns, spec);
        }
        if with_scores {
            return query::native_top_command(E::DESC, ns, spec);
        }
        query::native_set_command(E::DESC, ns, spec)
    }

    /// The answer of a native read (see `native_query`): a count, scored
    /// members, or members; `None` for a reply of another shape.
    fn native_answer<E: Entity>(
        count_only: bool,
        with_scores: bool,
        reply: Value,
    ) -> Option<query::Answer> {
        Some(match reply {
            Value::Int(n) if count_only => query::Answer {
                total: n.max(0) as u64,
                ..query::Answer::from_members(E::DESC, Vec::new())
            },
            other if with_scores => {
                query::Answer::from_scored(redis::from_redis_value(other).ok()?)
            }
            other => query::Answer::from_members(E::DESC, redis::from_redis_value(other).ok()?),
        })
    }

    /// The writes removing the entries of the expired entities a query met
    /// on the way (`answer.ghosts`): a bounded few per read (the script
    /// reports at most 100; a read of every shard shares that among them).
    fn ghost_sweeps<E: Entity>(
        &self,
        ns: &crate::schema::escape::Namespace,
        answer: &mut query::Answer,
    ) -> Vec<WritePlan> {
        if answer.ghosts.is_empty() {
            return Vec::new();
        }
        let shards = if keyspace::sharded(E::DESC, &self.ns) {
            usize::from(E::DESC.shards.max(1))
        } else {
            1
        };
        answer
            .ghosts
            .truncate((query::GHOST_BUDGET / shards).max(1));
        query::sweep_plans(E::DESC, ns, &answer.ghosts)
    }

    /// The query script in every shard of `spaces`, one call per cluster
    /// node (see `by_node`); `None` when the calls could not be grouped, or
    /// a node failed them (the caller asks shard by shard, which names any
    /// error as a single call does).
    async fn query_across<E: Entity>(
        &self,
        spaces: &[crate::schema::escape::Namespace],
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Result<Option<Vec<query::Answer>>> {
        let queries: Vec<_> = spaces
            .iter()
            .map(|space| {
                query::script_query(E::DESC, space, spec, count_only, with_scores, self.budget)
            })
            .collect();
        let calls: Vec<_> = queries.iter().map(|q| q.call()).collect();
        let Some(replies) = self.invoke_across(&script::QUERY_ACROSS, &calls).await else {
            return Ok(None);
        };
        let mut answers = Vec::with_capacity(replies.len());
        let mut sweeps = Vec::new();
        // A shard's paged answer goes on page by page in its own slot.
        for ((space, query), reply) in spaces.iter().zip(queries).zip(replies) {
            let mut answer =
                Box::pin(self.answer_of::<E>(query, spec, count_only, with_scores, reply)).await?;
            sweeps.extend(self.ghost_sweeps::<E>(space, &mut answer));
            answers.push(answer);
        }
        if !sweeps.is_empty() {
            self.write_many(&sweeps).await?;
        }
        Ok(Some(answers))
    }
}

impl<'s, C: ConnectionLike + Clone + Send + Sync, E: Entity> Query<'s, E, Store<C>> {
    /// What `fetch` would send, without sending it: the round trips, the
    /// command or script call of each, the keys they read.
    ///
    /// ```
    /// # use redis_entity::{RedisEntity, Store};
    /// # #[derive(RedisEntity)] #[redis(prefix = "book")] struct Book { #[pk] id: u64, #[index] tags: std::collections::BTreeSet<String> }
    /// # fn show(store: &Store) -> redis_entity::Result<()> {
    /// let plan = store.query::<Book>().all(Book::TAGS, ["php", "web"]).explain()?;
    /// assert_eq!(plan.round_trips.len(), 2);
    /// assert_eq!(plan.round_trips[0][1], "SINTER book:tags:php book:tags:web");
    /// println!("{plan}");
    /// # Ok(()) }
    /// ```
    pub fn explain(self) -> Result<crate::plan::explain::Explain> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(crate::plan::explain::query(
            E::DESC,
            self.store.namespace(),
            &self.spec,
        ))
    }

    /// The matching entities, each checked against the conditions (at most
    /// two round trips; a third removes stale index entries if any were met).
    pub async fn fetch(self) -> Result<Vec<E>> {
        self.fetch_each().await?.into_iter().collect()
    }

    /// [`fetch`](Self::fetch) with a result per entity: a record that does
    /// not decode is an error in its place, naming its key and field, and
    /// the others are still returned (same round trips).
    pub async fn fetch_each(self) -> Result<Vec<Result<E>>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let store = self.store;
        let members = store
            .run_query::<E>(&self.spec, false, false)
            .await?
            .members;
        if members.is_empty() {
            return Ok(Vec::new());
        }
        // Each record taken as it is decoded (see `rows_each`).
        let mut fetched = query::Fetched::with_capacity(members.len());
        let mut spelled = String::new();
        store
            .rows_each(E::DESC, members, |keys, record| {
                fetched.take(&store.ns, &self.spec, &keys, record, &mut spelled)
            })
            .await?;
        if !fetched.repairs.is_empty() {
            // Rare (stale entries met): boxed out of every fetch's future.
            Box::pin(store.write_many(&fetched.repairs)).await?;
        }
        Ok(fetched.entities)
    }

    /// Deletes every matching entity (and all its index entries), each in
    /// its own atomic write, in pipelined batches of 500: one round trip for
    /// the ids, one per batch. Returns how many were deleted. An entity that
    /// stops matching between the two is deleted all the same (the ids are
    /// read first); with `limit`, only that page.
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store};
    /// # #[derive(RedisEntity)] struct Session { #[pk] id: u64, #[index] user: u64 }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// let gone = store.query::<Session>().eq(Session::USER, 7u64).delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(self) -> Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let store = self.store;
        let members = store
            .run_query::<E>(&self.spec, false, false)
            .await?
            .members;
        let mut deleted = 0;
        for chunk in members.chunks(DELETE_BATCH) {
            let plans: Vec<_> = chunk
                .iter()
                .map(|m| {
                    write::lifecycle(
                        E::DESC,
                        &store.ns,
                        EntityKeys::new(E::DESC, &store.ns, m.clone()),
                        WriteOp::Delete,
                        None,
                    )
                })
                .collect();
            for r in store.write_many(&plans).await? {
                if r? {
                    deleted += 1;
                }
            }
        }
        Ok(deleted)
    }

    /// Walks the matching entities a page of about `count` at a time with a
    /// cursor, in bounded memory, whatever their number: `SSCAN` of the set
    /// of the first `eq`/`all` value, else `ZSCAN` of the first range's
    /// sorted index, else `SSCAN` of every id of the type; each candidate is
    /// read and checked against the whole query, so a page holds only
    /// matches (and may be empty while the walk goes on). Two round trips a
    /// page. Unordered: a query with `order_*` or `limit` is refused with
    /// [`Error::InvalidQuery`] (use `fetch` for a page in order).
    ///
    /// A query with no terms walks every stored `E`
    /// (`store.query::<User>().scan(500)`): `SSCAN` of the type's ids, or
    /// for a type without indexes `SCAN` of its entity keys. `count` is a
    /// hint to Redis: a page may hold fewer or more, and a small type, kept
    /// by Redis in a compact encoding, comes back in one page.
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store};
    /// # #[derive(RedisEntity)] struct Order { #[pk] id: u64, #[index] status: String }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// let mut open = store.query::<Order>().eq(Order::STATUS, "open").scan(500);
    /// while let Some(page) = open.next_page().await? {
    ///     for order in page {
    ///         println!("{}", order?.id);
    ///     }
    ///     // `open.cursor()` resumes later: `.scan(500).resume_at(cursor)`.
    /// }
    /// # Ok(()) }
    /// ```
    pub fn scan(self, count: usize) -> Scan<'s, E, C> {
        Scan::of_query(self.store, self.spec, self.error, 0, count)
    }

    /// The pks of the matching entities as the indexes list them (one round
    /// trip; unlike `fetch`, the entities are not read, so not checked).
    pub async fn ids(self) -> Result<Vec<E::Pk>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let members = self
            .store
            .run_query::<E>(&self.spec, false, false)
            .await?
            .members;
        Ok(query::parse_members::<E>(&members))
    }

    /// How many entities match (ignores `limit`; one round trip).
    pub async fn count(self) -> Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(self
            .store
            .run_query::<E>(&self.spec, true, false)
            .await?
            .total)
    }
}

/// A reply decoded, an error reply (or one of the wrong shape) named by
/// `key` as a single call's error is.
pub(crate) fn decode_named<T: redis::FromRedisValue>(v: Value, key: &str) -> Result<T> {
    v.extract_error()
        .and_then(|v| redis::from_redis_value(v).map_err(Into::into))
        .map_err(|e| Error::redis(key, e))
}
