//! Relations between entities and pushed timelines (a Weibo-like model).
//!
//! A [`Relation<A, B>`] keeps both sides in step in one atomic call (on a
//! cluster, when both sides share a slot; sides in two slots are written one
//! after the other in the order `across` documents):
//! `<a key>:<name>` holds the members of the `B`s that `a` relates to,
//! `<b key>:<reverse>` the members of the `A`s related to `b` (for follows:
//! `follower:userid:9 -> {8}` and `follower:followerid:8 -> {9}`). Each
//! entity also keeps a small register, `<key>:@rel`, naming the sets on the
//! other side, so that deleting an entity, or sweeping one that expired,
//! removes it from every relation, both sides. Typed: relating a `Post` where
//! a `User` is expected does not compile.
//!
//! A [`Timeline<O, P>`] is a capped list per owner (`<owner key>:<name>`),
//! newest first, of the members of `P`s pushed to it: a post pushed to every
//! follower in one pipelined round trip per batch, a page read with its posts
//! in two.

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::plan::query;
use crate::schema::entity::{Entity, EntityDesc};
use crate::schema::escape::Namespace;
use crate::schema::pk::IntoPk;
use crate::script;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::Value;
use std::marker::PhantomData;

/// A relation from entities of type `A` to entities of type `B`.
///
/// ```
/// use redis_entity::relation::Relation;
/// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
/// // "People I follow" and "people who follow me".
/// const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
/// assert_eq!(FOLLOWS.name(), "following");
/// ```
pub struct Relation<A, B> {
    name: &'static str,
    reverse: &'static str,
    one_to_many: bool,
    _p: PhantomData<fn() -> (A, B)>,
}

impl<A, B> Clone for Relation<A, B> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A, B> Copy for Relation<A, B> {}

impl<A, B> std::fmt::Debug for Relation<A, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Relation({} / {})", self.name, self.reverse)
    }
}

impl<A: Entity, B: Entity> Relation<A, B> {
    /// Each `A` relates to many `B`s and each `B` to many `A`s.
    ///
    /// # Panics
    ///
    /// When `name` is one of `A`'s own keys under its entity key (a
    /// `#[hash]` field, or a column of the `strings` layout), or `reverse`
    /// one of `B`'s, or either is empty or starts with `@`: both would be
    /// the key `<entity key>:<name>`, and a save would overwrite the
    /// relation. Defined as a `const`, that is a compile-time error.
    ///
    /// ```compile_fail
    /// # use redis_entity::{RedisEntity, relation::Relation};
    /// #[derive(RedisEntity)]
    /// #[redis(layout = "strings")]
    /// struct User { #[pk] id: u64, following: u64 }
    /// // `user:9:following` would be the column and the relation set.
    /// const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
    /// # fn main() { let _ = FOLLOWS; }
    /// ```
    pub const fn many_to_many(name: &'static str, reverse: &'static str) -> Self {
        Self::checked(name, reverse);
        Relation {
            name,
            reverse,
            one_to_many: false,
            _p: PhantomData,
        }
    }

    /// Each `A` has many `B`s, each `B` at most one `A` (for follows: a program's
    /// red-packet tasks): relating a `B` to a new `A` takes it from the old one.
    ///
    /// # Panics
    ///
    /// As [`many_to_many`](Self::many_to_many).
    pub const fn one_to_many(name: &'static str, reverse: &'static str) -> Self {
        Self::checked(name, reverse);
        Relation {
            name,
            reverse,
            one_to_many: true,
            _p: PhantomData,
        }
    }

    const fn checked(name: &str, reverse: &str) {
        assert!(
            keyspace::free_sub_name(A::DESC, name) && keyspace::free_sub_name(B::DESC, reverse),
            "a relation's name is a key its entity type already has under each entity's key \
             (a #[hash] field, or a column of the strings layout), or is empty or starts \
             with `@`: both would be `<entity key>:<name>`; rename the relation"
        );
    }
}

impl<A, B> Relation<A, B> {
    /// The forward name (`<a key>:<name>`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The reverse name (`<b key>:<reverse>`).
    pub const fn reverse(&self) -> &'static str {
        self.reverse
    }

    /// True for a [`one_to_many`](Self::one_to_many) relation.
    pub const fn is_one_to_many(&self) -> bool {
        self.one_to_many
    }
}

/// The relation script.
fn key_of(desc: &EntityDesc, ns: &Namespace, member: &str) -> String {
    keyspace::entity_key(desc, ns, member)
}

/// The forward set of `a`.
pub(crate) fn forward_key<A: Entity, B>(rel: &Relation<A, B>, ns: &Namespace, a: &A::Pk) -> String {
    keyspace::sub_key(&key_of(A::DESC, ns, &A::member(a)), rel.name)
}

/// The reverse set of `b`.
pub(crate) fn reverse_key<A, B: Entity>(rel: &Relation<A, B>, ns: &Namespace, b: &B::Pk) -> String {
    keyspace::sub_key(&key_of(B::DESC, ns, &B::member(b)), rel.reverse)
}

/// One side of a relation for the relation script: the entity `member`
/// of `desc` and its set `set_name`.
fn side(
    desc: &EntityDesc,
    ns: &Namespace,
    member: String,
    set_name: &str,
) -> crate::script::args::RelationSide {
    let key = key_of(desc, ns, &member);
    crate::script::args::RelationSide {
        set: keyspace::sub_key(&key, set_name),
        register: keyspace::relation_register(&key),
        set_name: set_name.to_owned(),
        register_entry: keyspace::register_entry(desc, ns, set_name),
        entity_key: keyspace::ttl_key(desc, ns, &member),
        expiry_set: keyspace::expiry_key(desc, &keyspace::entity_space(desc, ns, &member)),
        member,
    }
}

/// The script call relating (or unrelating) `a` and `b`.
pub(crate) fn call<A: Entity, B: Entity>(
    rel: &Relation<A, B>,
    ns: &Namespace,
    a: &A::Pk,
    b: &B::Pk,
    relate: bool,
) -> crate::script::Call<'static> {
    let a_space = keyspace::type_space(A::DESC, ns);
    crate::script::args::Relate {
        relate,
        a: side(A::DESC, ns, A::member(a), rel.name),
        b: side(B::DESC, ns, B::member(b), rel.reverse),
        one_to_many: rel.one_to_many,
        // The Lua puts a's previous owner between the two.
        a_owner_head: keyspace::owner_head(A::DESC, &a_space),
        a_owner_tail: keyspace::owner_tail(A::DESC, &a_space),
    }
    .call()
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Relates `a` to `b` on both sides in one atomic call (for follows:
    /// follow); `true` when it was new. [`Error::NotFound`] (naming the
    /// missing entity's key) and nothing written when either does not exist.
    pub(crate) async fn relate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
        b: impl IntoPk<B::Pk>,
    ) -> Result<bool> {
        let a = &a.into_pk();
        let b = &b.into_pk();
        self.relation_call(rel, a, b, true).await
    }

    /// Removes the relation of `a` to `b` on both sides (unfollow); `true`
    /// when there was one.
    pub(crate) async fn unrelate<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
        b: impl IntoPk<B::Pk>,
    ) -> Result<bool> {
        let a = &a.into_pk();
        let b = &b.into_pk();
        self.relation_call(rel, a, b, false).await
    }

    pub(crate) async fn relation_call<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: &A::Pk,
        b: &B::Pk,
        relate: bool,
    ) -> Result<bool> {
        self.mark_layout().await?;
        let (ak, bk) = (
            key_of(A::DESC, &self.ns, &A::member(a)),
            key_of(B::DESC, &self.ns, &B::member(b)),
        );
        if !self.one_script([A::DESC, B::DESC], [&ak, &bk]) {
            return self
                .relation_across(rel, [(A::member(a), ak), (B::member(b), bk)], relate)
                .await;
        }
        let call = call(rel, &self.ns, a, b, relate);
        let n: i64 = script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| match (e.code(), e.detail().map(str::trim)) {
                // Detail: which side is missing.
                (Some("ENTITY_NOT_FOUND"), Some("1")) => Error::NotFound {
                    key: key_of(A::DESC, &self.ns, &A::member(a)),
                },
                (Some("ENTITY_NOT_FOUND"), Some("2")) => Error::NotFound {
                    key: key_of(B::DESC, &self.ns, &B::member(b)),
                },
                _ => Error::redis(&forward_key(rel, &self.ns, a), e),
            })?;
        Ok(n > 0)
    }

    /// True when `a` relates to `b` (does 8 follow 9?): `SISMEMBER`, one
    /// round trip.
    pub(crate) async fn is_related<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
        b: impl IntoPk<B::Pk>,
    ) -> Result<bool> {
        let a = &a.into_pk();
        let b = &b.into_pk();
        let key = forward_key(rel, &self.ns, a);
        self.read_cmd(redis::cmd("SISMEMBER").arg(&key).arg(B::member(b)), &key)
            .await
    }

    /// How many `B`s `a` relates to (how many people 8 follows): `SCARD`.
    pub(crate) async fn related_count<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
    ) -> Result<u64> {
        let a = &a.into_pk();
        let key = forward_key(rel, &self.ns, a);
        self.read_cmd(redis::cmd("SCARD").arg(&key), &key).await
    }

    /// How many `A`s relate to `b` (how many followers 9 has): `SCARD`.
    pub(crate) async fn related_back_count<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        b: impl IntoPk<B::Pk>,
    ) -> Result<u64> {
        let b = &b.into_pk();
        let key = reverse_key(rel, &self.ns, b);
        self.read_cmd(redis::cmd("SCARD").arg(&key), &key).await
    }

    /// The pks of the `B`s that `a` relates to (people I follow), in pages
    /// (see [`Self::set_members`]).
    pub(crate) async fn related<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
    ) -> Result<Vec<B::Pk>> {
        let a = &a.into_pk();
        let key = forward_key(rel, &self.ns, a);
        self.set_members_of::<B>(&key).await
    }

    /// The pks of the `A`s related to `b` (people who follow me), in pages
    /// (see [`Self::set_members`]).
    pub(crate) async fn related_back<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        b: impl IntoPk<B::Pk>,
    ) -> Result<Vec<A::Pk>> {
        let b = &b.into_pk();
        let key = reverse_key(rel, &self.ns, b);
        self.set_members_of::<A>(&key).await
    }

    /// For a relation of a type to itself: the pks related both ways with
    /// `a` (mutual follows). The two sets' sizes first (one round trip);
    /// `SINTER` walks the smaller set, so where it holds at most
    /// `members_per_call` members it is one bounded call; otherwise the
    /// smaller set is read by `SSCAN` pages, each looked up in the other
    /// with `SMISMEMBER` (two short calls a page, never one long one).
    pub(crate) async fn mutual<A: Entity>(
        &self,
        rel: &Relation<A, A>,
        a: impl IntoPk<A::Pk>,
    ) -> Result<Vec<A::Pk>> {
        let a = &a.into_pk();
        let (fwd, back) = (forward_key(rel, &self.ns, a), reverse_key(rel, &self.ns, a));
        let sizes: Vec<Value> = redis::pipe()
            .ignore_errors()
            .cmd("SCARD")
            .arg(&fwd)
            .cmd("SCARD")
            .arg(&back)
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&fwd, e))?;
        let mut sizes = sizes.into_iter();
        let n_fwd: u64 = super::query::decode_named(sizes.next().unwrap_or(Value::Nil), &fwd)?;
        let n_back: u64 = super::query::decode_named(sizes.next().unwrap_or(Value::Nil), &back)?;
        if n_fwd.min(n_back) <= self.budget.per_call as u64 {
            return self
                .members_of::<A>(&redis::cmd("SINTER").arg(&fwd).arg(&back).clone(), &fwd)
                .await;
        }
        let (small, other) = if n_fwd <= n_back {
            (&fwd, &back)
        } else {
            (&back, &fwd)
        };
        let mut both: Vec<String> = Vec::new();
        let mut walk = SetWalk::new(small);
        while let Some(page) = walk.next_page(self).await? {
            if page.is_empty() {
                continue;
            }
            let found: Vec<bool> = self
                .read_cmd(redis::cmd("SMISMEMBER").arg(other).arg(&page), other)
                .await?;
            both.extend(
                page.into_iter()
                    .zip(found)
                    .filter(|(_, f)| *f)
                    .map(|(m, _)| m),
            );
        }
        query::sort_members(A::DESC, &mut both);
        Ok(query::parse_members::<A>(&both))
    }

    /// The `B`s that `a` relates to, read in one pipelined round trip after
    /// the set (two in all); ones deleted or expired since are skipped.
    pub(crate) async fn related_entities<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        a: impl IntoPk<A::Pk>,
    ) -> Result<Vec<B>> {
        let a = &a.into_pk();
        let pks = self.related(rel, a).await?;
        Ok(self
            .get_many::<B>(&pks)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    /// The pks in the set at `key`, sorted (see [`Self::set_members`]).
    async fn set_members_of<E: Entity>(&self, key: &str) -> Result<Vec<E::Pk>> {
        let mut members = self.set_members(key).await?;
        query::sort_members(E::DESC, &mut members);
        Ok(query::parse_members::<E>(&members))
    }

    /// Every member of the set at `key`, each once, read by `SSCAN` in
    /// pages of about `members_per_call`: a set of a million followers is
    /// many short calls, never one long `SMEMBERS` (a small set comes in
    /// the first page, one round trip).
    pub(crate) async fn set_members(&self, key: &str) -> Result<Vec<String>> {
        let mut walk = SetWalk::new(key);
        let mut out: Vec<String> = Vec::new();
        while let Some(page) = walk.next_page(self).await? {
            out.extend(page);
        }
        Ok(out)
    }

    /// One `SSCAN` page of the set at `key` from `cursor` (about
    /// `members_per_call` members): the next cursor (0 at the end) and the
    /// members.
    pub(crate) async fn set_page(&self, key: &str, cursor: u64) -> Result<(u64, Vec<String>)> {
        redis::cmd("SSCAN")
            .arg(key)
            .arg(cursor)
            .arg("COUNT")
            .arg(self.budget.per_call)
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(key, e))
    }

    pub(crate) async fn members_of<E: Entity>(
        &self,
        cmd: &redis::Cmd,
        key: &str,
    ) -> Result<Vec<E::Pk>> {
        let members: Vec<String> = cmd
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(key, e))?;
        let mut members = members;
        query::sort_members(E::DESC, &mut members);
        Ok(query::parse_members::<E>(&members))
    }
}

/// A walk of a set by `SSCAN` pages (see [`Store::set_page`]) that gives
/// each member once: `SSCAN` returns a member twice when the set is
/// resized between pages. A set that comes whole in the first page is
/// handed on as it is, with nothing remembered.
pub(crate) struct SetWalk<'k> {
    key: &'k str,
    cursor: u64,
    done: bool,
    seen: std::collections::HashSet<String>,
}

impl<'k> SetWalk<'k> {
    pub(crate) fn new(key: &'k str) -> Self {
        SetWalk {
            key,
            cursor: 0,
            done: false,
            seen: Default::default(),
        }
    }

    /// The members of the next page not met before (possibly none); `None`
    /// once the walk is over.
    pub(crate) async fn next_page<C: ConnectionLike + Clone + Send + Sync>(
        &mut self,
        store: &Store<C>,
    ) -> Result<Option<Vec<String>>> {
        if self.done {
            return Ok(None);
        }
        let (next, page) = store.set_page(self.key, self.cursor).await?;
        let whole = self.cursor == 0 && next == 0;
        self.done = next == 0;
        self.cursor = next;
        if whole {
            return Ok(Some(page));
        }
        Ok(Some(
            page.into_iter()
                .filter(|m| self.seen.insert(m.clone()))
                .collect(),
        ))
    }
}

/// The pairs of one [`Relation`] in a store: `store.relation(&FOLLOWS)`.
///
/// Writes change both sides in one atomic call; reads of a set are one
/// round trip when it is small, and `SSCAN` pages of about
/// `members_per_call` members when it is not (a million followers are many
/// short calls, never one that holds the server).
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store, relation::Relation};
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// store.relation(&FOLLOWS).relate(&8, &9).await?;          // 8 follows 9
/// assert_eq!(store.relation(&FOLLOWS).related_back(&9).await?, vec![8]);
/// # Ok(()) }
/// ```
pub struct Relations<'s, A, B, C = ConnectionManager> {
    store: &'s Store<C>,
    rel: Relation<A, B>,
}

impl<A, B, C> Clone for Relations<'_, A, B, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A, B, C> Copy for Relations<'_, A, B, C> {}

impl<A, B, C> std::fmt::Debug for Relations<'_, A, B, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Relations({:?})", self.rel)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The pairs of `rel` in this store: relate, unrelate and read them.
    pub fn relation<A: Entity, B: Entity>(&self, rel: &Relation<A, B>) -> Relations<'_, A, B, C> {
        Relations {
            store: self,
            rel: *rel,
        }
    }
}

impl<A: Entity, B: Entity, C: ConnectionLike + Clone + Send + Sync> Relations<'_, A, B, C> {
    /// Relates `a` to `b` on both sides in one atomic call (follow); `true`
    /// when it was new. [`Error::NotFound`] (naming the missing entity's
    /// key) and nothing written when either does not exist; a side's key of
    /// the wrong type is [`Error::WrongType`] naming it, nothing written.
    pub async fn relate(&self, a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool> {
        self.store.relate(&self.rel, a, b).await
    }

    /// Removes the relation of `a` to `b` on both sides (unfollow); `true`
    /// when there was one.
    pub async fn unrelate(&self, a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool> {
        self.store.unrelate(&self.rel, a, b).await
    }

    /// True when `a` relates to `b` (does 8 follow 9?): `SISMEMBER`.
    pub async fn is_related(&self, a: impl IntoPk<A::Pk>, b: impl IntoPk<B::Pk>) -> Result<bool> {
        self.store.is_related(&self.rel, a, b).await
    }

    /// How many `B`s `a` relates to (how many people 8 follows): `SCARD`.
    pub async fn related_count(&self, a: impl IntoPk<A::Pk>) -> Result<u64> {
        self.store.related_count(&self.rel, a).await
    }

    /// How many `A`s relate to `b` (how many followers 9 has): `SCARD`.
    pub async fn related_back_count(&self, b: impl IntoPk<B::Pk>) -> Result<u64> {
        self.store.related_back_count(&self.rel, b).await
    }

    /// The pks of the `B`s that `a` relates to (people 8 follows), in the
    /// type's pk order: `SSCAN` pages (one for a small set).
    pub async fn related(&self, a: impl IntoPk<A::Pk>) -> Result<Vec<B::Pk>> {
        self.store.related(&self.rel, a).await
    }

    /// The pks of the `A`s related to `b` (people who follow 9), in the
    /// type's pk order: `SSCAN` pages (one for a small set).
    pub async fn related_back(&self, b: impl IntoPk<B::Pk>) -> Result<Vec<A::Pk>> {
        self.store.related_back(&self.rel, b).await
    }

    /// The `B`s that `a` relates to, read in one pipelined round trip after
    /// the set (two in all); ones deleted or expired since are skipped.
    pub async fn related_entities(&self, a: impl IntoPk<A::Pk>) -> Result<Vec<B>> {
        self.store.related_entities(&self.rel, a).await
    }

    /// Makes this relation in `to` hold the pairs it holds here (the last
    /// step of a relayout, after the entities of both types moved; see
    /// [`crate::relayout`]).
    pub async fn relayout<D>(
        &self,
        to: &Store<D>,
        count: usize,
    ) -> Result<crate::store::migrate::Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        self.store.relayout_relation(&self.rel, to, count).await
    }
}

impl<A: Entity, C: ConnectionLike + Clone + Send + Sync> Relations<'_, A, A, C> {
    /// For a relation of a type to itself: the pks related both ways with
    /// `a` (mutual follows), in the type's pk order. Two round trips
    /// (the sizes, then `SINTER`) when either side holds at most
    /// `members_per_call` members; otherwise the smaller side in `SSCAN`
    /// pages looked up in the other (`SMISMEMBER`), each call bounded.
    pub async fn mutual(&self, a: impl IntoPk<A::Pk>) -> Result<Vec<A::Pk>> {
        self.store.mutual(&self.rel, a).await
    }
}
