//! Relations between entities and pushed timelines (seed 000's Weibo).
//!
//! A [`Relation<A, B>`] keeps both sides in step in one atomic call:
//! `<a key>:<name>` holds the members of the `B`s that `a` relates to,
//! `<b key>:<reverse>` the members of the `A`s related to `b` (seed 000:
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

use crate::entity::{Entity, EntityDesc};
use crate::key::Namespace;
use crate::keyspace;
use std::marker::PhantomData;

/// A relation from entities of type `A` to entities of type `B`.
///
/// ```
/// use redis_entity::relation::Relation;
/// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
/// // Seed 000: "people I follow" and "people who follow me".
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

impl<A, B> Relation<A, B> {
    /// Each `A` relates to many `B`s and each `B` to many `A`s.
    pub const fn many_to_many(name: &'static str, reverse: &'static str) -> Self {
        Relation {
            name,
            reverse,
            one_to_many: false,
            _p: PhantomData,
        }
    }

    /// Each `A` has many `B`s, each `B` at most one `A` (seed 000: a program's
    /// red-packet tasks): relating a `B` to a new `A` takes it from the old one.
    pub const fn one_to_many(name: &'static str, reverse: &'static str) -> Self {
        Relation {
            name,
            reverse,
            one_to_many: true,
            _p: PhantomData,
        }
    }

    /// The forward name (`<a key>:<name>`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The reverse name (`<b key>:<reverse>`).
    pub const fn reverse(&self) -> &'static str {
        self.reverse
    }
}

/// The relation script.
fn key_of(desc: &EntityDesc, ns: &Namespace, member: &str) -> String {
    keyspace::entity_key(desc, ns.as_str(), member)
}

/// The forward set of `a`.
pub(crate) fn forward_key<A: Entity, B>(rel: &Relation<A, B>, ns: &Namespace, a: &A::Pk) -> String {
    keyspace::sub_key(&key_of(A::DESC, ns, &A::member(a)), rel.name)
}

/// The reverse set of `b`.
pub(crate) fn reverse_key<A, B: Entity>(rel: &Relation<A, B>, ns: &Namespace, b: &B::Pk) -> String {
    keyspace::sub_key(&key_of(B::DESC, ns, &B::member(b)), rel.reverse)
}

/// The script call relating (or unrelating) `a` and `b`.
pub(crate) fn call<A: Entity, B: Entity>(
    rel: &Relation<A, B>,
    ns: &Namespace,
    a: &A::Pk,
    b: &B::Pk,
    relate: bool,
) -> crate::script::Call<'static> {
    let (am, bm) = (A::member(a), B::member(b));
    let (ak, bk) = (key_of(A::DESC, ns, &am), key_of(B::DESC, ns, &bm));
    let keys = [
        keyspace::sub_key(&ak, rel.name),
        keyspace::sub_key(&bk, rel.reverse),
        keyspace::relation_register(&ak),
        keyspace::relation_register(&bk),
    ];
    let args = [
        if relate { "relate" } else { "unrelate" }.to_owned(),
        am,
        bm,
        rel.name.to_owned(),
        rel.reverse.to_owned(),
        keyspace::register_entry(A::DESC, ns.as_str(), rel.name),
        keyspace::register_entry(B::DESC, ns.as_str(), rel.reverse),
        if rel.one_to_many { "1" } else { "0" }.to_owned(),
        format!("{}{}", ns.as_str(), A::DESC.key_head), // the Lua adds `{member}` and the tail
        A::DESC.key_tail.to_owned(),
        crate::keyspace::ttl_key(A::DESC, ns.as_str(), &A::member(a)),
        crate::keyspace::expiry_key(A::DESC, ns.as_str()),
        crate::keyspace::ttl_key(B::DESC, ns.as_str(), &B::member(b)),
        crate::keyspace::expiry_key(B::DESC, ns.as_str()),
    ];
    let mut call = crate::script::RELATION.call();
    call.keys = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    call.args = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    call
}

/// A capped list per owner of type `O` holding members of `P`s, newest first.
///
/// ```
/// use redis_entity::relation::Timeline;
/// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # #[derive(redis_entity::RedisEntity)] struct Post { #[pk] id: u64, text: String }
/// // Seed 000: "posts pushed to me" (`rpush push:userid:8 1`), the newest 1,000.
/// const PUSHED: Timeline<User, Post> = Timeline::new("pushed", 1000);
/// assert_eq!(PUSHED.cap(), 1000);
/// ```
pub struct Timeline<O, P> {
    name: &'static str,
    cap: usize,
    _p: PhantomData<fn() -> (O, P)>,
}

impl<O, P> Clone for Timeline<O, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O, P> Copy for Timeline<O, P> {}

impl<O, P> std::fmt::Debug for Timeline<O, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Timeline({}, cap {})", self.name, self.cap)
    }
}

impl<O, P> Timeline<O, P> {
    /// A timeline named `name` keeping the newest `cap` entries.
    pub const fn new(name: &'static str, cap: usize) -> Self {
        Timeline {
            name,
            cap,
            _p: PhantomData,
        }
    }

    /// The timeline's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// How many entries a timeline keeps.
    pub const fn cap(&self) -> usize {
        self.cap
    }

    /// The list of `owner` (`<owner key>:<name>`).
    pub fn key(&self, ns: &Namespace, owner: &O::Pk) -> String
    where
        O: Entity,
    {
        keyspace::sub_key(&key_of(O::DESC, ns, &O::member(owner)), self.name)
    }
}

/// How many owners one pipelined push covers.
pub(crate) const PUSH_BATCH: usize = 1000;

/// `LPUSH` + `LTRIM` of `post` onto each owner's timeline, and the
/// timeline's name in the owner's register (so that deleting the owner
/// deletes its timeline).
pub(crate) fn push_pipeline(
    owner_keys: &[String],
    name: &str,
    post_member: &str,
    cap: usize,
) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    for owner in owner_keys {
        let list = keyspace::sub_key(owner, name);
        pipe.cmd("LPUSH").arg(&list).arg(post_member).ignore();
        pipe.cmd("LTRIM")
            .arg(&list)
            .arg(0)
            .arg(cap.saturating_sub(1))
            .ignore();
        pipe.cmd("HSET")
            .arg(keyspace::relation_register(owner))
            .arg(name)
            .arg("")
            .ignore();
    }
    pipe
}
