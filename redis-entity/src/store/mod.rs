//! The async [`Store`]: connect, send, and the entity CRUD (save, insert,
//! get, delete, update, TTLs). Every other feature adds its own `impl Store`
//! block in its own module below, next to the types it needs.
//!
//! Every method costs one round trip, except an `update` of the `json` layout
//! (read, then compare-and-set).

mod across;
pub mod board;
mod builder;
mod by_node;
pub mod cache;
pub(crate) mod connect;
mod expiry;
mod id_sets;
mod key_scan;
mod keys;
mod lookup;
pub(crate) mod maintenance;
pub(crate) mod memory;
pub mod migrate;
pub mod observe;
pub mod query;
pub(crate) mod relation;
pub mod relayout;
mod rows;
pub mod scan;
pub mod schema;
pub(crate) mod timeline;
pub(crate) mod transaction;
mod unique;
mod unplaced;
mod update;

pub use builder::StoreBuilder;
pub use expiry::Expiry;
pub use key_scan::KeyScan;
pub use keys::Keys;
pub use transaction::Transaction;
pub use update::Update;

use crate::error::{Error, FieldError, Result};
use crate::keyspace::EntityKeys;
use crate::plan::{read, write, write::WritePlan};
use crate::schema::codec::{to_bytes, MapField, Scalar};
use crate::schema::entity::Entity;
use crate::schema::escape::{KeyLayout, Namespace};
use crate::schema::field::HashField;
use crate::schema::pk::IntoPk;
use crate::script::{self, write::WriteOp};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::Value;
use std::time::Duration;

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
/// store.save(&User { id: 9, username: "lisi".into(), level: 1 }).await?;  // HSET user:9 ...
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
    expiring: ExpiringTypes,
    /// How much one query call may read (`members_per_call`).
    budget: crate::plan::query::CallBudget,
    /// The types whose entity count this store has read (see `sizes`), and
    /// those of them found with more than `budget.native`: no native set
    /// command answers their queries, whose sets may be large.
    sized: crate::seen::Seen,
    large: crate::seen::Seen,
    write_retries: usize,
    /// A replica the reads go to, and the scripts sent to it.
    replica: Option<(C, script::Sent)>,
    /// Records kept in memory, invalidated by Redis.
    near: Option<crate::near::NearCache>,
    /// What the store has done, for `metrics()`.
    counters: std::sync::Arc<observe::Counters>,
    /// Set once this store recorded (or found) its layout's marker in its
    /// namespace; `None` for a store that checks nothing (`Store::new`).
    layout_marked: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The schema records this store has read (`None`: it tracks none,
    /// like the layout marker: `Store::new`).
    schema: Option<schema::Tracking>,
    /// What the store accepts of the server's `maxmemory-policy`, judged
    /// with the layout marker and the schema announcements.
    memory: std::sync::Arc<memory::MemoryPolicy>,
    /// Which cluster master serves which slots, for reads grouped by node.
    nodes: std::sync::Arc<by_node::NodeMap>,
    /// The cluster connection under `C`, if it is one (directly, in an
    /// [`crate::AnyConnection`] or counted): reads of several slots one
    /// master serves go to it as one pipeline.
    cluster_of: by_node::ClusterOf<C>,
    /// Set once the reading connection was refused a read-only script
    /// (an ACL user with read commands only): unique lookups then take two
    /// plain reads (see `lookup`).
    scripts_refused: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The indexes of `items` grouped by the cluster slot of each one's key
/// (its hash tag), in tag order.
pub(crate) fn slot_groups<T>(items: &[T], key: impl Fn(&T) -> &str) -> Vec<Vec<usize>> {
    let mut groups: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (i, item) in items.iter().enumerate() {
        groups
            .entry(crate::keyspace::slot_tag(key(item)))
            .or_default()
            .push(i);
    }
    groups.into_values().collect()
}

/// The entity types a store has seen with entities that have a TTL: their
/// queries go to the query script, which skips expired entities, instead of
/// trying a native set command first.
pub(crate) type ExpiringTypes = crate::seen::Seen;

/// A name for an entity type in a [`crate::seen::Seen`] set: a hash of its
/// type name and key pattern. Not the description's address: `E::DESC` is
/// a constant, and two uses of a constant need not share an address (in
/// another codegen unit or crate they often do not).
pub(crate) fn desc_id(desc: &crate::schema::entity::EntityDesc) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (desc.type_name, desc.key_pattern).hash(&mut h);
    h.finish() as usize
}

impl Store<ConnectionManager> {
    /// Connects to `url` (`redis://[user:password@]host:port/db`) with the
    /// default settings (see [`Store::builder`] for the others): an
    /// unreachable server, a wrong password or an unknown database is an
    /// error within about a second, and the connection is re-established
    /// by itself after it was lost.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::builder().connect(url).await
    }
}

impl<C> std::fmt::Debug for Store<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("namespace", &self.ns)
            .finish()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Store<C> {
    /// A store over any async connection (a `ConnectionManager`, a
    /// `MultiplexedConnection`, or a wrapper such as
    /// [`crate::CountingConnection`]) with no setting: no namespace, the
    /// one-server key layout, and no layout or schema check
    /// (`Store::builder().layout_check(false).build(conn)`). A cluster
    /// connection needs the cluster layout: [`StoreBuilder::key_layout`].
    pub fn new(conn: C) -> Self {
        Store {
            conn,
            ns: Namespace::none(),
            sent: script::Sent::default(),
            expiring: ExpiringTypes::default(),
            budget: Default::default(),
            sized: Default::default(),
            large: Default::default(),
            write_retries: 0,
            replica: None,
            near: None,
            counters: Default::default(),
            layout_marked: None,
            schema: None,
            memory: Default::default(),
            nodes: Default::default(),
            cluster_of: by_node::cluster_of::<C>,
            scripts_refused: Default::default(),
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The settings of a store (namespace, key layout, read replica, near
    /// cache, write retries, timeouts), then how it connects: see
    /// [`StoreBuilder`].
    ///
    /// ```no_run
    /// # use redis_entity::{Namespace, Store};
    /// # async fn run() -> redis_entity::Result<()> {
    /// let cluster = Store::builder()
    ///     .namespace(Namespace::new("shop"))
    ///     .connect_cluster(&["redis://10.0.0.1:7000/", "redis://10.0.0.2:7000/"])
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder() -> StoreBuilder<C> {
        StoreBuilder::default()
    }

    /// Records the store's layout in its namespace's marker and tracks the
    /// types' schema records (what [`StoreBuilder::layout_check`] turns on).
    pub(crate) fn track_layout_and_schema(&mut self) {
        self.layout_marked = Some(Default::default());
        self.schema = Some(Default::default());
    }

    /// Records this store's layout in its namespace's marker, or finds the
    /// one there, once per store before its first write; the same script
    /// reads the server's memory policy and refuses an evicting one
    /// (`store::memory`) before writing anything.
    pub(crate) async fn mark_layout(&self) -> Result<()> {
        use std::sync::atomic::Ordering;
        let Some(marked) = &self.layout_marked else {
            return Ok(());
        };
        if marked.load(Ordering::Relaxed) {
            return Ok(());
        }
        let key = crate::keyspace::layout_marker(&self.ns);
        let call = script::args::MarkLayout {
            marker: &key,
            layout: self.ns.layout().name(),
            eviction_allowed: self.memory.eviction_allowed,
        }
        .call();
        // Retried as the write it comes before is (it is idempotent).
        let reply: (String, String, String) = self
            .retrying(|| async {
                script::invoke(&mut self.conn.clone(), &self.sent, &call)
                    .await
                    .map_err(|e| Error::redis(&key, e))
            })
            .await?;
        let (status, found, policy) = reply;
        self.memory.judge(&status, &policy)?;
        self.layout_matches(Some(found).filter(|f| !f.is_empty()))?;
        marked.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Sets what the store accepts of the server's memory policy.
    pub(crate) fn set_eviction_allowed(&mut self, on: bool) {
        self.memory = std::sync::Arc::new(memory::MemoryPolicy::new(on));
    }

    /// What the store accepts of the server's memory policy.
    pub(crate) fn memory_policy(&self) -> &memory::MemoryPolicy {
        &self.memory
    }

    pub(crate) fn layout_matches(&self, found: Option<String>) -> Result<()> {
        let ours = self.ns.layout();
        match found {
            Some(name) if KeyLayout::from_name(&name) != Some(ours) => Err(Error::LayoutMismatch {
                found: name,
                expected: ours.name(),
            }),
            _ => Ok(()),
        }
    }

    /// The namespace applied to every key.
    pub(crate) fn namespace(&self) -> &Namespace {
        &self.ns
    }

    /// The store's near cache, if any.
    pub(crate) fn near(&self) -> Option<&crate::near::NearCache> {
        self.near.as_ref()
    }

    /// Gives the store a near cache after it was built (the blocking
    /// builder connects its near cache on the store's runtime).
    pub(crate) fn set_near_cache(&mut self, near: crate::near::NearCache) {
        self.near = Some(near);
    }

    /// Drops the near-cache records of entities a write touched, as soon as
    /// the write is answered (whatever its outcome), so that this store
    /// reads its own writes without waiting for Redis' invalidation.
    fn forget<'p>(&self, plans: impl IntoIterator<Item = &'p WritePlan>) {
        if let Some(near) = &self.near {
            for p in plans {
                near.shared.invalidate(p.keys.base.as_bytes());
            }
        }
    }

    /// The connection reads go to: the replica, if any.
    pub(crate) fn reader(&self) -> C {
        match &self.replica {
            Some((c, _)) => c.clone(),
            None => self.conn.clone(),
        }
    }

    /// The scripts sent on the reading connection.
    pub(crate) fn reader_sent(&self) -> &script::Sent {
        match &self.replica {
            Some((_, sent)) => sent,
            None => &self.sent,
        }
    }

    /// The scripts this store's connection has sent.
    pub(crate) fn sent(&self) -> &script::Sent {
        &self.sent
    }

    /// A clone of the underlying connection.
    pub fn connection(&self) -> C {
        self.conn.clone()
    }

    /// One read command on the reading connection, its errors named by
    /// `key` (the one-command reads of relations and timelines).
    pub(crate) async fn read_cmd<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        key: &str,
    ) -> Result<T> {
        cmd.query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(key, e))
    }

    pub(crate) async fn write(&self, plan: &WritePlan) -> Result<bool> {
        self.mark_layout().await?;
        self.schema_write_check(plan.desc).await?;
        // Unique values with owner keys on a cluster (`unique`): a few
        // steps, not retried as one write. (Boxed, as are the other rare
        // paths of the common operations: their futures would otherwise
        // be part of every write's.)
        if unique::claims_for(plan, &self.ns) {
            return Box::pin(self.write_claimed(plan)).await;
        }
        if plan.op == WriteOp::Delete && crate::keyspace::needs_claims(plan.desc, &self.ns) {
            return Box::pin(self.delete_claimed(plan)).await;
        }
        if self.write_retries == 0 {
            return self.write_once(plan).await;
        }
        // With retries, the write carries a request token: a retry after a
        // lost reply finds the first attempt's outcome instead of applying
        // the write again.
        let plan = with_token(plan);
        self.retrying(|| self.write_once(&plan)).await
    }

    /// Runs `send` again while it fails with an unknown outcome, at most
    /// `write_retries` times more; the writes it sends carry request tokens,
    /// so a retry of one that was applied is not applied again.
    async fn retrying<T, Fut>(&self, send: impl Fn() -> Fut) -> Result<T>
    where
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 0;
        loop {
            match send().await {
                Err(e) if e.is_connection() && attempt < self.write_retries => {
                    attempt += 1;
                    self.counters.retried();
                    tokio::time::sleep(retry_delay(attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn write_once(&self, plan: &WritePlan) -> Result<bool> {
        let op = observe::Op::Write {
            entity: plan.desc.type_name,
            operation: plan.op,
            key: plan.key(),
            n: 1,
        };
        op.run(&self.counters, self.write_once_untraced(plan)).await
    }

    async fn write_once_untraced(&self, plan: &WritePlan) -> Result<bool> {
        if let Some(near) = self
            .near
            .as_ref()
            .filter(|n| n.shared.caches(plan.desc.type_name))
        {
            return Box::pin(self.write_through(near, plan)).await;
        }
        let mut conn = self.conn.clone();
        let reply = match plan.fast_command() {
            Some((f, cmd)) => {
                script::invoke_function::<Value, _>(&mut conn, &self.sent, f, &cmd).await
            }
            None => script::invoke::<Value, _>(&mut conn, &self.sent, &plan.general_call()).await,
        };
        self.forget([plan]);
        self.single_outcome(&plan.keys, reply, |e| plan.server_error(e))
            .await
    }

    /// A single write's reply as its outcome ([`write::outcome`]), once
    /// the unlinks it left to the client are done; `refused` maps an error.
    async fn single_outcome(
        &self,
        keys: &EntityKeys,
        reply: redis::RedisResult<Value>,
        refused: impl FnOnce(redis::RedisError) -> Error,
    ) -> Result<bool> {
        match reply {
            Ok(v) => {
                let away = crate::script::reply::away(&v);
                if !away.is_empty() {
                    // Only a delete or sweep leaves other sides: boxed out
                    // of every single write's future.
                    Box::pin(self.unlink_away(&keys.member, &away)).await?;
                }
                write::outcome(v, &keys.base, refused)
            }
            Err(e) => Err(refused(e)),
        }
    }

    /// Whether a save, or an update with nothing but column operations, of
    /// `desc` may be sent as the straight-line call built without a plan
    /// ([`Self::write_plain`]): the type has a straight-line write, and the
    /// store sends such a write as it is, with no near cache to keep, no
    /// request token (write retries) and no claim on a unique value to take
    /// first.
    pub(crate) fn writes_plainly(&self, desc: &crate::schema::entity::EntityDesc) -> bool {
        crate::script::fast::covers(desc)
            && self.near.is_none()
            && self.write_retries == 0
            && !crate::keyspace::needs_claims(desc, &self.ns)
    }

    /// A plain write (`operation`) of the entity with `keys`, sent as
    /// `call`, its straight-line call built without a plan (`plan::plain`),
    /// through the same gates and observed as [`Self::write`] observes
    /// one; `refused` maps an error (the caller builds the plan then).
    pub(crate) async fn write_plain(
        &self,
        desc: &'static crate::schema::entity::EntityDesc,
        operation: WriteOp,
        keys: &EntityKeys,
        (function, cmd): (&'static script::Script, redis::Cmd),
        refused: impl FnOnce(redis::RedisError) -> Error,
    ) -> Result<bool> {
        self.mark_layout().await?;
        self.schema_write_check(desc).await?;
        let op = observe::Op::Write {
            entity: desc.type_name,
            operation,
            key: &keys.base,
            n: 1,
        };
        let send = async {
            let mut conn = self.conn.clone();
            let reply = script::invoke_function::<Value, _>(&mut conn, &self.sent, function, &cmd);
            self.single_outcome(keys, reply.await, refused).await
        };
        op.run(&self.counters, send).await
    }

    /// Runs `f` over `items` as one group on one server (callers with a
    /// borrowed path skip the copy there); on a cluster once per hash tag (one slot: what one pipeline or one script may touch
    /// there), the groups concurrently, and puts the results back in the
    /// items' order. `f` returns one result per item of its group.
    pub(crate) async fn per_slot<T, R, F, Fut>(
        &self,
        items: &[T],
        key: impl Fn(&T) -> &str,
        f: F,
    ) -> Result<Vec<R>>
    where
        T: Clone,
        F: Fn(Vec<T>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<R>>>,
    {
        if items.len() < 2 || self.ns.layout() != KeyLayout::Cluster {
            return f(items.to_vec()).await;
        }
        let groups = slot_groups(items, key);
        if groups.len() == 1 {
            return f(items.to_vec()).await;
        }
        let replies = futures_util::future::try_join_all(
            groups
                .iter()
                .map(|g| f(g.iter().map(|&i| items[i].clone()).collect())),
        )
        .await?;
        let mut out: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
        for (g, reply) in groups.iter().zip(replies) {
            for (&i, r) in g.iter().zip(reply) {
                out[i] = Some(r);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    pub(crate) async fn write_many(&self, plans: &[WritePlan]) -> Result<Vec<Result<bool>>> {
        if plans.is_empty() {
            return Ok(Vec::new());
        }
        self.mark_layout().await?;
        // Each type of the batch once (by address: a type seen at two
        // addresses is only checked twice).
        let mut checked: Vec<&'static crate::schema::entity::EntityDesc> = Vec::new();
        for p in plans {
            if !checked.iter().any(|d| std::ptr::eq(*d, p.desc)) {
                checked.push(p.desc);
                self.schema_write_check(p.desc).await?;
            }
        }
        if crate::keyspace::needs_claims(plans[0].desc, &self.ns) {
            // Each write claims its own values: all of them concurrently.
            return Ok(futures_util::future::join_all(plans.iter().map(|p| self.write(p))).await);
        }
        if self.write_retries == 0 {
            return self.write_many_once(plans).await;
        }
        let plans: Vec<WritePlan> = plans.iter().map(with_token).collect();
        self.retrying(|| self.write_many_once(&plans)).await
    }

    async fn write_many_once(&self, plans: &[WritePlan]) -> Result<Vec<Result<bool>>> {
        let op = observe::Op::Write {
            entity: plans[0].desc.type_name,
            operation: plans[0].op,
            key: plans[0].key(),
            n: plans.len(),
        };
        let results = op
            .run(&self.counters, self.write_many_untraced(plans))
            .await?;
        self.counters
            .failed(results.iter().filter(|r| r.is_err()).count());
        Ok(results)
    }

    async fn write_many_untraced(&self, plans: &[WritePlan]) -> Result<Vec<Result<bool>>> {
        if self.ns.layout() != KeyLayout::Cluster {
            return self.write_many_on_one_slot(plans).await;
        }
        // A batch call or a pipeline touches one slot on a cluster.
        self.per_slot(
            plans,
            |p| p.keys.base.as_str(),
            |group| async move { self.write_many_on_one_slot(&group).await },
        )
        .await
    }

    async fn write_many_on_one_slot(&self, plans: &[WritePlan]) -> Result<Vec<Result<bool>>> {
        let groups = batches(plans);
        let calls: Vec<_> = groups
            .iter()
            .map(|g| match g {
                [one] => one.call(),
                many => write::batch_call(many),
            })
            .collect();
        let replies = script::invoke_all(&mut self.conn.clone(), &self.sent, &calls).await;
        self.forget(plans);
        let replies = replies.map_err(|e| Error::redis(plans[0].key(), e))?;
        let mut out = Vec::with_capacity(plans.len());
        // Other sides that deletes and sweeps left to the client, per member.
        let mut away: Vec<(String, Vec<(String, String)>)> = Vec::new();
        let mut outcome = |p: &WritePlan, v: Value| {
            let left = crate::script::reply::away(&v);
            if !left.is_empty() {
                away.push((p.keys.member.clone(), left));
            }
            p.outcome(v)
        };
        for (group, reply) in groups.iter().zip(replies) {
            match (group, reply) {
                ([one], v) => out.push(outcome(one, v)),
                (many, Value::Array(items)) if items.len() == many.len() => {
                    out.extend(many.iter().zip(items).map(|(p, v)| outcome(p, v)))
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
        let mut calls = Vec::new();
        for (member, left) in &away {
            let (sides, pending) = across::split_pending(left);
            for (renamed, entry) in &pending {
                Box::pin(self.unlink_in_pages(member, renamed, entry)).await?;
            }
            calls.extend(across::unlink_calls(member, &sides));
        }
        if !calls.is_empty() {
            for reply in self.invoke_per_slot(calls).await? {
                if let Value::ServerError(e) = reply {
                    return Err(Error::redis(plans[0].key(), e.into()));
                }
            }
        }
        Ok(out)
    }

    /// The write that saves `e` (an insert with `insert`).
    fn save_plan<E: Entity>(
        &self,
        e: &E,
        insert: bool,
        ttl: Option<Duration>,
    ) -> Result<WritePlan> {
        let keys = EntityKeys::of_entity(&self.ns, e);
        Ok(write::save(
            E::DESC,
            &self.ns,
            keys,
            valid_row(e)?,
            insert,
            ttl,
        ))
    }

    async fn save_as<E: Entity>(&self, e: &E, insert: bool, ttl: Option<Duration>) -> Result<bool> {
        let row = valid_row(e)?;
        let mut member = String::with_capacity(24);
        e.write_own_member(&mut member);
        if ttl.is_none() && self.writes_plainly(E::DESC) && crate::plan::plain::saves(E::DESC) {
            let keys = EntityKeys::for_record(E::DESC, &self.ns, member);
            if let Some(call) =
                crate::plan::plain::save_command(E::DESC, &self.ns, &keys, &row, insert)
            {
                let op = if insert {
                    WriteOp::Insert
                } else {
                    WriteOp::Save
                };
                // An error reply is mapped by the plan of the same save,
                // built then (from borrows: each layer of the write's
                // future carries this closure).
                let row = &row;
                let refused = |err| {
                    let keys = EntityKeys::new(E::DESC, &self.ns, keys.member.clone());
                    let plan = write::save(E::DESC, &self.ns, keys, row.clone(), insert, None);
                    plan.server_error(err)
                };
                return self.write_plain(E::DESC, op, &keys, call, refused).await;
            }
            member = keys.member;
        }
        let keys = EntityKeys::new(E::DESC, &self.ns, member);
        let plan = write::save(E::DESC, &self.ns, keys, row, insert, ttl);
        // Boxed: the plan's write would otherwise make the plain save's
        // future its size, moved on every call.
        Box::pin(self.write(&plan)).await
    }

    /// Upserts `entity` (one atomic write, one round trip). An existing
    /// entity keeps its remaining TTL; a new one gets the container `ttl`.
    /// Returns `true` when the entity was created.
    pub async fn save<E: Entity>(&self, entity: &E) -> Result<bool> {
        self.save_as(entity, false, None).await
    }

    /// Creates `entity`; [`Error::AlreadyExists`] (and nothing written) if its key is taken.
    pub async fn insert<E: Entity>(&self, entity: &E) -> Result<()> {
        self.save_as(entity, true, None).await.map(drop)
    }

    /// Creates `entity` with a TTL on all its keys; [`Error::AlreadyExists`]
    /// (and nothing written) if its key is taken. The read-through cache's
    /// save: a late load never overwrites an entity stored since.
    pub(crate) async fn insert_with_ttl<E: Entity>(&self, entity: &E, ttl: Duration) -> Result<()> {
        self.expiring.insert(desc_id(E::DESC));
        self.save_as(entity, true, Some(ttl)).await.map(drop)
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
                    &self.ns,
                    keys,
                    valid_row(e)?,
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
    pub async fn get<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Result<Option<E>> {
        let pk = &pk.into_pk();
        // A read spells no index shadow (see `EntityKeys::for_record`).
        let keys = EntityKeys::for_record(E::DESC, &self.ns, E::member(pk));
        let record = self.rows(E::DESC, std::slice::from_ref(&keys)).await?;
        match record.into_iter().next().unwrap_or(Ok(None))? {
            None => Ok(None),
            Some(row) => read::entity_from_row(pk, &keys, row).map(Some),
        }
    }

    /// Loads many entities in one round trip, in the order of `pks`
    /// (`None` for one that is not stored).
    ///
    /// A stored record that does not decode fails the whole call with its
    /// precise error (key and field), as `get` of it would:
    /// [`get_many_each`](Self::get_many_each) returns the others too.
    pub async fn get_many<E: Entity>(
        &self,
        pks: impl IntoIterator<Item = impl IntoPk<E::Pk>>,
    ) -> Result<Vec<Option<E>>> {
        self.get_many_each::<E>(pks).await?.into_iter().collect()
    }

    /// [`get_many`](Self::get_many) with a result per entity: a record that
    /// does not decode is an error in its place (naming its key and field),
    /// and the others are still returned. The outer error is the round
    /// trip's (connection, timeout).
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store};
    /// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// for (pk, user) in [1, 2, 3].iter().zip(store.get_many_each::<User>(&[1, 2, 3]).await?) {
    ///     match user {
    ///         Ok(Some(u)) => println!("{pk}: {}", u.name),
    ///         Ok(None) => println!("{pk}: not stored"),
    ///         Err(e) => eprintln!("{pk}: corrupt record: {e}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_many_each<E: Entity>(
        &self,
        pks: impl IntoIterator<Item = impl IntoPk<E::Pk>>,
    ) -> Result<Vec<Result<Option<E>>>> {
        let pks: Vec<E::Pk> = pks.into_iter().map(IntoPk::into_pk).collect();
        if pks.is_empty() {
            return Ok(Vec::new());
        }
        // Each record decoded as it is taken (see `rows_each`).
        let members = pks.iter().map(|pk| E::member(pk)).collect();
        let mut out = Vec::with_capacity(pks.len());
        let mut pks = pks.iter();
        self.rows_each(E::DESC, members, |keys, record| {
            let Some(pk) = pks.next() else { return };
            out.push(match record {
                Err(e) => Err(e),
                Ok(None) => Ok(None),
                Ok(Some(row)) => read::entity_from_row(pk, &keys, row).map(Some),
            });
        })
        .await?;
        Ok(out)
    }

    /// True when an entity with `pk` is stored (one `EXISTS`).
    pub async fn exists<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Result<bool> {
        let pk = &pk.into_pk();
        let keys = EntityKeys::for_record(E::DESC, &self.ns, E::member(pk));
        let n: u64 = exists_cmd(E::DESC, &keys)
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&keys.base, e))?;
        Ok(n > 0)
    }

    /// Deletes the entity and every key it owns; `false` if there was none.
    pub async fn delete<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Result<bool> {
        let pk = &pk.into_pk();
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        self.write(&write::lifecycle(
            E::DESC,
            &self.ns,
            keys,
            WriteOp::Delete,
            None,
        ))
        .await
    }

    /// Deletes the entity as [`delete`](Self::delete) does, only if every
    /// condition holds on its stored values (checked in the same atomic
    /// write); otherwise [`Error::ConditionFailed`], carrying the stored
    /// value, and nothing deleted. On a missing entity the conditions see
    /// nothing stored.
    ///
    /// ```no_run
    /// # use redis_entity::{RedisEntity, Store};
    /// # #[derive(RedisEntity)] struct Order { #[pk] id: u64, status: String }
    /// # async fn run(store: Store) -> redis_entity::Result<()> {
    /// // Only an order nobody paid in the meantime goes.
    /// store.delete_if::<Order>(&7, [Order::STATUS.is("open".to_owned())]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_if<E: Entity>(
        &self,
        pk: impl IntoPk<E::Pk>,
        conditions: impl IntoIterator<Item = crate::schema::condition::Condition<E>>,
    ) -> Result<bool> {
        let pk = &pk.into_pk();
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let conditions = conditions
            .into_iter()
            .map(|c| c.spec)
            .collect::<Result<Vec<_>>>()?;
        let mut plan = write::lifecycle(E::DESC, &self.ns, keys, WriteOp::Delete, None);
        if E::DESC.layout != crate::schema::entity::Layout::Json {
            plan.conditions = conditions;
            return self.write(&plan).await;
        }
        // The json layout: the conditions are checked on the document read,
        // and the delete goes only if that document is still the one stored.
        let key = plan.keys.base.clone();
        self.json_cas(&key, |read| {
            let doc = read.as_deref().unwrap_or(b"{}");
            crate::plan::json::check_conditions(E::DESC, &key, doc, &conditions)?;
            Ok(read.map(|read| {
                let mut plan = plan.clone();
                plan.cas = Some(read);
                plan
            }))
        })
        .await
    }

    /// Starts an in-place update of the entity with `pk`.
    pub fn update<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> Update<'_, E, Self> {
        let pk = &pk.into_pk();
        Update::new(self, pk)
    }

    pub(crate) async fn lifecycle<E: Entity>(
        &self,
        pk: &E::Pk,
        op: WriteOp,
        ttl: Option<Duration>,
    ) -> Result<bool> {
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        match self
            .write(&write::lifecycle(E::DESC, &self.ns, keys, op, ttl))
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads one entry of a `#[hash]` field (`HGET <key>:<field> k`).
    pub async fn hget<E: Entity, M: MapField>(
        &self,
        field: HashField<E, M>,
        pk: impl IntoPk<E::Pk>,
        key: impl Into<M::Key>,
    ) -> Result<Option<M::Value>> {
        let pk = &pk.into_pk();
        let keys = EntityKeys::of::<E>(&self.ns, pk);
        let map_key = &keys.maps[field.map()];
        let raw: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(map_key)
            .arg(to_bytes(&key.into()))
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(map_key, e))?;
        raw.map(|r| {
            M::Value::decode(&r)
                .map_err(|e| Error::from_field(map_key, FieldError::parse(field.name(), &r, e)))
        })
        .transpose()
    }
}

/// The stored form of `e`, refused if a sorted index value has no score.
/// The stored form of an entity a write is about to store: its
/// `#[redis(validate = ..)]` check first ([`Error::Invalid`], nothing
/// written), then as [`checked_row`].
pub(crate) fn valid_row<E: Entity>(e: &E) -> Result<crate::schema::entity::Row> {
    if let Err(message) = e.validate() {
        let mut member = String::new();
        e.write_own_member(&mut member);
        return Err(Error::Invalid {
            type_name: E::DESC.type_name,
            key: crate::keyspace::entity_key(E::DESC, &Namespace::none(), &member),
            message,
        });
    }
    checked_row(e)
}

pub(crate) fn checked_row<E: Entity>(e: &E) -> Result<crate::schema::entity::Row> {
    let row = e.to_row()?;
    write::check_scores(E::DESC, &row)?;
    Ok(row)
}

/// `EXISTS` over the keys whose presence means the entity exists.
pub(crate) fn exists_cmd(
    desc: &crate::schema::entity::EntityDesc,
    keys: &EntityKeys,
) -> redis::Cmd {
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
pub(crate) fn ttl_cmd(
    desc: &crate::schema::entity::EntityDesc,
    keys: &EntityKeys,
) -> redis::Pipeline {
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
/// repairs, sweeps): large enough to amortise the call (its own cost is a
/// few µs), small enough that one call does not hold the server for long:
/// a save costs about 50 µs of server time at ten million entities, so a
/// call of 50 about 2.5 ms.
pub(crate) const WRITE_BATCH: usize = 50;

/// How many entities of operation `op` one call carries: half of
/// [`WRITE_BATCH`] for the operations that read and rewrite every index
/// entry of the stored entity (`reindex`, sweeps, repairs, deletes), about
/// 70 µs of server time each at ten million entities.
fn write_batch(op: WriteOp) -> usize {
    match op {
        WriteOp::Reindex | WriteOp::Sweep | WriteOp::Clean | WriteOp::Delete => WRITE_BATCH / 2,
        _ => WRITE_BATCH,
    }
}

/// Splits plans into runs of one type and operation, at most
/// [`write_batch`] each, keeping their order.
fn batches(plans: &[WritePlan]) -> Vec<&[WritePlan]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=plans.len() {
        let cut = i == plans.len()
            || i - start == write_batch(plans[start].op)
            || plans[i].op != plans[start].op
            || !std::ptr::eq(plans[i].desc, plans[start].desc);
        if cut {
            out.push(&plans[start..i]);
            start = i;
        }
    }
    out
}

/// `plan` with a fresh request token.
fn with_token(plan: &WritePlan) -> WritePlan {
    WritePlan {
        token: Some(cache::token()),
        ..plan.clone()
    }
}

/// How long to wait before retry `attempt` (1-based) of a write: 50 ms,
/// doubling, at most 1 s (a reconnection is under way meanwhile).
fn retry_delay(attempt: usize) -> Duration {
    Duration::from_millis(50u64 << attempt.min(5).saturating_sub(1)).min(Duration::from_secs(1))
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// One key per master whose slot that master serves, in a stable
    /// order; `[None]` for one server (no routing needed).
    pub(crate) async fn node_hints(&self) -> Result<Vec<Option<String>>> {
        crate::keyspace::nodes::node_hints(&mut self.conn.clone(), self.ns.layout()).await
    }

    /// One SCAN page of the keys matching `pattern`, from `cursor`, on the
    /// node serving `hint` (one of [`node_hints`](Self::node_hints)): the
    /// next cursor and the keys.
    pub(crate) async fn scan_page(
        &self,
        hint: Option<&str>,
        cursor: u64,
        pattern: &str,
    ) -> Result<(u64, Vec<String>)> {
        let mut pipe = redis::pipe();
        crate::keyspace::nodes::scan_page(&mut pipe, cursor, pattern);
        crate::keyspace::nodes::route_to(&mut pipe, hint);
        let ((next, found),): ((u64, Vec<String>),) = pipe
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(pattern, e))?;
        Ok((next, found))
    }

    /// Walks the keys matching `pattern` on every master a SCAN page at a
    /// time, handing each page to `visit` and what it finds to `keep`: what
    /// the walk holds is one page.
    pub(crate) async fn each_page<'s, T, F, Fut>(
        &'s self,
        pattern: &str,
        visit: F,
        mut keep: impl FnMut(T) + Send,
    ) -> Result<()>
    where
        F: Fn(Vec<String>) -> Fut + Send,
        Fut: std::future::Future<Output = Result<T>> + Send + 's,
    {
        for hint in self.node_hints().await? {
            let mut cursor = 0;
            loop {
                let (next, page) = self.scan_page(hint.as_deref(), cursor, pattern).await?;
                keep(visit(page).await?);
                match next {
                    0 => break,
                    next => cursor = next,
                }
            }
        }
        Ok(())
    }
}
