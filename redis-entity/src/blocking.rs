//! The synchronous [`Store`]: the same methods as [`crate::Store`], without async.
//!
//! Plans come from [`crate::plan`] exactly as for the async store; only the
//! sending differs.

use crate::board::Board;
use crate::codec::{to_bytes, MapField, Scalar};
use crate::entity::{Entity, EntityKeys, Layout};
use crate::error::{Error, FieldError, Result};
use crate::field::{Field, HashField, SetIndex, SortedIndex, Unique};
use crate::key::Namespace;
use crate::migrate::{Migration, Progress};
use crate::plan::{self, WriteMode, WritePlan};
use crate::query::{self, Query};
use crate::relation::{self, Relation, Timeline};
use crate::store::{checked_row, decode, exists_cmd, remaining, ttl_cmd, CAS_ATTEMPTS};
use crate::update::Update;
use crate::verify::{self, Report};
use redis::{ConnectionLike, Value};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Saves, loads and deletes entities over a blocking connection.
///
/// The connection sits behind a mutex, so a `&Store` can be shared between
/// threads; each call holds it for its one round trip.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, blocking::Store};
/// #[derive(RedisEntity)]
/// struct Profile {
///     #[pk]
///     id: u64,
///     name: String,
/// }
/// # fn run() -> redis_entity::Result<()> {
/// let store = Store::connect("redis://127.0.0.1/")?;
/// store.save(&Profile { id: 1001, name: "Ada".into() })?;
/// assert_eq!(store.get::<Profile>(&1001)?.unwrap().name, "Ada");
/// # Ok(()) }
/// ```
pub struct Store<C = redis::Connection> {
    conn: Mutex<C>,
    ns: Namespace,
}

impl Store<redis::Connection> {
    /// Connects to `url` (`redis://host:port/db`).
    pub fn connect(url: &str) -> Result<Self> {
        let client = redis::Client::open(url).map_err(|e| Error::redis("", e))?;
        let conn = client.get_connection().map_err(|e| Error::redis("", e))?;
        Ok(Store::new(conn))
    }
}

impl<C> std::fmt::Debug for Store<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Store")
            .field("namespace", &self.ns)
            .finish()
    }
}

impl<C: ConnectionLike> Store<C> {
    /// A store over any blocking connection.
    pub fn new(conn: C) -> Self {
        Store {
            conn: Mutex::new(conn),
            ns: Namespace::none(),
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

    /// Every key of the entity with `pk`, namespaced.
    pub fn keys_of<E: Entity>(&self, pk: &E::Pk) -> EntityKeys {
        EntityKeys::of::<E>(&self.ns, pk)
    }

    fn conn(&self) -> MutexGuard<'_, C> {
        // A panic while holding the lock cannot leave a half-sent command
        // behind (the driver writes whole commands), so a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self, plan: &WritePlan) -> Result<bool> {
        let mut conn = self.conn();
        let reply = match plan.evalsha().query::<Value>(&mut *conn) {
            Err(e) if plan::is_noscript(&e) => plan.eval().query::<Value>(&mut *conn),
            other => other,
        };
        match reply {
            Ok(v) => plan.outcome(v),
            Err(e) => Err(plan.server_error(e)),
        }
    }

    fn write_many(&self, plans: &[WritePlan]) -> Result<Vec<Result<bool>>> {
        if plans.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn();
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for p in plans {
            pipe.add_command(p.evalsha());
        }
        let mut replies: Vec<Value> = pipe
            .query(&mut *conn)
            .map_err(|e| Error::redis(plans[0].key(), e))?;
        let lost: Vec<usize> = (0..replies.len())
            .filter(|&i| matches!(&replies[i], Value::ServerError(e) if e.code() == "NOSCRIPT"))
            .collect();
        if !lost.is_empty() {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for &i in &lost {
                pipe.add_command(plans[i].eval());
            }
            let again: Vec<Value> = pipe
                .query(&mut *conn)
                .map_err(|e| Error::redis(plans[0].key(), e))?;
            for (i, v) in lost.into_iter().zip(again) {
                replies[i] = v;
            }
        }
        Ok(plans
            .iter()
            .zip(replies)
            .map(|(p, v)| p.outcome(v))
            .collect())
    }

    fn save_as<E: Entity>(&self, e: &E, mode: WriteMode, ttl: Option<Duration>) -> Result<bool> {
        let keys = EntityKeys::of_entity(&self.ns, e);
        self.write(&plan::save(
            E::DESC,
            &self.ns,
            &keys,
            &checked_row(e)?,
            mode,
            ttl,
        ))
    }

    /// See [`crate::Store::save`].
    pub fn save<E: Entity>(&self, entity: &E) -> Result<bool> {
        self.save_as(entity, WriteMode::Save, None)
    }

    /// See [`crate::Store::save_with_ttl`].
    pub fn save_with_ttl<E: Entity>(&self, entity: &E, ttl: Duration) -> Result<bool> {
        self.save_as(entity, WriteMode::Save, Some(ttl))
    }

    /// See [`crate::Store::insert`].
    pub fn insert<E: Entity>(&self, entity: &E) -> Result<()> {
        self.save_as(entity, WriteMode::Insert, None).map(drop)
    }

    /// See [`crate::Store::save_all`].
    pub fn save_all<E: Entity>(&self, entities: &[E]) -> Result<()> {
        let plans = entities
            .iter()
            .map(|e| {
                let keys = EntityKeys::of_entity(&self.ns, e);
                Ok(plan::save(
                    E::DESC,
                    &self.ns,
                    &keys,
                    &checked_row(e)?,
                    WriteMode::Save,
                    None,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        self.write_many(&plans)?
            .into_iter()
            .try_for_each(|r| r.map(drop))
    }

    /// See [`crate::Store::get`].
    pub fn get<E: Entity>(&self, pk: &E::Pk) -> Result<Option<E>> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        plan::read(E::DESC, &keys, &mut pipe);
        let replies: Vec<Value> = pipe
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys.base, e))?;
        decode::<E>(pk, &keys, &mut replies.into_iter())
    }

    /// See [`crate::Store::get_many`].
    pub fn get_many<E: Entity>(&self, pks: &[E::Pk]) -> Result<Vec<Option<E>>> {
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
            plan::read(E::DESC, k, &mut pipe);
        }
        let replies: Vec<Value> = pipe
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let mut it = replies.into_iter();
        pks.iter()
            .zip(&keys)
            .map(|(pk, k)| decode::<E>(pk, k, &mut it))
            .collect()
    }

    /// See [`crate::Store::exists`].
    pub fn exists<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let n: u64 = exists_cmd(E::DESC, &keys)
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys.base, e))?;
        Ok(n > 0)
    }

    /// See [`crate::Store::delete`].
    pub fn delete<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        self.write(&plan::lifecycle(
            E::DESC,
            &self.ns,
            &keys,
            WriteMode::Delete,
            None,
        ))
    }

    /// See [`crate::Store::update`].
    pub fn update<E: Entity>(&self, pk: &E::Pk) -> Update<'_, E, Self> {
        Update::new(self, pk)
    }

    /// See [`crate::Store::expire`].
    pub fn expire<E: Entity>(&self, pk: &E::Pk, ttl: Duration) -> Result<bool> {
        self.lifecycle::<E>(pk, WriteMode::Expire, Some(ttl))
    }

    /// See [`crate::Store::persist`].
    pub fn persist<E: Entity>(&self, pk: &E::Pk) -> Result<bool> {
        self.lifecycle::<E>(pk, WriteMode::Persist, None)
    }

    fn lifecycle<E: Entity>(
        &self,
        pk: &E::Pk,
        mode: WriteMode,
        ttl: Option<Duration>,
    ) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        match self.write(&plan::lifecycle(E::DESC, &self.ns, &keys, mode, ttl)) {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// See [`crate::Store::ttl`].
    pub fn ttl<E: Entity>(&self, pk: &E::Pk) -> Result<Option<Duration>> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let ms: Vec<i64> = ttl_cmd(E::DESC, &keys)
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys.base, e))?;
        Ok(remaining(&ms))
    }

    /// See [`crate::Store::hget`].
    pub fn hget<E: Entity, M: MapField>(
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
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(map_key, e))?;
        raw.map(|r| {
            M::Value::decode(&r)
                .map_err(|e| Error::from_field(map_key, FieldError::parse(field.name(), &r, e)))
        })
        .transpose()
    }
}

impl<C: ConnectionLike> Store<C> {
    /// See [`crate::Store::query`].
    pub fn query<E: Entity>(&self) -> Query<'_, E, Self> {
        Query::new(self)
    }

    /// See [`crate::Store::find`].
    pub fn find<E: Entity, T, Co, K: SetIndex>(
        &self,
        field: Field<E, T, Co, K>,
        value: impl Into<K::Value>,
    ) -> Result<Vec<E>> {
        self.query::<E>().eq(field, value).fetch()
    }

    /// See [`crate::Store::find_unique`].
    pub fn find_unique<E: Entity, T, Co, X: Scalar>(
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
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&key, e))?;
        let Some(member) = member else {
            return Ok(None);
        };
        let (pipe, keys) = query::read_members(E::DESC, &self.ns, std::slice::from_ref(&member));
        let replies: Vec<Value> = pipe
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let (found, repair) =
            query::finish_unique::<E>(&self.ns, index, v, &member, &keys[0], replies)?;
        if let Some(plan) = repair {
            self.write(&plan)?;
        }
        Ok(found)
    }

    /// See [`crate::Store::top`].
    pub fn top<E: Entity, T, Co, K: SortedIndex>(
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
        let zset = E::DESC.index_zset(&self.ns, &E::DESC.indexes[index]);
        let mut pipe = redis::pipe();
        pipe.cmd("ZCARD").arg(E::DESC.expiry_key(&self.ns));
        pipe.cmd("ZRANGE")
            .arg(&zset)
            .arg(0)
            .arg(n.saturating_sub(1))
            .arg("REV")
            .arg("WITHSCORES");
        let (expiring, flat): (u64, Vec<String>) = pipe
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&zset, e))?;
        let answer = if expiring == 0 {
            query::Answer::from_scored(flat)
        } else {
            self.run_query::<E>(&query::top_spec(index, n), false, true)?
        };
        if answer.members.is_empty() {
            return Ok(Vec::new());
        }
        let (pipe, keys) = query::read_members(E::DESC, &self.ns, &answer.members);
        let replies: Vec<Value> = pipe
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let (top, repairs) = query::finish_top::<E>(&self.ns, &answer, &keys, replies)?;
        if !repairs.is_empty() {
            self.write_many(&repairs)?;
        }
        Ok(top)
    }

    /// See [`crate::Store::rank`].
    pub fn rank<E: Entity, T, Co, K: SortedIndex>(
        &self,
        field: Field<E, T, Co, K>,
        pk: &E::Pk,
    ) -> Result<Option<u64>> {
        let Some(index) = query::index_of(E::DESC, field.name()) else {
            return Ok(None);
        };
        let (evalsha, eval) = query::rank_call(E::DESC, &self.ns, index, &E::member(pk));
        let mut conn = self.conn();
        let reply: Option<u64> = match evalsha.query(&mut *conn) {
            Err(e) if plan::is_noscript(&e) => eval.query(&mut *conn),
            other => other,
        }
        .map_err(|e| Error::redis(&E::DESC.index_zset(&self.ns, &E::DESC.indexes[index]), e))?;
        Ok(reply)
    }

    /// See [`crate::Store::board_incr`].
    pub fn board_incr<E: Entity>(&self, board: &Board<E>, pk: &E::Pk, delta: f64) -> Result<f64> {
        self.board_incr_at(board, pk, delta, std::time::SystemTime::now())
    }

    /// Like `board_incr`, in the bucket of time `at`.
    pub fn board_incr_at<E: Entity>(
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
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&key, e))?;
        query::parse_score(&score).ok_or_else(|| Error::UnexpectedReply { key, detail: score })
    }

    /// The `n` best entities of the current bucket of `board`, with scores
    /// (two round trips).
    pub fn board_top<E: Entity>(&self, board: &Board<E>, n: usize) -> Result<Vec<(E, f64)>> {
        self.board_top_at(board, std::time::SystemTime::now(), n)
    }

    /// The `n` best entities of the bucket of time `at`.
    pub fn board_top_at<E: Entity>(
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
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&key, e))?;
        let answer = query::Answer::from_scored(flat);
        if answer.members.is_empty() {
            return Ok(Vec::new());
        }
        let (pipe, keys) = query::read_members(E::DESC, &self.ns, &answer.members);
        let replies: Vec<Value> = pipe
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        // Entities deleted since are skipped; a board keeps its history.
        let (top, _) = query::finish_top::<E>(&self.ns, &answer, &keys, replies)?;
        Ok(top)
    }

    /// The entity's 0-based rank in the current bucket of `board`, best first.
    pub fn board_rank<E: Entity>(&self, board: &Board<E>, pk: &E::Pk) -> Result<Option<u64>> {
        let key = board.key(&self.ns, std::time::SystemTime::now());
        redis::cmd("ZREVRANK")
            .arg(&key)
            .arg(E::member(pk))
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&key, e))
    }

    /// See [`crate::Store::relate`].
    pub fn relate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
    ) -> Result<bool> {
        self.relation_call(rel, a, b, true)
    }

    /// See [`crate::Store::unrelate`].
    pub fn unrelate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
    ) -> Result<bool> {
        self.relation_call(rel, a, b, false)
    }

    fn relation_call<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
        relate: bool,
    ) -> Result<bool> {
        let (evalsha, eval) = relation::call(rel, &self.ns, a, b, relate);
        let mut conn = self.conn();
        let n: i64 = match evalsha.query(&mut *conn) {
            Err(e) if plan::is_noscript(&e) => eval.query(&mut *conn),
            other => other,
        }
        .map_err(|e| Error::redis(&relation::forward_key(rel, &self.ns, a), e))?;
        Ok(n > 0)
    }

    /// See [`crate::Store::related`].
    pub fn related<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
    ) -> Result<Vec<B::Pk>> {
        let key = relation::forward_key(rel, &self.ns, a);
        self.members_of::<B>(&redis::cmd("SMEMBERS").arg(&key).clone(), &key)
    }

    /// See [`crate::Store::related_back`].
    pub fn related_back<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        b: &B::Pk,
    ) -> Result<Vec<A::Pk>> {
        let key = relation::reverse_key(rel, &self.ns, b);
        self.members_of::<A>(&redis::cmd("SMEMBERS").arg(&key).clone(), &key)
    }

    /// See [`crate::Store::mutual`].
    pub fn mutual<A: Entity>(&self, rel: &Relation<A, A>, a: &A::Pk) -> Result<Vec<A::Pk>> {
        let (fwd, back) = (
            relation::forward_key(rel, &self.ns, a),
            relation::reverse_key(rel, &self.ns, a),
        );
        self.members_of::<A>(&redis::cmd("SINTER").arg(&fwd).arg(&back).clone(), &fwd)
    }

    /// See [`crate::Store::related_entities`].
    pub fn related_entities<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
    ) -> Result<Vec<B>> {
        let pks = self.related(rel, a)?;
        Ok(self.get_many::<B>(&pks)?.into_iter().flatten().collect())
    }

    fn members_of<E: Entity>(&self, cmd: &redis::Cmd, key: &str) -> Result<Vec<E::Pk>> {
        let members: Vec<String> = cmd
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(key, e))?;
        let mut members = members;
        query::sort_members(E::DESC, &mut members);
        Ok(members
            .iter()
            .filter_map(|m| query::parse_member::<E>(m))
            .collect())
    }

    /// See [`crate::Store::timeline_push`].
    pub fn timeline_push<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: &P::Pk,
        owners: &[O::Pk],
    ) -> Result<()> {
        let member = P::member(post);
        for chunk in owners.chunks(relation::PUSH_BATCH) {
            let keys: Vec<String> = chunk
                .iter()
                .map(|o| O::DESC.key_of_member(&self.ns, &O::member(o)))
                .collect();
            let pipe = relation::push_pipeline(&keys, timeline.name(), &member, timeline.cap());
            let () = pipe
                .query(&mut *self.conn())
                .map_err(|e| Error::redis(&keys[0], e))?;
        }
        Ok(())
    }

    /// See [`crate::Store::timeline_push_related`].
    pub fn timeline_push_related<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: &P::Pk,
        rel: &Relation<O, O>,
        author: &O::Pk,
    ) -> Result<usize> {
        let followers = self.related_back(rel, author)?;
        self.timeline_push(timeline, post, &followers)?;
        Ok(followers.len())
    }

    /// See [`crate::Store::timeline`].
    pub fn timeline<O: Entity, P: Entity>(
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
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&key, e))?;
        let pks: Vec<P::Pk> = members
            .iter()
            .filter_map(|m| query::parse_member::<P>(m))
            .collect();
        Ok(self.get_many::<P>(&pks)?.into_iter().flatten().collect())
    }

    /// See [`crate::Store::migrate_batch`].
    pub fn migrate_batch<E, F>(
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
            .query(&mut *self.conn())
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
            .query(&mut *self.conn())
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
                    plans.push(plan::save(
                        E::DESC,
                        &self.ns,
                        &keys,
                        &row,
                        WriteMode::Save,
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
        let results = self.write_many(&plans)?;
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
                .query(&mut *self.conn())
                .map_err(|e| Error::redis(&written[0], e))?;
            progress.deleted = deleted;
        }
        Ok(progress)
    }

    /// See [`crate::Store::migrate`].
    pub fn migrate<E, F, P>(
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
            let batch = self.migrate_batch(migration, total.cursor, &mut convert)?;
            total.add(batch);
            on_progress(&total);
            if total.done {
                return Ok(total);
            }
        }
    }

    fn run_query<E: Entity>(
        &self,
        spec: &query::Spec,
        count_only: bool,
        with_scores: bool,
    ) -> Result<query::Answer> {
        let (evalsha, eval) = query::script_call(E::DESC, &self.ns, spec, count_only, with_scores);
        let mut conn = self.conn();
        let reply = match evalsha.query::<Value>(&mut *conn) {
            Err(e) if plan::is_noscript(&e) => eval.query::<Value>(&mut *conn),
            other => other,
        }
        .map_err(|e| Error::redis(&E::DESC.ids_key(&self.ns), e))?;
        let answer = query::parse_reply(E::DESC, spec, with_scores, reply)?;
        if !answer.ghosts.is_empty() {
            // Expired entities met on the way: remove all their entries now.
            self.write_many(&query::sweep_plans(E::DESC, &self.ns, &answer.ghosts))?;
        }
        Ok(answer)
    }
}

impl<C: ConnectionLike> Store<C> {
    /// See [`crate::Store::verify`].
    pub fn verify<E: Entity>(&self) -> Result<Report> {
        let mut v = verify::Verifier::new(E::DESC, &self.ns);
        while let Some(pipe) = v.next_request() {
            let replies: Vec<Value> = pipe
                .query(&mut *self.conn())
                .map_err(|e| Error::redis(&E::DESC.ids_key(&self.ns), e))?;
            v.feed(replies)?;
        }
        Ok(v.report())
    }

    /// See [`crate::Store::sweep`].
    pub fn sweep<E: Entity>(&self, budget: usize) -> Result<usize> {
        let key = E::DESC.expiry_key(&self.ns);
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
            .query(&mut *self.conn())
            .map_err(|e| Error::redis(&key, e))?;
        if due.is_empty() {
            return Ok(0);
        }
        let swept = self
            .write_many(&query::sweep_plans(E::DESC, &self.ns, &due))?
            .into_iter()
            .filter(|r| matches!(r, Ok(true)))
            .count();
        Ok(swept)
    }

    /// See [`crate::Store::repair`].
    pub fn repair<E: Entity>(&self, report: &Report) -> Result<usize> {
        let plans = verify::repairs(E::DESC, &self.ns, report);
        for chunk in plans.chunks(500) {
            for r in self.write_many(chunk)? {
                match r {
                    Ok(_) | Err(Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let mut fixed = plans.len();
        if let Some(pipe) = verify::relation_repairs(report) {
            let () = pipe
                .query(&mut *self.conn())
                .map_err(|e| Error::redis(&E::DESC.ids_key(&self.ns), e))?;
            fixed += report
                .violations
                .iter()
                .filter(|v| matches!(v, verify::Violation::OneSidedRelation { .. }))
                .count();
        }
        Ok(fixed)
    }
}

impl<C: ConnectionLike, E: Entity> Query<'_, E, Store<C>> {
    /// See the async `fetch`.
    pub fn fetch(self) -> Result<Vec<E>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let store = self.store;
        let members = store.run_query::<E>(&self.spec, false, false)?.members;
        if members.is_empty() {
            return Ok(Vec::new());
        }
        let (pipe, keys) = query::read_members(E::DESC, &store.ns, &members);
        let replies: Vec<Value> = pipe
            .query(&mut *store.conn())
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let fetched = query::finish_fetch::<E>(&store.ns, &self.spec, &members, &keys, replies)?;
        if !fetched.repairs.is_empty() {
            store.write_many(&fetched.repairs)?;
        }
        Ok(fetched.entities)
    }

    /// See the async `ids`.
    pub fn ids(self) -> Result<Vec<E::Pk>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let members = self.store.run_query::<E>(&self.spec, false, false)?.members;
        Ok(members
            .iter()
            .filter_map(|m| query::parse_member::<E>(m))
            .collect())
    }

    /// See the async `count`.
    pub fn count(self) -> Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(self.store.run_query::<E>(&self.spec, true, false)?.total)
    }
}

impl<C: ConnectionLike, E: Entity> Update<'_, E, Store<C>> {
    /// See [`crate::update::Update`]'s async `exec`.
    pub fn exec(self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let store = self.store;
        plan::check_update_scores(E::DESC, &self.ops)?;
        let keys = EntityKeys::new(E::DESC, &store.ns, self.member);
        if E::DESC.layout != Layout::Json {
            return store
                .write(&plan::update_checked(
                    E::DESC,
                    &store.ns,
                    &keys,
                    &self.ops,
                    self.ttl,
                    self.version,
                ))
                .map(drop);
        }
        for attempt in 0..CAS_ATTEMPTS {
            std::thread::sleep(plan::cas_backoff(attempt));
            let read: Option<Vec<u8>> = redis::cmd("GET")
                .arg(&keys.base)
                .query(&mut *store.conn())
                .map_err(|e| Error::redis(&keys.base, e))?;
            let read = read.ok_or_else(|| Error::NotFound {
                key: keys.base.clone(),
            })?;
            let doc = plan::apply_json_ops(E::DESC, &keys.base, &read, &self.ops)?;
            let plan = plan::json_cas(E::DESC, &store.ns, &keys, read, doc, &self.ops, self.ttl);
            match store.write(&plan) {
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
