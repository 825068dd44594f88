//! The async [`Store`]: executes plans on a tokio connection.
//!
//! Every method costs one round trip, except an `update` of the `json` layout
//! (read, then compare-and-set) and the first write after the server lost its
//! script cache (`NOSCRIPT`, answered by resending with `EVAL`).

use crate::board::Board;
use crate::codec::{to_bytes, MapField, Scalar};
use crate::entity::{Entity, Layout};
use crate::error::{Error, FieldError, Result};
use crate::field::{Field, HashField, SetIndex, SortedIndex, Unique};
use crate::key::Namespace;
use crate::keyspace::{self, EntityKeys};
use crate::migrate::{Migration, Progress};
use crate::plan::{json, read, write, write::WritePlan};
use crate::query::{self, Query};
use crate::relation::{self, Relation, Timeline};
use crate::script::{self, write::WriteOp};
use crate::update::Update;
use crate::verify::{self, Report};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::Value;
use std::time::Duration;

/// How often an update of the `json` layout retries when another writer
/// changed the document between its read and its compare-and-set.
pub(crate) const CAS_ATTEMPTS: usize = 100;

/// Saves, loads and deletes entities on one Redis (or Valkey) server.
///
/// Cheap to clone: clones share the connection.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// #[derive(RedisEntity, Debug, PartialEq)]
/// #[redis(prefix = "user")]
/// struct User {
///     #[pk]
///     id: u64,
///     username: String,
///     level: i64,
/// }
///
/// # async fn run() -> redis_entity::Result<()> {
/// let store = Store::connect("redis://127.0.0.1/").await?;
/// store.save(&User { id: 9, username: "lisi".into(), level: 1 }).await?;  // HSET user:{9} ...
/// store.update::<User>(&9).incr(User::LEVEL, 1).exec().await?;           // HINCRBY
/// let u = store.get::<User>(&9).await?.unwrap();
/// assert_eq!(u.level, 2);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Store<C = ConnectionManager> {
    conn: C,
    ns: Namespace,
    sent: script::Sent,
}

impl Store<ConnectionManager> {
    /// Connects to `url` (`redis://host:port/db`) with a reconnecting
    /// [`ConnectionManager`].
    pub async fn connect(url: &str) -> Result<Self> {
        let client = redis::Client::open(url).map_err(|e| Error::redis("", e))?;
        let conn = ConnectionManager::new(client)
            .await
            .map_err(|e| Error::redis("", e))?;
        Ok(Store::new(conn))
    }
}

impl<C> std::fmt::Debug for Store<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("namespace", &self.ns)
            .finish()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// A store over any async connection (a `ConnectionManager`, a
    /// `MultiplexedConnection`, a cluster connection, or a wrapper such as
    /// [`crate::CountingConnection`]).
    pub fn new(conn: C) -> Self {
        Store {
            conn,
            ns: Namespace::none(),
            sent: script::Sent::default(),
        }
    }

    /// The same store with every key under `ns` (a tenant prefix).
    pub fn with_namespace(mut self, ns: Namespace) -> Self {
        self.ns = ns;
        self
    }

    /// The namespace applied to every key.
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }

    /// The scripts this store's connection has sent.
    pub(crate) fn sent(&self) -> &script::Sent {
        &self.sent
    }

    /// A clone of the underlying connection.
    pub fn connection(&self) -> C {
        self.conn.clone()
    }

    /// Every key of the entity with `pk`, namespaced (what `save` writes).
    pub fn keys_of<E: Entity>(&self, pk: &E::Pk) -> EntityKeys {
        EntityKeys::of::<E>(&self.ns, pk)
    }

    async fn write(&self, plan: &WritePlan) -> Result<bool> {
        match script::invoke::<Value, _>(&mut self.conn.clone(), &self.sent, &plan.call()).await {
            Ok(v) => plan.outcome(v),
            Err(e) => Err(plan.server_error(e)),
        }
    }

    /// Sends many writes in one round trip, each atomic on its own, with a
    /// result each: consecutive plans of one type and operation go out as
    /// one script call per [`WRITE_BATCH`] entities, all calls in one
    /// pipeline.
    pub(crate) async fn write_many(&self, plans: &[WritePlan]) -> Result<Vec<Result<bool>>> {
        if plans.is_empty() {
            return Ok(Vec::new());
        }
        let groups = batches(plans);
        let calls: Vec<_> = groups
            .iter()
            .map(|g| match g {
                [one] => one.call(),
                many => write::batch_call(many),
            })
            .collect();
        let replies = script::invoke_all(&mut self.conn.clone(), &self.sent, &calls)
            .await
            .map_err(|e| Error::redis(plans[0].key(), e))?;
        let mut out = Vec::with_capacity(plans.len());
        for (group, reply) in groups.iter().zip(replies) {
            match (group, reply) {
                ([one], v) => out.push(one.outcome(v)),
                (many, Value::Array(items)) if items.len() == many.len() => {
                    out.extend(many.iter().zip(items).map(|(p, v)| p.outcome(v)))
                }
                (many, Value::ServerError(e)) => {
                    let e: redis::RedisError = e.into();
                    out.extend(many.iter().map(|p| Err(p.server_error(e.clone()))))
                }
                (many, other) => out.extend(many.iter().map(|p| {
                    Err(Error::UnexpectedReply {
                        key: p.key().to_owned(),
                        detail: format!("{other:?}"),
                    })
                })),
            }
        }
        Ok(out)
    }

    async fn save_as<E: Entity>(&self, e: &E, insert: bool, ttl: Option<Duration>) -> Result<bool> {
        let keys = EntityKeys::of_entity(&self.ns, e);
        let plan = write::save(
            E::DESC,
            self.ns.as_str(),
            keys,
            &checked_row(e)?,
            insert,
            ttl,
        );
        self.write(&plan).await
    }

    /// Upserts `entity` (one atomic write, one round trip). An existing
    /// entity keeps its remaining TTL; a new one gets the container `ttl`.
    /// Returns `true` when the entity was created.
    pub async fn save<E: Entity>(&self, entity: &E) -> Result<bool> {
        self.save_as(entity, false, None).await
    }

    /// Upserts `entity` and gives all its keys a new TTL.
    pub async fn save_with_ttl<E: Entity>(&self, entity: &E, ttl: Duration) -> Result<bool> {
        self.save_as(entity, false, Some(ttl)).await
    }

    /// Creates `entity`; [`Error::AlreadyExists`] (and nothing written) if its key is taken.
    pub async fn insert<E: Entity>(&self, entity: &E) -> Result<()> {
        self.save_as(entity, true, None).await.map(drop)
    }

    /// Upserts every entity in one pipelined round trip; each entity's write
    /// is atomic on its own. The first error is returned after all were sent.
    pub async fn save_all<E: Entity>(&self, entities: &[E]) -> Result<()> {
        let plans = entities
            .iter()
            .map(|e| {
                let keys = EntityKeys::of_entity(&self.ns, e);
                Ok(write::save(
                    E::DESC,
                    self.ns.as_str(),
                    keys,
                    &checked_row(e)?,
                    false,
                    None,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        self.write_many(&plans)
            .await?
            .into_iter()
            .try_for_each(|r| r.map(drop))
    }

    /// Loads the entity with `pk` (one round trip), `None` if there is none.
    pub async fn get<E: Entity>(&self, pk: &E::Pk) -> Result<Option<E>> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        read::read(E::DESC, &keys, &mut pipe);
        let replies: Vec<Value> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys.base, e))?;
        decode::<E>(pk, &keys, &mut replies.into_iter())
    }

    /// Loads many entities in one round trip, in the order of `pks`.
    pub async fn get_many<E: Entity>(&self, pks: &[E::Pk]) -> Result<Vec<Option<E>>> {
        if pks.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<EntityKeys> = pks
            .iter()
            .map(|pk| EntityKeys::of::<E>(&self.ns, pk))
            .collect();
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for k in &keys {
            read::read(E::DESC, k, &mut pipe);
        }
        let replies: Vec<Value> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let mut it = replies.into_iter();
        pks.iter()
            .zip(&keys)
            .map(|(pk, k)| decode::<E>(pk, k, &mut it))
            .collect()
    }

    /// True when an entity with `pk` is stored (one `EXISTS`).
    pub async fn exists<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let n: u64 = exists_cmd(E::DESC, &keys)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys.base, e))?;
        Ok(n > 0)
    }

    /// Deletes the entity and every key it owns; `false` if there was none.
    pub async fn delete<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        self.write(&write::lifecycle(
            E::DESC,
            self.ns.as_str(),
            keys,
            WriteOp::Delete,
            None,
        ))
        .await
    }

    /// Starts an in-place update of the entity with `pk`.
    pub fn update<E: Entity>(&self, pk: &E::Pk) -> Update<'_, E, Self> {
        Update::new(self, pk)
    }

    /// Gives every key of the entity a TTL; `false` if there is no such entity.
    pub async fn expire<E: Entity>(&self, pk: &E::Pk, ttl: Duration) -> Result<bool> {
        self.lifecycle::<E>(pk, WriteOp::Expire, Some(ttl)).await
    }

    /// Removes the TTL of every key of the entity; `false` if there is no such entity.
    pub async fn persist<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        self.lifecycle::<E>(pk, WriteOp::Persist, None).await
    }

    async fn lifecycle<E: Entity>(
        &self,
        pk: &E::Pk,
        op: WriteOp,
        ttl: Option<Duration>,
    ) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        match self
            .write(&write::lifecycle(E::DESC, self.ns.as_str(), keys, op, ttl))
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The remaining TTL of the entity: `None` when it has none or does not exist.
    pub async fn ttl<E: Entity>(&self, pk: &E::Pk) -> Result<Option<Duration>> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let cmd = ttl_cmd(E::DESC, &keys);
        let ms: Vec<i64> = cmd
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys.base, e))?;
        Ok(remaining(&ms))
    }

    /// Reads one entry of a `#[hash]` field (`HGET <key>:<field> k`).
    pub async fn hget<E: Entity, M: MapField>(
        &self,
        field: HashField<E, M>,
        pk: &E::Pk,
        key: impl Into<M::Key>,
    ) -> Result<Option<M::Value>> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let map_key = &keys.maps[field.map()];
        let raw: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(map_key)
            .arg(to_bytes(&key.into()))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(map_key, e))?;
        raw.map(|r| {
            M::Value::decode(&r)
                .map_err(|e| Error::from_field(map_key, FieldError::parse(field.name(), &r, e)))
        })
        .transpose()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Starts a set-algebra query over `E`'s equality indexes and tag relations.
    pub fn query<E: Entity>(&self) -> Query<'_, E, Self> {
        Query::new(self)
    }

    /// Every `E` whose indexed `field` equals `value` (or, for a tag
    /// relation, has the tag): `query().eq(field, value).fetch()`.
    pub async fn find<E: Entity, T, Co, K: SetIndex>(
        &self,
        field: Field<E, T, Co, K>,
        value: impl Into<K::Value>,
    ) -> Result<Vec<E>> {
        self.query::<E>().eq(field, value).fetch().await
    }

    /// The `E` whose unique `field` holds `value`, if any (two round trips:
    /// the unique key, then the entity, which is checked to still hold it).
    pub async fn find_unique<E: Entity, T, Co, X: Scalar>(
        &self,
        field: Field<E, T, Co, Unique<X>>,
        value: impl Into<X>,
    ) -> Result<Option<E>> {
        let Some(index) = query::index_of(E::DESC, field.name()) else {
            return Ok(None);
        };
        let (key, v) = query::unique_key(E::DESC, &self.ns, index, &value.into());
        let member: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        let Some(member) = member else {
            return Ok(None);
        };
        let (pipe, keys) = query::read_members(E::DESC, &self.ns, std::slice::from_ref(&member));
        let replies: Vec<Value> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let (found, repair) =
            query::finish_unique::<E>(&self.ns, index, v, &member, &keys[0], replies)?;
        if let Some(plan) = repair {
            self.write(&plan).await?;
        }
        Ok(found)
    }

    /// The `n` entities with the highest sorted `field`, with their scores
    /// (a leaderboard with profiles): two round trips, whatever `n`.
    pub async fn top<E: Entity, T, Co, K: SortedIndex>(
        &self,
        field: Field<E, T, Co, K>,
        n: usize,
    ) -> Result<Vec<(E, f64)>> {
        let Some(index) = query::index_of(E::DESC, field.name()) else {
            return Ok(Vec::new());
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        // One plain read when no entity of the type has a TTL (nothing can
        // have expired); the query script otherwise.
        let zset = keyspace::index_zset(E::DESC, self.ns.as_str(), E::DESC.indexes[index].field);
        let mut pipe = redis::pipe();
        pipe.cmd("ZCARD")
            .arg(keyspace::expiry_key(E::DESC, self.ns.as_str()));
        pipe.cmd("ZRANGE")
            .arg(&zset)
            .arg(0)
            .arg(n.saturating_sub(1))
            .arg("REV")
            .arg("WITHSCORES");
        let (expiring, flat): (u64, Vec<String>) = pipe
            .query_async(&mut self.conn.clone())
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
    async fn fetch_scored<E: Entity>(
        &self,
        answer: &query::Answer,
        clean: bool,
    ) -> Result<Vec<(E, f64)>> {
        if answer.members.is_empty() {
            return Ok(Vec::new());
        }
        let (pipe, keys) = query::read_members(E::DESC, &self.ns, &answer.members);
        let replies: Vec<Value> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let (top, repairs) = query::finish_top::<E>(&self.ns, answer, &keys, replies)?;
        if clean && !repairs.is_empty() {
            self.write_many(&repairs).await?;
        }
        Ok(top)
    }

    /// The 0-based rank of the entity by its sorted `field`, highest first
    /// (`ZREVRANK`, one round trip); `None` when it has no value or no entity.
    /// Expired entities are never counted above it.
    pub async fn rank<E: Entity, T, Co, K: SortedIndex>(
        &self,
        field: Field<E, T, Co, K>,
        pk: &E::Pk,
    ) -> Result<Option<u64>> {
        let Some(index) = query::index_of(E::DESC, field.name()) else {
            return Ok(None);
        };
        let call = query::rank_call(E::DESC, &self.ns, index, &E::member(pk));
        let reply: Option<u64> = script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| {
                Error::redis(
                    &keyspace::index_zset(E::DESC, self.ns.as_str(), E::DESC.indexes[index].field),
                    e,
                )
            })?;
        Ok(reply)
    }

    /// Adds `delta` to the entity's score on `board` in the current bucket
    /// (`ZINCRBY`) and sets the bucket's expiry, in one round trip; returns
    /// the new score.
    pub async fn board_incr<E: Entity>(
        &self,
        board: &Board<E>,
        pk: &E::Pk,
        delta: f64,
    ) -> Result<f64> {
        self.board_incr_at(board, pk, delta, std::time::SystemTime::now())
            .await
    }

    /// Like `board_incr`, in the bucket of time `at`.
    pub async fn board_incr_at<E: Entity>(
        &self,
        board: &Board<E>,
        pk: &E::Pk,
        delta: f64,
        at: std::time::SystemTime,
    ) -> Result<f64> {
        let key = board.key(&self.ns, at);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("ZINCRBY")
            .arg(&key)
            .arg(crate::codec::score_text(delta))
            .arg(E::member(pk))
            .cmd("PEXPIREAT")
            .arg(&key)
            .arg(board.expires_at_ms(at))
            .ignore();
        let (score,): (String,) = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        query::parse_score(&score).ok_or_else(|| Error::UnexpectedReply { key, detail: score })
    }

    /// The `n` best entities of the current bucket of `board`, with scores
    /// (two round trips).
    pub async fn board_top<E: Entity>(&self, board: &Board<E>, n: usize) -> Result<Vec<(E, f64)>> {
        self.board_top_at(board, std::time::SystemTime::now(), n)
            .await
    }

    /// The `n` best entities of the bucket of time `at`.
    pub async fn board_top_at<E: Entity>(
        &self,
        board: &Board<E>,
        at: std::time::SystemTime,
        n: usize,
    ) -> Result<Vec<(E, f64)>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let key = board.key(&self.ns, at);
        let flat: Vec<String> = redis::cmd("ZRANGE")
            .arg(&key)
            .arg(0)
            .arg(n - 1)
            .arg("REV")
            .arg("WITHSCORES")
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        // Entities deleted since are skipped; a board keeps its history.
        self.fetch_scored(&query::Answer::from_scored(flat), false)
            .await
    }

    /// The entity's 0-based rank in the current bucket of `board`, best first.
    pub async fn board_rank<E: Entity>(&self, board: &Board<E>, pk: &E::Pk) -> Result<Option<u64>> {
        let key = board.key(&self.ns, std::time::SystemTime::now());
        redis::cmd("ZREVRANK")
            .arg(&key)
            .arg(E::member(pk))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))
    }

    /// Relates `a` to `b` on both sides in one atomic call (seed 000:
    /// follow); `true` when it was new.
    pub async fn relate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
    ) -> Result<bool> {
        self.relation_call(rel, a, b, true).await
    }

    /// Removes the relation of `a` to `b` on both sides (unfollow); `true`
    /// when there was one.
    pub async fn unrelate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
    ) -> Result<bool> {
        self.relation_call(rel, a, b, false).await
    }

    async fn relation_call<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
        relate: bool,
    ) -> Result<bool> {
        let call = relation::call(rel, &self.ns, a, b, relate);
        let n: i64 = script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| Error::redis(&relation::forward_key(rel, &self.ns, a), e))?;
        Ok(n > 0)
    }

    /// The pks of the `B`s that `a` relates to (people I follow), one round trip.
    pub async fn related<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
    ) -> Result<Vec<B::Pk>> {
        let key = relation::forward_key(rel, &self.ns, a);
        self.members_of::<B>(&redis::cmd("SMEMBERS").arg(&key).clone(), &key)
            .await
    }

    /// The pks of the `A`s related to `b` (people who follow me), one round trip.
    pub async fn related_back<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        b: &B::Pk,
    ) -> Result<Vec<A::Pk>> {
        let key = relation::reverse_key(rel, &self.ns, b);
        self.members_of::<A>(&redis::cmd("SMEMBERS").arg(&key).clone(), &key)
            .await
    }

    /// For a relation of a type to itself: the pks related both ways with
    /// `a` (mutual follows), by SINTER, one round trip.
    pub async fn mutual<A: Entity>(&self, rel: &Relation<A, A>, a: &A::Pk) -> Result<Vec<A::Pk>> {
        let (fwd, back) = (
            relation::forward_key(rel, &self.ns, a),
            relation::reverse_key(rel, &self.ns, a),
        );
        self.members_of::<A>(&redis::cmd("SINTER").arg(&fwd).arg(&back).clone(), &fwd)
            .await
    }

    /// The `B`s that `a` relates to, read in one pipelined round trip after
    /// the set (two in all); ones deleted or expired since are skipped.
    pub async fn related_entities<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
    ) -> Result<Vec<B>> {
        let pks = self.related(rel, a).await?;
        Ok(self
            .get_many::<B>(&pks)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    async fn members_of<E: Entity>(&self, cmd: &redis::Cmd, key: &str) -> Result<Vec<E::Pk>> {
        let members: Vec<String> = cmd
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(key, e))?;
        let mut members = members;
        query::sort_members(E::DESC, &mut members);
        Ok(members
            .iter()
            .filter_map(|m| query::parse_member::<E>(m))
            .collect())
    }

    /// Pushes `post` onto the timeline of every owner, newest first, capped:
    /// one pipelined round trip per 1,000 owners.
    pub async fn timeline_push<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: &P::Pk,
        owners: &[O::Pk],
    ) -> Result<()> {
        let member = P::member(post);
        for chunk in owners.chunks(relation::PUSH_BATCH) {
            let keys: Vec<String> = chunk
                .iter()
                .map(|o| keyspace::entity_key(O::DESC, self.ns.as_str(), &O::member(o)))
                .collect();
            let pipe = relation::push_pipeline(&keys, timeline.name(), &member, timeline.cap());
            let () = pipe
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| Error::redis(&keys[0], e))?;
        }
        Ok(())
    }

    /// Pushes `post` onto the timelines of everyone related back to `author`
    /// (seed 000: a new post goes to every follower): one round trip for the
    /// followers, one per 1,000 of them for the push.
    pub async fn timeline_push_related<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: &P::Pk,
        rel: &Relation<O, O>,
        author: &O::Pk,
    ) -> Result<usize> {
        let followers = self.related_back(rel, author).await?;
        self.timeline_push(timeline, post, &followers).await?;
        Ok(followers.len())
    }

    /// A page of `owner`'s timeline with its posts, newest first: `LRANGE`,
    /// then one pipelined read (two round trips). Posts deleted or expired
    /// since are skipped.
    pub async fn timeline<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        owner: &O::Pk,
        offset: usize,
        n: usize,
    ) -> Result<Vec<P>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let key = timeline.key(&self.ns, owner);
        let members: Vec<String> = redis::cmd("LRANGE")
            .arg(&key)
            .arg(offset)
            .arg(offset + n - 1)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        let pks: Vec<P::Pk> = members
            .iter()
            .filter_map(|m| query::parse_member::<P>(m))
            .collect();
        Ok(self
            .get_many::<P>(&pks)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Runs one batch of `migration` from `cursor`: SCAN, read, convert,
    /// save (each entity atomic), and delete the sources if asked. `convert`
    /// gets each legacy key and its value; `Ok(None)` skips the key.
    pub async fn migrate_batch<E, F>(
        &self,
        migration: &Migration,
        cursor: u64,
        mut convert: F,
    ) -> Result<Progress>
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
    {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&migration.pattern)
            .arg("COUNT")
            .arg(migration.batch.max(1))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&migration.pattern, e))?;
        let mut progress = Progress {
            cursor: next,
            done: next == 0,
            scanned: keys.len() as u64,
            ..Progress::default()
        };
        if keys.is_empty() {
            return Ok(progress);
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for k in &keys {
            pipe.cmd("GET").arg(k);
        }
        let values: Vec<Value> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys[0], e))?;
        let mut sources = Vec::new();
        let mut plans = Vec::new();
        for (k, v) in keys.into_iter().zip(values) {
            let Value::BulkString(raw) = v else {
                progress.skipped += 1; // gone since the scan, or not a string
                continue;
            };
            match convert(&k, &raw) {
                Ok(Some(e)) => {
                    let row = match checked_row(&e) {
                        Ok(r) => r,
                        Err(err) => {
                            progress.failed.push((k, err.to_string()));
                            continue;
                        }
                    };
                    let keys = EntityKeys::of_entity(&self.ns, &e);
                    plans.push(write::save(
                        E::DESC,
                        self.ns.as_str(),
                        keys,
                        &row,
                        false,
                        None,
                    ));
                    sources.push(k);
                }
                Ok(None) => progress.skipped += 1,
                Err(reason) => progress.failed.push((k, reason)),
            }
        }
        if migration.dry_run {
            progress.migrated = plans.len() as u64;
            return Ok(progress);
        }
        let results = self.write_many(&plans).await?;
        let mut written = Vec::new();
        for (k, r) in sources.into_iter().zip(results) {
            match r {
                Ok(_) => written.push(k),
                Err(e) => progress.failed.push((k, e.to_string())),
            }
        }
        progress.migrated = written.len() as u64;
        if migration.delete_source && !written.is_empty() {
            let deleted: u64 = redis::cmd("DEL")
                .arg(&written)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| Error::redis(&written[0], e))?;
            progress.deleted = deleted;
        }
        Ok(progress)
    }

    /// Runs `migration` from `cursor` to the end, batch after batch,
    /// reporting progress after each (persist `progress.cursor` to resume
    /// after an interruption).
    pub async fn migrate<E, F, P>(
        &self,
        migration: &Migration,
        cursor: u64,
        mut convert: F,
        mut on_progress: P,
    ) -> Result<Progress>
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
        P: FnMut(&Progress),
    {
        let mut total = Progress {
            cursor,
            ..Progress::default()
        };
        loop {
            let batch = self
                .migrate_batch(migration, total.cursor, &mut convert)
                .await?;
            total.add(batch);
            on_progress(&total);
            if total.done {
                return Ok(total);
            }
        }
    }

    async fn run_query<E: Entity>(
        &self,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Result<query::Answer> {
        let call = query::script_call(E::DESC, &self.ns, spec, count_only, with_scores);
        let reply: Value = script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| Error::redis(&keyspace::ids_key(E::DESC, self.ns.as_str()), e))?;
        let answer = query::parse_reply(E::DESC, spec, with_scores, reply)?;
        if !answer.ghosts.is_empty() {
            // Expired entities met on the way: remove all their entries now.
            self.write_many(&query::sweep_plans(E::DESC, &self.ns, &answer.ghosts))
                .await?;
        }
        Ok(answer)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Checks every index invariant of `E` against what is stored (SCAN, never
    /// KEYS; reads every entity and index key, so its cost is proportional to
    /// the data). See [`crate::verify`].
    pub async fn verify<E: Entity>(&self) -> Result<Report> {
        let mut v = verify::Verifier::new(E::DESC, &self.ns);
        while let Some(pipe) = v.next_request() {
            let replies: Vec<Value> = pipe
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| Error::redis(&keyspace::ids_key(E::DESC, self.ns.as_str()), e))?;
            v.feed(replies)?;
        }
        Ok(v.report())
    }

    /// Removes the index entries of entities of `E` that have expired,
    /// looking at no more than `budget` members whose TTL has passed (oldest
    /// first): one read of the expiry set, one pipelined write. Returns how
    /// many expired entities were unindexed. Queries already skip expired
    /// entities and remove what they meet; a periodic sweep removes the rest,
    /// with no keyspace notifications and no `CONFIG`.
    pub async fn sweep<E: Entity>(&self, budget: usize) -> Result<usize> {
        let key = keyspace::expiry_key(E::DESC, self.ns.as_str());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let due: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(&key)
            .arg("-inf")
            .arg(now)
            .arg("LIMIT")
            .arg(0)
            .arg(budget)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        if due.is_empty() {
            return Ok(0);
        }
        let swept = self
            .write_many(&query::sweep_plans(E::DESC, &self.ns, &due))
            .await?
            .into_iter()
            .filter(|r| matches!(r, Ok(true)))
            .count();
        Ok(swept)
    }

    /// Fixes what `verify` reported: stale entries are removed (only if still
    /// stale), missing ones re-added from the stored values, each entity in
    /// one atomic write; the listed half of a one-sided relation is removed.
    /// Returns how many repairs were made.
    pub async fn repair<E: Entity>(&self, report: &Report) -> Result<usize> {
        let plans = verify::repairs(E::DESC, &self.ns, report);
        for chunk in plans.chunks(500) {
            for r in self.write_many(chunk).await? {
                match r {
                    // Deleted since the report: nothing left to repair.
                    Ok(_) | Err(Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let mut fixed = plans.len();
        if let Some(pipe) = verify::relation_repairs(report) {
            let () = pipe
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| Error::redis(&keyspace::ids_key(E::DESC, self.ns.as_str()), e))?;
            fixed += report
                .violations
                .iter()
                .filter(|v| matches!(v, verify::Violation::OneSidedRelation { .. }))
                .count();
        }
        Ok(fixed)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync, E: Entity> Query<'_, E, Store<C>> {
    /// The matching entities, each checked against the conditions (at most
    /// two round trips; a third removes stale index entries if any were met).
    pub async fn fetch(self) -> Result<Vec<E>> {
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
        let (pipe, keys) = query::read_members(E::DESC, &store.ns, &members);
        let replies: Vec<Value> = pipe
            .query_async(&mut store.conn.clone())
            .await
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let fetched = query::finish_fetch::<E>(&store.ns, &self.spec, &members, &keys, replies)?;
        if !fetched.repairs.is_empty() {
            store.write_many(&fetched.repairs).await?;
        }
        Ok(fetched.entities)
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
        Ok(members
            .iter()
            .filter_map(|m| query::parse_member::<E>(m))
            .collect())
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

impl<C: ConnectionLike + Clone + Send + Sync, E: Entity> Update<'_, E, Store<C>> {
    /// Sends the update as one atomic write. [`Error::NotFound`] (and nothing
    /// written) when the entity does not exist or has expired.
    pub async fn exec(self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let store = self.store;
        write::check_update_scores(E::DESC, &self.ops)?;
        let keys = EntityKeys::new(E::DESC, store.ns.as_str(), self.member);
        if E::DESC.layout != Layout::Json {
            let plan = write::update(
                E::DESC,
                store.ns.as_str(),
                keys,
                &self.ops,
                self.ttl,
                self.version,
            );
            return store.write(&plan).await.map(drop);
        }
        // The json layout keeps one document: read it, change it, and write it
        // back only if nobody changed it meanwhile.
        for attempt in 0..CAS_ATTEMPTS {
            tokio::time::sleep(write::cas_backoff(attempt)).await;
            let read: Option<Vec<u8>> = redis::cmd("GET")
                .arg(&keys.base)
                .query_async(&mut store.conn.clone())
                .await
                .map_err(|e| Error::redis(&keys.base, e))?;
            let read = read.ok_or_else(|| Error::NotFound {
                key: keys.base.clone(),
            })?;
            let doc = json::apply_json_ops(E::DESC, &keys.base, &read, &self.ops)?;
            let plan = write::json_cas(
                E::DESC,
                store.ns.as_str(),
                keys.clone(),
                read,
                doc,
                &self.ops,
                self.ttl,
            );
            match store.write(&plan).await {
                Err(Error::Redis { source, .. }) if WritePlan::is_cas_retry(&source) => continue,
                other => return other.map(drop),
            }
        }
        Err(Error::UnexpectedReply {
            key: keys.base,
            detail: "the document kept changing during the update".into(),
        })
    }
}

/// The stored form of `e`, refused if a sorted index value has no score.
pub(crate) fn checked_row<E: Entity>(e: &E) -> Result<crate::Row> {
    let row = e.to_row()?;
    write::check_scores(E::DESC, &row)?;
    Ok(row)
}

/// Decodes one entity's replies, attaching the key to field errors.
pub(crate) fn decode<E: Entity>(
    pk: &E::Pk,
    keys: &EntityKeys,
    replies: &mut impl Iterator<Item = Value>,
) -> Result<Option<E>> {
    match read::decode_read(E::DESC, keys, replies)? {
        None => Ok(None),
        Some(row) => E::from_row(pk, row)
            .map(Some)
            .map_err(|e| Error::from_field(field_key(E::DESC, keys, e.field), e)),
    }
}

/// The key that holds `field`: its own key in the `strings` layout or for a
/// `#[hash]` field, the entity key otherwise.
fn field_key<'k>(desc: &crate::EntityDesc, keys: &'k EntityKeys, field: &str) -> &'k str {
    if let Some(i) = desc.maps.iter().position(|m| m.name == field) {
        return &keys.maps[i];
    }
    if let Some(i) = desc.columns.iter().position(|c| c.name == field) {
        if let Some(k) = keys.columns.get(i) {
            return k;
        }
    }
    &keys.base
}

/// `EXISTS` over the keys whose presence means the entity exists.
pub(crate) fn exists_cmd(desc: &crate::EntityDesc, keys: &EntityKeys) -> redis::Cmd {
    let mut c = redis::cmd("EXISTS");
    c.arg(&keys.base);
    for (col, k) in desc.columns.iter().zip(&keys.columns) {
        if col.ttl.is_none() {
            c.arg(k);
        }
    }
    c
}

/// `PTTL` of the presence keys, in one script-free round trip.
pub(crate) fn ttl_cmd(desc: &crate::EntityDesc, keys: &EntityKeys) -> redis::Pipeline {
    let mut p = redis::pipe();
    p.cmd("PTTL").arg(&keys.base);
    for (col, k) in desc.columns.iter().zip(&keys.columns) {
        if col.ttl.is_none() {
            p.cmd("PTTL").arg(k);
        }
    }
    p
}

/// The entity's TTL from the `PTTL` replies of its presence keys.
pub(crate) fn remaining(pttls: &[i64]) -> Option<Duration> {
    pttls
        .iter()
        .find(|&&ms| ms != -2)
        .filter(|&&ms| ms >= 0)
        .map(|&ms| Duration::from_millis(ms as u64))
}

/// How many entities one write-script call carries at most (`save_all`,
/// repairs, sweeps): large enough to amortise the call, small enough that
/// one call does not hold the server for long.
pub(crate) const WRITE_BATCH: usize = 100;

/// Splits plans into runs of one type and operation, at most
/// [`WRITE_BATCH`] each, keeping their order.
fn batches(plans: &[WritePlan]) -> Vec<&[WritePlan]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=plans.len() {
        let cut = i == plans.len()
            || i - start == WRITE_BATCH
            || plans[i].op != plans[start].op
            || !std::ptr::eq(plans[i].desc, plans[start].desc);
        if cut {
            out.push(&plans[start..i]);
            start = i;
        }
    }
    out
}
