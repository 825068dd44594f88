//! `store.update::<E>(&pk).set(..).incr(..).exec()`: in-place changes without
//! reading the entity (`HSET` / `HINCRBY` in the `hash` layout).

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::plan::{json, plain, write, write::WritePlan};
use crate::schema::codec::{to_bytes, MapField};
use crate::schema::condition::{Condition, Spec};
use crate::schema::entity::{Entity, Layout};
use crate::schema::field::{AllowsIncr, Assign, Field, HashField, Incrementable, Writable};
use crate::schema::update_op::UpdateOp;
use crate::script::write::WriteOp;
use redis::aio::ConnectionLike;
use std::marker::PhantomData;
use std::time::Duration;

/// An update being built; `exec()` sends it as one atomic write. `S` is the
/// store it runs on ([`crate::Store`] or [`crate::blocking::Store`]).
#[must_use = "an update does nothing until `exec()` is called"]
pub struct Update<'s, E: Entity, S> {
    pub(crate) store: &'s S,
    pub(crate) member: String,
    pub(crate) ops: Vec<UpdateOp>,
    pub(crate) ttl: Option<Duration>,
    /// `persist`: remove the entity's TTL.
    pub(crate) persist: bool,
    /// `if_version`: the stored `#[version]` the update requires.
    pub(crate) version: Option<String>,
    /// `when`: what the update requires of the stored values.
    pub(crate) conditions: Vec<Spec>,
    /// The first encoding error; reported by `exec()` so the chain stays fluent.
    pub(crate) error: Option<Error>,
    _e: PhantomData<fn() -> E>,
}

impl<'s, E: Entity, S> Update<'s, E, S> {
    pub(crate) fn new(store: &'s S, pk: &E::Pk) -> Self {
        Update {
            store,
            member: E::member(pk),
            ops: Vec::new(),
            ttl: None,
            persist: false,
            version: None,
            conditions: Vec::new(),
            error: None,
            _e: PhantomData,
        }
    }

    /// The same update on another store (the blocking store runs the async one).
    pub(crate) fn rebind<'t, T>(self, store: &'t T) -> Update<'t, E, T> {
        Update {
            store,
            member: self.member,
            ops: self.ops,
            ttl: self.ttl,
            persist: self.persist,
            version: self.version,
            conditions: self.conditions,
            error: self.error,
            _e: PhantomData,
        }
    }

    fn push(mut self, op: crate::error::Result<UpdateOp>) -> Self {
        match op {
            Ok(op) => self.ops.push(op),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Stores `value` in `field` (`None` removes an optional field; on a
    /// `#[hash]` field the whole map is replaced).
    pub fn set<F: Assign<E>>(self, field: F, value: impl Into<F::Value>) -> Self {
        let op = field.assign(&value.into());
        self.push(op)
    }

    /// Adds `delta` to a numeric field in place (`HINCRBY` / `HINCRBYFLOAT`).
    pub fn incr<T: Incrementable, C: Writable<T, N>, K: AllowsIncr<N>, N>(
        self,
        field: Field<E, T, C, K, N>,
        delta: T::Delta,
    ) -> Self {
        let op = field.incr_op(delta);
        self.push(Ok(op))
    }

    /// Adds `delta` to a numeric field only if the result stays within
    /// `range` (nothing stored counts as 0), else
    /// [`Error::ConditionFailed`] and nothing written: a stock that never
    /// goes below 0, a balance under a limit.
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store, Error};
    /// # #[derive(RedisEntity)] struct Item { #[pk] id: u64, stock: i64 }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// match store.update::<Item>(&7).incr_within(Item::STOCK, -1, 0..).exec().await {
    ///     Ok(()) => println!("sold"),
    ///     Err(Error::ConditionFailed { .. }) => println!("sold out"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn incr_within<T: Incrementable, C: Writable<T, N>, K: AllowsIncr<N>, N>(
        mut self,
        field: Field<E, T, C, K, N>,
        delta: T::Delta,
        range: impl std::ops::RangeBounds<T::Delta>,
    ) -> Self {
        for condition in field.within(&delta, range) {
            self = self.when(condition);
        }
        self.incr(field, delta)
    }

    /// Applies the update only if `condition` holds on the stored values
    /// (checked in the same atomic write, before its first change);
    /// otherwise [`Error::ConditionFailed`], carrying the stored value, and
    /// nothing written. Several `when`s must all hold.
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store, Error};
    /// # #[derive(RedisEntity)] struct Packet { #[pk] id: u64, status: u8, owner: Option<u64> }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// // Claimed by exactly one caller: the others find status 1.
    /// let claim = store
    ///     .update::<Packet>(&7)
    ///     .when(Packet::STATUS.is(0))
    ///     .set(Packet::STATUS, 1)
    ///     .set(Packet::OWNER, Some(42))
    ///     .exec()
    ///     .await;
    /// if let Err(Error::ConditionFailed { found, .. }) = &claim {
    ///     println!("already claimed (status {found:?})");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn when(mut self, condition: Condition<E>) -> Self {
        match condition.spec {
            Ok(spec) => self.conditions.push(spec),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Sets one entry of a `#[hash]` field (`HSET <key>:<field> k v`).
    pub fn hset<M: MapField>(
        self,
        field: HashField<E, M>,
        key: impl Into<M::Key>,
        value: impl Into<M::Value>,
    ) -> Self {
        let op = UpdateOp::MapSet {
            map: field.map(),
            key: to_bytes(&key.into()),
            value: to_bytes(&value.into()),
        };
        self.push(Ok(op))
    }

    /// Removes one entry of a `#[hash]` field.
    pub fn hdel<M: MapField>(self, field: HashField<E, M>, key: impl Into<M::Key>) -> Self {
        let op = UpdateOp::MapDel {
            map: field.map(),
            key: to_bytes(&key.into()),
        };
        self.push(Ok(op))
    }

    /// Applies the update only if the stored `#[version]` is `version`
    /// (otherwise [`crate::Error::VersionConflict`], nothing written). Every
    /// update of a versioned entity adds 1 to its version.
    pub fn if_version(mut self, version: impl std::fmt::Display) -> Self {
        self.version = Some(version.to_string());
        self
    }

    /// Gives the entity a new TTL with this write (otherwise the remaining one is kept).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self.persist = false;
        self
    }

    /// Removes the entity's TTL in the same atomic write: it lives until
    /// deleted (the last of `ttl` and `persist` wins).
    pub fn persist(mut self) -> Self {
        self.ttl = None;
        self.persist = true;
        self
    }
}

/// How often a write of the `json` layout retries when another writer
/// changed the document between its read and its compare-and-set.
const CAS_ATTEMPTS: usize = 100;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The `json` layout's compare-and-set: reads the document at `key`,
    /// lets `plan_of` make the write from what was read (`None`: nothing to
    /// write, `false`), and sends it as long as the document is still the
    /// one read, retried when another writer changed it in between.
    pub(crate) async fn json_cas(
        &self,
        key: &str,
        mut plan_of: impl FnMut(Option<Vec<u8>>) -> Result<Option<WritePlan>>,
    ) -> Result<bool> {
        for attempt in 0..CAS_ATTEMPTS {
            tokio::time::sleep(write::cas_backoff(attempt)).await;
            let read: Option<Vec<u8>> = redis::cmd("GET")
                .arg(key)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(|e| Error::redis(key, e))?;
            let Some(plan) = plan_of(read)? else {
                return Ok(false);
            };
            match self.write(&plan).await {
                Err(Error::Redis { source, .. }) if WritePlan::is_cas_retry(&source) => continue,
                other => return other,
            }
        }
        Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: "the document kept changing during the compare-and-set".into(),
        })
    }
}

impl<C: ConnectionLike + Clone + Send + Sync, E: Entity> Update<'_, E, Store<C>> {
    /// The in-place write of the `hash` and `strings` layouts.
    fn into_plan(mut self) -> write::WritePlan {
        let keys = EntityKeys::new(E::DESC, &self.store.ns, std::mem::take(&mut self.member));
        self.plan_with(keys)
    }

    /// [`Self::plan_with`] from a borrow (its operations, version and
    /// conditions cloned): for mapping an error reply, which is rare.
    fn plan_of(&self, keys: EntityKeys) -> write::WritePlan {
        self.in_place(
            keys,
            self.ops.clone(),
            self.version.clone(),
            self.conditions.clone(),
        )
    }

    /// The in-place write of the entity with `keys`.
    fn plan_with(mut self, keys: EntityKeys) -> write::WritePlan {
        let ops = std::mem::take(&mut self.ops);
        let conditions = std::mem::take(&mut self.conditions);
        let version = self.version.take();
        self.in_place(keys, ops, version, conditions)
    }

    /// The in-place write of the entity with `keys`: these operations,
    /// version check and conditions, and this update's TTL settings.
    fn in_place(
        &self,
        keys: EntityKeys,
        ops: Vec<UpdateOp>,
        version: Option<String>,
        conditions: Vec<Spec>,
    ) -> write::WritePlan {
        let mut plan = write::update(E::DESC, &self.store.ns, keys, ops, self.ttl, version);
        plan.remove_ttl = self.persist;
        plan.conditions = conditions;
        plan
    }

    /// What `exec` would send, without sending it (the `hash` and `strings`
    /// layouts: one function call; the `json` layout reads the document
    /// first, then sends a compare-and-set: see the note).
    pub fn explain(self) -> Result<crate::plan::explain::Explain> {
        if let Some(e) = self.error {
            return Err(e);
        }
        write::check_update_scores(E::DESC, &self.ops)?;
        let mut explained = crate::plan::explain::write(&self.into_plan());
        if E::DESC.layout == Layout::Json {
            explained.notes.push(
                "json layout: a GET of the document comes first, then a compare-and-set \
                 call in place of this one, retried if another writer changed it"
                    .into(),
            );
        }
        Ok(explained)
    }

    /// Sends the update as one atomic write. [`Error::NotFound`] (and nothing
    /// written) when the entity does not exist or has expired.
    pub async fn exec(mut self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let store = self.store;
        if self.ttl.is_some() {
            store.expiring.insert(super::desc_id(E::DESC));
        }
        write::check_update_scores(E::DESC, &self.ops)?;
        if E::DESC.layout != Layout::Json {
            // In place (`hash`, `strings`): as the straight-line call built
            // without a plan when the update is plain (column operations
            // only, nothing else asked: `plan::plain`), else as its plan's
            // call. (Written out here: a future of its own would be moved
            // into this one on every update, kilobytes.)
            let plain = self.ttl.is_none()
                && !self.persist
                && self.version.is_none()
                && self.conditions.is_empty()
                && store.writes_plainly(E::DESC);
            if plain {
                let member = std::mem::take(&mut self.member);
                let keys = EntityKeys::for_record(E::DESC, &store.ns, member);
                if let Some(call) = plain::update_command(E::DESC, &store.ns, &keys, &self.ops) {
                    // An error reply is mapped by the plan of the same
                    // update (its typed errors name columns and values),
                    // built from a borrow: each layer of the write's future
                    // carries this closure, which holding the update would
                    // make hundreds of bytes (copied on every call).
                    let this = &self;
                    let refused = |e| this.plan_of(keys.clone()).server_error(e);
                    return store
                        .write_plain(E::DESC, WriteOp::Update, &keys, call, refused)
                        .await
                        .map(drop);
                }
                self.member = keys.member;
            }
            // Boxed: the plan's write (and the plan) would otherwise make
            // the plain update's future their size, moved on every call.
            return Box::pin(store.write(&self.into_plan())).await.map(drop);
        }
        let keys = EntityKeys::new(E::DESC, &store.ns, self.member.clone());
        // The json layout keeps one document: read it, change it, and write it
        // back only if nobody changed it meanwhile.
        let base = keys.base.clone();
        // Boxed: the json layout's loop would otherwise make every
        // update's future its size.
        Box::pin(store.json_cas(&base, |read| {
            let read = read.ok_or_else(|| Error::NotFound { key: base.clone() })?;
            json::check_conditions(E::DESC, &base, &read, &self.conditions)?;
            let doc = json::apply_json_ops(E::DESC, &base, &read, &self.ops)?;
            let mut plan = write::json_cas(
                E::DESC,
                &store.ns,
                keys.clone(),
                read,
                doc,
                &self.ops,
                self.ttl,
            );
            plan.remove_ttl = self.persist;
            Ok(Some(plan))
        }))
        .await
        .map(drop)
    }
}
