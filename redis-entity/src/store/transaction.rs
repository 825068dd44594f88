//! Units of work, `store.transaction()`: saves, inserts, conditional
//! updates and deletes, relations, timeline pushes and board increments of
//! any entities of any types, sent as one atomic function call in one round
//! trip. Every check of every operation runs before the first write
//! (lua/unit.lua), so a unit is all or nothing.

use super::board::Board;
use super::relation::Relation;
use super::timeline::Timeline;
use super::update::Update;
use super::{valid_row, Store};
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::explain::Explain;
use crate::plan::write::{self, WritePlan};
use crate::schema::condition::Condition;
use crate::schema::entity::{Entity, EntityDesc, Layout};
use crate::schema::escape::{KeyLayout, Namespace};
use crate::schema::pk::IntoPk;
use crate::script::{self, args::UnitOp, reply, write::WriteOp, Call, Words};
use redis::aio::ConnectionLike;
use redis::Value;
use std::time::SystemTime;

/// One operation of a unit, placed in the store's namespace when the unit
/// runs.
type Build = Box<dyn FnOnce(&Namespace) -> Result<Planned> + Send + Sync>;

/// One operation placed: what the unit function takes, and how its refusal
/// reads.
pub(crate) struct Planned {
    /// What the operation is (`save`, `update`, `relate`, ...).
    kind: &'static str,
    /// The operation's kind in the unit function's call: `kind`, or its
    /// straight-line form (`fast_save`, ...).
    wire: &'static str,
    /// The entity type the operation writes and the key layout its plan
    /// spells keys in (the unit's library holds its description); `None`
    /// for relations, timelines and boards.
    desc: Option<(&'static EntityDesc, KeyLayout)>,
    keys: Words,
    args: Words,
    /// The key that names the operation in errors.
    subject: String,
    /// Why the operation cannot be part of a unit on a Redis Cluster.
    not_on_cluster: Option<String>,
    /// The typed error of the operation's refusal.
    refusal: Box<dyn Fn(redis::RedisError) -> Error + Send + Sync>,
    /// A delete's member: sides of its relations in other slots are
    /// cleaned after the unit, as after a delete.
    deleted: Option<String>,
}

impl Planned {
    fn of_plan(kind: &'static str, plan: WritePlan) -> Planned {
        // A write the type's straight-line code covers goes in its compact
        // form (lua/unit.lua `fast_kind`).
        let fast = match kind {
            "save" => Some("fast_save"),
            "insert" => Some("fast_insert"),
            "update" => Some("fast_update"),
            _ => None,
        };
        let (wire, (keys, args)) = match fast.zip(plan.unit_fast_parts()) {
            Some((wire, parts)) => (wire, parts),
            None => (kind, plan.unit_parts()),
        };
        let not_on_cluster = keyspace::needs_claims(plan.desc, &plan.ns).then(|| {
            format!(
                "{} has unique values claimed across {} index shards, in several steps: \
                 give it `#[redis(shards = 1)]` or a group to write it in a transaction",
                plan.desc.type_name, plan.desc.shards
            )
        });
        Planned {
            kind,
            wire,
            desc: Some((plan.desc, plan.ns.layout())),
            keys,
            args,
            subject: plan.keys.base.clone(),
            not_on_cluster,
            deleted: (plan.op == WriteOp::Delete).then(|| plan.keys.member.clone()),
            refusal: Box::new(move |e| plan.server_error(e)),
        }
    }

    fn of_call(kind: &'static str, call: Call<'static>, subject: String) -> Planned {
        let key = subject.clone();
        let (keys, args) = call.into_parts();
        Planned {
            kind,
            wire: kind,
            desc: None,
            keys,
            args,
            subject,
            not_on_cluster: None,
            deleted: None,
            refusal: Box::new(move |e| Error::redis(&key, e)),
        }
    }
}

/// A unit of work being built: `store.transaction()`. `exec()` sends every
/// operation as one atomic call, in one round trip, all or nothing: every
/// check of every operation (conditions, versions, unique values, relation
/// ends, the Redis type of every key written) runs before the first write.
/// A refusal is [`Error::TransactionRefused`], naming the operation (its
/// index in the unit and its entity's key) with the operation's own error
/// inside, and nothing of the unit is written: whether the server refused it
/// (a condition, a unique value) or the client did before sending anything
/// (an entity its `validate` refuses, a value that cannot be encoded). A
/// unit that cannot run as one call at all is [`Error::InvalidTransaction`].
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store, relation::{Relation, Timeline}};
/// # #[derive(RedisEntity)] #[redis(group = "social")] struct User { #[pk] id: u64, posts: u64 }
/// # #[derive(RedisEntity)] #[redis(group = "social")] struct Post { #[pk] id: u64, author: u64, text: String }
/// const FEED: Timeline<User, Post> = Timeline::new("feed", 100);
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let post = Post { id: 77, author: 9, text: "hello".into() };
/// store
///     .transaction()
///     .save(&post)
///     .update::<User>(&9, |u| u.incr(User::POSTS, 1))
///     .push(&FEED, &77, [1u64, 2, 3])
///     .exec()
///     .await?; // all three, or none
/// # Ok(()) }
/// ```
///
/// Each entity is written by at most one operation of a unit (a unit
/// naming one twice is refused before sending: merge the operations). The
/// checks see the stored values, plus the entities the unit's earlier
/// operations save or delete (relating an entity saved in the same unit
/// works). A unique value freed by one operation cannot be taken by another
/// of the same unit. On a Redis Cluster every key of a unit must be in one
/// slot (types of one `#[redis(group = "..")]`); any other unit is refused
/// with [`Error::InvalidTransaction`] before anything is sent.
#[must_use = "a transaction does nothing until `exec()` is called"]
pub struct Transaction<'s, S> {
    pub(crate) store: &'s S,
    ops: Vec<Build>,
    /// The entities written so far, by type (its description) and member,
    /// with their operation's index.
    written: Vec<(&'static EntityDesc, String, usize)>,
    /// The first error met while building; `exec()` returns it.
    error: Option<Error>,
}

impl<'s, S> Transaction<'s, S> {
    pub(crate) fn new(store: &'s S) -> Self {
        Transaction {
            store,
            ops: Vec::new(),
            written: Vec::new(),
            error: None,
        }
    }

    /// The same transaction on another store (the blocking store runs the
    /// async one).
    pub(crate) fn rebind<T>(self, store: &T) -> Transaction<'_, T> {
        Transaction {
            store,
            ops: self.ops,
            written: self.written,
            error: self.error,
        }
    }

    /// How many operations the unit holds.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the unit holds no operation (`exec` then sends nothing).
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn fail(mut self, e: Error) -> Self {
        self.error.get_or_insert(e);
        self
    }

    /// Adds an operation refused before anything is sent (its entity is not
    /// valid, a value cannot be encoded, ...): the unit fails as for any
    /// refused operation, [`Error::TransactionRefused`] naming it, with
    /// `e` inside. Not for errors of the unit as a whole
    /// ([`Error::InvalidTransaction`], `fail`).
    fn refuse(mut self, desc: &'static EntityDesc, member: String, e: Error) -> Self {
        let op = self.ops.len();
        self.ops.push(Box::new(move |ns| {
            Err(Error::TransactionRefused {
                op,
                key: EntityKeys::new(desc, ns, member).base,
                source: Box::new(e),
            })
        }));
        self
    }

    /// Adds an operation writing the entity `member` of `desc`; a second
    /// one on the same entity makes the unit invalid.
    fn write(mut self, desc: &'static EntityDesc, member: String, build: Build) -> Self {
        let op = self.ops.len();
        if let Some((_, _, first)) = self
            .written
            .iter()
            .find(|(t, m, _)| std::ptr::eq(*t, desc) && *m == member)
        {
            let reason = format!(
                "operations {first} and {op} both write {} `{member}`: merge them into one",
                desc.type_name
            );
            return self.fail(Error::InvalidTransaction { reason });
        }
        self.written.push((desc, member, op));
        self.ops.push(build);
        self
    }

    fn save_as<E: Entity>(self, entity: &E, insert: bool) -> Self {
        let mut member = String::new();
        entity.write_own_member(&mut member);
        let row = match valid_row(entity) {
            Ok(row) => row,
            Err(e) => return self.refuse(E::DESC, member, e),
        };
        let kind = if insert { "insert" } else { "save" };
        let m = member.clone();
        self.write(
            E::DESC,
            member,
            Box::new(move |ns| {
                let keys = EntityKeys::new(E::DESC, ns, m);
                let plan = write::save(E::DESC, ns, keys, row.clone(), insert, None);
                Ok(Planned::of_plan(kind, plan))
            }),
        )
    }

    /// Upserts `entity`, as [`Store::save`] (validated, all its index
    /// entries moved with it).
    pub fn save<E: Entity>(self, entity: &E) -> Self {
        self.save_as(entity, false)
    }

    /// Creates `entity`; the unit is refused if it exists
    /// ([`Error::AlreadyExists`] inside [`Error::TransactionRefused`]).
    pub fn insert<E: Entity>(self, entity: &E) -> Self {
        self.save_as(entity, true)
    }

    /// Updates the entity with `pk` in place: `change` gets an update to
    /// build as with [`Store::update`] (`set`, `incr`, `incr_within`,
    /// `when`, `if_version`, `ttl`, ...). A missing entity refuses the unit
    /// ([`Error::NotFound`]). Hash and strings layouts (a `json` update
    /// reads the document first: save the whole entity instead).
    pub fn update<E: Entity>(
        self,
        pk: impl IntoPk<E::Pk>,
        change: impl FnOnce(Update<'static, E, ()>) -> Update<'static, E, ()>,
    ) -> Self {
        let update = change(Update::new(&(), &pk.into_pk()));
        if let Some(e) = update.error {
            return self.refuse(E::DESC, update.member, e);
        }
        if E::DESC.layout == Layout::Json {
            let reason = format!(
                "an update of {} (json layout) reads its document first: save the whole \
                 entity in a transaction instead",
                E::DESC.type_name
            );
            return self.fail(Error::InvalidTransaction { reason });
        }
        if let Err(e) = write::check_update_scores(E::DESC, &update.ops) {
            return self.refuse(E::DESC, update.member, e);
        }
        let member = update.member.clone();
        self.write(
            E::DESC,
            member,
            Box::new(move |ns| {
                let keys = EntityKeys::new(E::DESC, ns, update.member);
                let mut plan =
                    write::update(E::DESC, ns, keys, update.ops, update.ttl, update.version);
                plan.remove_ttl = update.persist;
                plan.conditions = update.conditions;
                Ok(Planned::of_plan("update", plan))
            }),
        )
    }

    /// Deletes the entity with `pk`, its index entries and relations (as
    /// [`Store::delete`]; a missing entity is no refusal).
    pub fn delete<E: Entity>(self, pk: impl IntoPk<E::Pk>) -> Self {
        self.delete_if::<E>(pk, [])
    }

    /// Deletes the entity with `pk` only if every condition holds on its
    /// stored values, else the unit is refused ([`Error::ConditionFailed`]
    /// inside [`Error::TransactionRefused`]). Hash and strings layouts.
    pub fn delete_if<E: Entity>(
        self,
        pk: impl IntoPk<E::Pk>,
        conditions: impl IntoIterator<Item = Condition<E>>,
    ) -> Self {
        let member = E::member(&pk.into_pk());
        let conditions = match conditions
            .into_iter()
            .map(|c| c.spec)
            .collect::<Result<Vec<_>>>()
        {
            Ok(c) => c,
            Err(e) => return self.refuse(E::DESC, member, e),
        };
        if E::DESC.layout == Layout::Json && !conditions.is_empty() {
            let reason = format!(
                "the conditions of a delete of {} (json layout) are checked on a read of its \
                 document: use `Store::delete_if` outside a transaction",
                E::DESC.type_name
            );
            return self.fail(Error::InvalidTransaction { reason });
        }
        let m = member.clone();
        self.write(
            E::DESC,
            member,
            Box::new(move |ns| {
                let keys = EntityKeys::new(E::DESC, ns, m);
                let mut plan = write::lifecycle(E::DESC, ns, keys, WriteOp::Delete, None);
                plan.conditions = conditions;
                Ok(Planned::of_plan("delete", plan))
            }),
        )
    }

    fn relation<A: Entity, B: Entity>(
        mut self,
        rel: &Relation<A, B>,
        a: A::Pk,
        b: B::Pk,
        relate: bool,
    ) -> Self {
        let rel = *rel;
        self.ops.push(Box::new(move |ns| {
            let call = super::relation::call(&rel, ns, &a, &b, relate);
            let (ka, kb) = (
                keyspace::entity_key(A::DESC, ns, &A::member(&a)),
                keyspace::entity_key(B::DESC, ns, &B::member(&b)),
            );
            let not_on_cluster = super::across::spans_slots([A::DESC, B::DESC], [&ka, &kb], ns)
                .then(|| {
                    format!(
                        "the relation `{}` of `{ka}` and `{kb}` spans two slots: put {} and {} \
                         in one group to relate them in a transaction",
                        rel.name(),
                        A::DESC.type_name,
                        B::DESC.type_name
                    )
                });
            let mut planned =
                Planned::of_call(if relate { "relate" } else { "unrelate" }, call, ka.clone());
            planned.not_on_cluster = not_on_cluster;
            // Detail of a missing end: which side.
            planned.refusal = Box::new(move |e| match (e.code(), e.detail().map(str::trim)) {
                (Some("ENTITY_NOT_FOUND"), Some("1")) => Error::NotFound { key: ka.clone() },
                (Some("ENTITY_NOT_FOUND"), Some("2")) => Error::NotFound { key: kb.clone() },
                _ => Error::redis(&ka, e),
            });
            Ok(planned)
        }));
        self
    }

    /// Relates `a` to `b` on both sides (as the relation handle's
    /// `relate`); both must exist once the unit's earlier operations are
    /// applied, else the unit is refused ([`Error::NotFound`]).
    pub fn relate<A: Entity, B: Entity>(
        self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
        b: impl IntoPk<B::Pk>,
    ) -> Self {
        self.relation(rel, a.into_pk(), b.into_pk(), true)
    }

    /// Removes the relation of `a` to `b` on both sides.
    pub fn unrelate<A: Entity, B: Entity>(
        self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
        b: impl IntoPk<B::Pk>,
    ) -> Self {
        self.relation(rel, a.into_pk(), b.into_pk(), false)
    }

    /// Pushes `post` onto the timelines of `owners` (as the timeline
    /// handle's `push`), capped. Owners that do not exist once the unit's
    /// earlier operations are applied are skipped, as by `push`.
    pub fn push<O: Entity, P: Entity>(
        mut self,
        timeline: &Timeline<O, P>,
        post: impl IntoPk<P::Pk>,
        owners: impl IntoIterator<Item = impl IntoPk<O::Pk>>,
    ) -> Self {
        let post = P::member(&post.into_pk());
        let owners: Vec<String> = owners
            .into_iter()
            .map(|o| O::member(&o.into_pk()))
            .collect();
        let (name, cap) = (timeline.name(), timeline.cap());
        self.ops.push(Box::new(move |ns| {
            let keys: Vec<String> = owners
                .iter()
                .map(|o| keyspace::entity_key(O::DESC, ns, o))
                .collect();
            let entry = keyspace::timeline_entry(P::DESC, ns);
            let presence = keyspace::presence_suffix(O::DESC);
            let call = super::timeline::PushOf {
                name,
                cap,
                entry: &entry,
                post_member: &post,
                presence_suffix: &presence,
            }
            .call(false, &keys);
            let subject = keys.first().cloned().unwrap_or_default();
            Ok(Planned::of_call("push", call, subject))
        }));
        self
    }

    /// Adds `delta` to the score of the entity with `pk` in the current
    /// bucket of the time-bucketed `board` (as the rotating board handle's
    /// `incr`).
    pub fn board_incr<E: Entity>(
        mut self,
        board: &Board<E>,
        pk: impl IntoPk<E::Pk>,
        delta: f64,
    ) -> Self {
        let board = *board;
        let member = E::member(&pk.into_pk());
        let at = SystemTime::now();
        self.ops.push(Box::new(move |ns| {
            let bucket = board.key(ns, at);
            let call = script::args::BoardIncr {
                bucket: &bucket,
                delta,
                member: &member,
                expires_at_ms: board.expires_at_ms(at),
            }
            .call();
            Ok(Planned::of_call("board", call, bucket.clone()))
        }));
        self
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Starts a unit of work: operations on any entities of any types, sent
    /// as one atomic call by [`Transaction::exec`].
    pub fn transaction(&self) -> Transaction<'_, Self> {
        Transaction::new(self)
    }

    /// The unit's operations placed in this store's namespace, its library's
    /// types, and its call.
    fn unit(&self, ops: Vec<Build>) -> Result<(Vec<Planned>, Call<'static>)> {
        let planned: Vec<Planned> = ops
            .into_iter()
            .map(|b| b(&self.ns))
            .collect::<Result<_>>()?;
        if self.ns.layout() == KeyLayout::Cluster {
            one_slot(&planned)?;
        }
        let id = |(d, layout): &(&'static EntityDesc, KeyLayout)| {
            (
                *d as *const EntityDesc as usize,
                *layout == KeyLayout::Cluster,
            )
        };
        let mut types: Vec<(&'static EntityDesc, KeyLayout)> =
            planned.iter().filter_map(|p| p.desc).collect();
        types.sort_by_key(id);
        types.dedup_by_key(|t| id(t));
        // The call's header counts in 2 and 3 bytes (script::args::unit_call).
        let too_big = types.len() > script::args::UNIT_MAX_TYPES
            || planned
                .iter()
                .any(|p| p.keys.len().max(p.args.len()) > script::args::UNIT_MAX_COUNT);
        if too_big {
            return Err(Error::InvalidTransaction {
                reason: format!(
                    "a unit holds at most {} entity types and {} keys or arguments per \
                     operation: split it",
                    script::args::UNIT_MAX_TYPES,
                    script::args::UNIT_MAX_COUNT
                ),
            });
        }
        let function = script::write::unit_script(&types);
        let number = |d: Option<(&'static EntityDesc, KeyLayout)>| {
            d.and_then(|d| types.iter().position(|t| id(t) == id(&d)))
                .map_or(0, |i| i + 1)
        };
        let ops: Vec<UnitOp<'_>> = planned
            .iter()
            .map(|p| UnitOp {
                kind: p.wire,
                type_number: number(p.desc),
                keys: &p.keys,
                args: &p.args,
            })
            .collect();
        let call = script::args::unit_call(function, &ops);
        Ok((planned, call))
    }

    /// Sends a unit: one atomic call, one round trip; counted (and traced)
    /// as one write of its operations.
    async fn run_unit(&self, ops: Vec<Build>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let (planned, call) = self.unit(ops)?;
        let op = super::observe::Op::Unit {
            key: &planned[0].subject,
            n: planned.len(),
        };
        let sent = op
            .run(&self.counters, self.send_unit(&planned, &call))
            .await;
        // The near cache learns of the unit's writes from Redis' tracking,
        // on its own connection: the entities it wrote go from memory now,
        // so that this store reads its own writes at once (whatever the
        // outcome: a lost reply may hide a write).
        if let Some(near) = &self.near {
            for p in &planned {
                if p.desc.is_some_and(|(d, _)| near.shared.caches(d.type_name)) {
                    near.shared.invalidate(p.subject.as_bytes());
                }
            }
        }
        sent
    }

    async fn send_unit(&self, planned: &[Planned], call: &Call<'static>) -> Result<()> {
        self.mark_layout().await?;
        for (desc, _) in planned.iter().filter_map(|p| p.desc) {
            self.schema_write_check(desc).await?;
        }
        let reply: redis::RedisResult<Value> =
            script::invoke(&mut self.conn.clone(), &self.sent, call).await;
        let reply = match reply {
            Ok(Value::ServerError(e)) => Err(e.into()),
            other => other,
        };
        let outcomes = match reply {
            Ok(Value::Array(outcomes)) => outcomes,
            Ok(other) => {
                return Err(Error::UnexpectedReply {
                    key: planned[0].subject.clone(),
                    detail: format!("{other:?}"),
                })
            }
            Err(e) => return Err(refused(planned, e)),
        };
        // Sides of deleted entities' relations in other slots of a cluster:
        // cleaned as after a delete.
        for (p, v) in planned.iter().zip(&outcomes) {
            if let Some(member) = &p.deleted {
                let away = reply::away(v);
                if !away.is_empty() {
                    self.unlink_away(member, &away).await?;
                }
            }
        }
        Ok(())
    }
}

/// The typed error of a unit's refusal: the operation it names, with that
/// operation's own error.
fn refused(planned: &[Planned], e: redis::RedisError) -> Error {
    let Some((op, inner)) = reply::unit_refusal(&e) else {
        let key = planned.first().map_or("", |p| p.subject.as_str());
        return Error::redis(key, e);
    };
    match planned.get(op) {
        Some(p) => Error::TransactionRefused {
            op,
            key: p.subject.clone(),
            source: Box::new((p.refusal)(inner)),
        },
        None => Error::redis("", e),
    }
}

/// On a cluster: every key of the unit in one slot, and no operation that
/// takes several steps.
fn one_slot(planned: &[Planned]) -> Result<()> {
    let mut first: Option<(u16, String)> = None;
    for p in planned {
        if let Some(reason) = &p.not_on_cluster {
            return Err(Error::InvalidTransaction {
                reason: reason.clone(),
            });
        }
        for key in p.keys.iter() {
            let key = String::from_utf8_lossy(key);
            let slot = keyspace::nodes::slot_of(keyspace::slot_tag(&key));
            match &first {
                None => first = Some((slot, key.into_owned())),
                Some((s, k)) if *s != slot => {
                    let reason = format!(
                        "on a Redis Cluster a transaction runs in one slot, and `{k}` is in \
                         slot {s}, `{key}` in slot {slot}: put the types in one group \
                         (`#[redis(group = \"..\")]`)"
                    );
                    return Err(Error::InvalidTransaction { reason });
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

impl<C: ConnectionLike + Clone + Send + Sync> Transaction<'_, Store<C>> {
    /// Sends the unit: one atomic function call, one round trip; all of it
    /// is written, or nothing. An empty unit sends nothing.
    pub async fn exec(self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.store.run_unit(self.ops).await
    }

    /// What `exec` would send, without sending it.
    pub fn explain(self) -> Result<Explain> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let n = self.ops.len();
        let (planned, call) = self.store.unit(self.ops)?;
        let what: Vec<String> = planned
            .iter()
            .map(|p| format!("{} {}", p.kind, p.subject))
            .collect();
        Ok(Explain {
            what: format!("transaction of {n} operation(s): {}", what.join(", ")),
            round_trips: vec![vec![call.describe()]],
            keys: planned
                .iter()
                .flat_map(|p| {
                    p.keys
                        .iter()
                        .map(|k| String::from_utf8_lossy(k).into_owned())
                })
                .collect(),
            notes: vec![
                "one atomic function call: every check of every operation runs before the \
                 first write, so the unit is all or nothing"
                    .into(),
            ],
        })
    }
}
