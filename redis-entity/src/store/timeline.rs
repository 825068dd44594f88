//! Pushed timelines (a Weibo-like feed): a capped list of post members per
//! owner, newest first, with the push fanned out to followers.

use super::relation::Relation;
use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::plan::query;
use crate::schema::entity::Entity;
use crate::schema::escape::Namespace;
use crate::schema::pk::IntoPk;
use crate::script;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::Value;
use std::marker::PhantomData;

/// A capped list per owner of type `O` holding members of `P`s, newest first.
///
/// ```
/// use redis_entity::relation::Timeline;
/// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # #[derive(redis_entity::RedisEntity)] struct Post { #[pk] id: u64, text: String }
/// // "Posts pushed to me" (`rpush push:userid:8 1`), the newest 1,000.
/// const PUSHED: Timeline<User, Post> = Timeline::new("pushed", 1000);
/// assert_eq!(PUSHED.cap(), 1000);
/// ```
pub struct Timeline<O, P> {
    name: &'static str,
    cap: usize,
    /// Hybrid fan-out: the posts of authors with more followers than this
    /// are pulled at read time instead of pushed (see
    /// [`pull_above`](Self::pull_above)).
    pull: Option<Pull>,
    _p: PhantomData<fn() -> (O, P)>,
}

/// When a timeline pulls: above how many followers, and the relation's
/// names (a reader's set of followed authors, an author's followers).
#[derive(Clone, Copy, Debug)]
struct Pull {
    above: usize,
    following: &'static str,
    followers: &'static str,
}

impl<O, P> Clone for Timeline<O, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O, P> Copy for Timeline<O, P> {}

impl<O, P> std::fmt::Debug for Timeline<O, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pull {
            Some(p) => write!(
                f,
                "Timeline({}, cap {}, pulls authors above {} {})",
                self.name, self.cap, p.above, p.followers
            ),
            None => write!(f, "Timeline({}, cap {})", self.name, self.cap),
        }
    }
}

impl<O: Entity, P> Timeline<O, P> {
    /// A timeline named `name` keeping the newest `cap` entries.
    ///
    /// # Panics
    ///
    /// When `name` is one of `O`'s own keys under its entity key (a
    /// `#[hash]` field, or a column of the `strings` layout), or is empty or
    /// starts with `@` (see [`Relation::many_to_many`](crate::relation::Relation::many_to_many));
    /// defined as a `const`, that is a compile-time error.
    pub const fn new(name: &'static str, cap: usize) -> Self {
        assert!(
            keyspace::free_sub_name(O::DESC, name),
            "a timeline's name is a key its owner type already has under each entity's key \
             (a #[hash] field, or a column of the strings layout), or is empty or starts \
             with `@`: both would be `<entity key>:<name>`; rename the timeline"
        );
        Timeline {
            name,
            cap,
            pull: None,
            _p: PhantomData,
        }
    }

    /// Hybrid fan-out: a post by an author with more than `followers`
    /// followers in `rel` is not pushed onto each follower's list by
    /// `push_related` (a million followers would be a million writes, seconds
    /// of server time other clients wait through): it goes to the author's
    /// own list (`<author key>:<name>@posts`), and a reader's
    /// [`page`](Timelines::page) merges their pushed list with the own
    /// lists of the pulled authors they follow, in push order. The page is
    /// the one a push to everyone would have made, as long as nobody
    /// followed or unfollowed in between (a reader sees a pulled author's
    /// posts from before they followed, and none after they unfollowed).
    /// An author once pulled stays pulled.
    ///
    /// Reading costs more with pulled authors: the reader's list and the
    /// set of pulled authors (`SMEMBERS`) in one round trip, which answers
    /// when the reader follows none; otherwise which of them the reader
    /// follows (`SMISMEMBER`), one `LRANGE` per followed pulled author, all
    /// at once, and the posts' order (`ZMSCORE`): four round trips before the
    /// posts, where a timeline that does not pull reads its list in one.
    ///
    /// ```
    /// use redis_entity::relation::{Relation, Timeline};
    /// # #[derive(redis_entity::RedisEntity)] struct User { #[pk] id: u64, name: String }
    /// # #[derive(redis_entity::RedisEntity)] struct Post { #[pk] id: u64, text: String }
    /// const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
    /// const FEED: Timeline<User, Post> = Timeline::new("feed", 800).pull_above(10_000, &FOLLOWS);
    /// assert_eq!(FEED.pulls_above(), Some(10_000));
    /// ```
    pub const fn pull_above(mut self, followers: usize, rel: &Relation<O, O>) -> Self {
        self.pull = Some(Pull {
            above: followers,
            following: rel.name(),
            followers: rel.reverse(),
        });
        self
    }
}

impl<O, P> Timeline<O, P> {
    /// The timeline's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// How many entries a timeline keeps.
    pub const fn cap(&self) -> usize {
        self.cap
    }

    /// Above how many followers an author's posts are pulled, if the
    /// timeline pulls (see [`Timeline::pull_above`]).
    pub const fn pulls_above(&self) -> Option<usize> {
        match self.pull {
            Some(p) => Some(p.above),
            None => None,
        }
    }

    /// The list of `owner` (`<owner key>:<name>`).
    pub fn key(&self, ns: &Namespace, owner: impl IntoPk<O::Pk>) -> String
    where
        O: Entity,
    {
        let owner = &owner.into_pk();
        keyspace::sub_key(
            &keyspace::entity_key(O::DESC, ns, &O::member(owner)),
            self.name,
        )
    }
}

/// How many owners one pipelined push covers.
pub(crate) const PUSH_BATCH: usize = 250;

/// A timeline that pulls keeps the numbers of its newest `cap` times this
/// many posts: an older post met in a list sorts after every numbered one.
const ORDER_KEPT: usize = 100;

/// The keys a timeline that pulls shares among its owners: its sequence,
/// its posts' numbers, its pulled authors.
fn shared_keys<O: Entity, P>(timeline: &Timeline<O, P>, ns: &Namespace) -> [String; 3] {
    ["seq", "at", "pulled"]
        .map(|part| keyspace::timeline_shared_key(O::DESC, ns, timeline.name(), part))
}

/// `entries` (a reader's list, then the pulled authors' own lists, each
/// newest first) in push order, newest first: by their posts' `numbers`,
/// an entry without one (older than the numbers kept) after the others in
/// the order met; the first `want`.
fn merge_by_number(entries: Vec<String>, numbers: Vec<Option<f64>>, want: usize) -> Vec<String> {
    let mut keyed: Vec<(f64, usize, String)> = entries
        .into_iter()
        .zip(numbers.into_iter().chain(std::iter::repeat(None)))
        .enumerate()
        .map(|(i, (m, n))| (n.unwrap_or(f64::NEG_INFINITY), i, m))
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut seen = std::collections::HashSet::new();
    keyed
        .into_iter()
        .map(|(_, _, m)| m)
        .filter(|m| seen.insert(m.clone()))
        .take(want)
        .collect()
}

/// What a push writes, but for its owners: the timeline's name and cap,
/// its entry in an owner's register, the post, and the owners' presence
/// suffix.
pub(crate) struct PushOf<'a> {
    pub(crate) name: &'a str,
    pub(crate) cap: usize,
    pub(crate) entry: &'a str,
    pub(crate) post_member: &'a str,
    pub(crate) presence_suffix: &'a str,
}

impl PushOf<'_> {
    /// The timeline script's call for `owner_keys` (`check` only checks the
    /// keys' types, `push` checks them, then pushes): per owner that exists,
    /// `LPUSH` + `LTRIM` of the post onto its timeline, and the timeline's
    /// entry in the owner's register (so that deleting the owner deletes its
    /// timeline, and `verify` knows the type of what it lists).
    pub(crate) fn call(&self, check_only: bool, owner_keys: &[String]) -> script::Call<'static> {
        script::args::TimelinePush {
            check_only,
            owner_keys,
            post_member: self.post_member,
            cap: self.cap,
            timeline_name: self.name,
            register_entry: self.entry,
            presence_suffix: self.presence_suffix,
        }
        .call()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Pushes `post` onto the timeline of every owner, newest first, capped:
    /// one atomic script call per 250 owners, one call at a time so that
    /// other clients' calls run in between (on a cluster, per slot among
    /// them, the slots concurrently). Owners that do not exist are skipped;
    /// returns how many timelines got the post. Every owner's list and
    /// register is checked before the first write (with more than 250
    /// owners, in a first round of checking calls), so a key of the wrong type fails the push with
    /// [`Error::WrongType`] naming it and nothing pushed.
    pub(crate) async fn timeline_push<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: impl IntoPk<P::Pk>,
        owners: impl IntoIterator<Item = impl IntoPk<O::Pk>>,
    ) -> Result<usize> {
        let post = &post.into_pk();
        let owners: Vec<O::Pk> = owners.into_iter().map(IntoPk::into_pk).collect();
        if timeline.pull.is_some() {
            self.timeline_order(timeline, &P::member(post), None)
                .await?;
        }
        self.push_onto::<O, P>(timeline.name(), timeline.cap(), post, &owners)
            .await
    }

    /// Pushes `post` onto the lists `name` of `owners` (see
    /// [`Self::timeline_push`]): past one call's owners, every key is
    /// checked in a first pass, so that a key of the wrong type anywhere
    /// writes nothing (each call checks its own keys again before writing).
    async fn push_onto<O: Entity, P: Entity>(
        &self,
        name: &str,
        cap: usize,
        post: &P::Pk,
        owners: &[O::Pk],
    ) -> Result<usize> {
        let passes: &[bool] = if owners.len() > PUSH_BATCH {
            &[true, false]
        } else {
            &[false]
        };
        let mut pushed = 0;
        for &check_only in passes {
            pushed = self
                .push_pass::<O, P>(name, cap, post, owners, check_only)
                .await?;
        }
        Ok(pushed)
    }

    /// One pass of a push to `owners`: calls of [`PUSH_BATCH`] owners that
    /// check their keys and push (or, `check_only`, only check); how many
    /// lists got the post.
    async fn push_pass<O: Entity, P: Entity>(
        &self,
        name: &str,
        cap: usize,
        post: &P::Pk,
        owners: &[O::Pk],
        check_only: bool,
    ) -> Result<usize> {
        self.mark_layout().await?;
        let member = P::member(post);
        let entry = keyspace::timeline_entry(P::DESC, &self.ns);
        let presence = keyspace::presence_suffix(O::DESC);
        let keys: Vec<String> = owners
            .iter()
            .map(|o| keyspace::entity_key(O::DESC, &self.ns, &O::member(o)))
            .collect();
        let push = PushOf {
            name,
            cap,
            entry: &entry,
            post_member: &member,
            presence_suffix: &presence,
        };
        // Each push touches its owner's keys only: the list and the
        // register, under the owner's hash tag.
        let counts = self
            .per_slot(
                &keys,
                |k| k.as_str(),
                |group| {
                    let calls: Vec<script::Call<'_>> = group
                        .chunks(PUSH_BATCH)
                        .map(|chunk| push.call(check_only, chunk))
                        .collect();
                    async move {
                        // One call at a time, not pipelined: Redis runs a
                        // client's pipelined calls back to back, so a
                        // pipeline of the whole fan-out would hold every
                        // other client for all of it.
                        let mut count = 0;
                        for call in &calls {
                            let n: i64 = script::invoke(&mut self.conn.clone(), &self.sent, call)
                                .await
                                .map_err(|e| Error::redis(&group[0], e))?;
                            count += usize::try_from(n).unwrap_or(0);
                        }
                        // The group's count on its first owner: per_slot
                        // hands results back per item.
                        let mut counts = vec![0; group.len()];
                        counts[0] = count;
                        Ok(counts)
                    }
                },
            )
            .await?;
        Ok(counts.iter().sum())
    }

    /// Pushes `post` onto the timelines of everyone related back to `author`
    /// (a new post goes to every follower): the followers read in pages,
    /// one call per 250 of them for the push, one call at a time. Returns how many timelines
    /// got the post (followers that expired are skipped). On a timeline
    /// that pulls, an author with more followers than its bound gets the
    /// post on its own list instead, and the count is of its followers.
    pub(crate) async fn timeline_push_related<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        post: impl IntoPk<P::Pk>,
        rel: &Relation<O, O>,
        author: impl IntoPk<O::Pk>,
    ) -> Result<usize> {
        let post = &post.into_pk();
        let author = &author.into_pk();
        let member = P::member(post);
        let pull = timeline
            .pull
            .filter(|p| p.following == rel.name() && p.followers == rel.reverse());
        if let Some(pull) = pull {
            let key = super::relation::reverse_key(rel, &self.ns, author);
            let followers: u64 = self.read_cmd(redis::cmd("SCARD").arg(&key), &key).await?;
            if followers > pull.above as u64 {
                let own = keyspace::pulled_posts_name(timeline.name());
                self.timeline_order(timeline, &member, Some(&O::member(author)))
                    .await?;
                self.push_onto::<O, P>(&own, timeline.cap(), post, std::slice::from_ref(author))
                    .await?;
                return Ok(usize::try_from(followers).unwrap_or(usize::MAX));
            }
        }
        if timeline.pull.is_some() {
            self.timeline_order(timeline, &member, None).await?;
        }
        // The followers a page at a time (`SSCAN`): the client holds one
        // page, whatever their number. A small set comes whole in the first
        // page and is pushed as `push` would; past one call, a first walk
        // checks every follower's keys and a second pushes (a follower met
        // twice, as `SSCAN` may when the set shrinks meanwhile, gets the post
        // once: a push skips a list the post already heads).
        let key = super::relation::reverse_key(rel, &self.ns, author);
        let first = self.set_page(&key, 0).await?;
        if first.0 == 0 && first.1.len() <= PUSH_BATCH {
            let owners = query::parse_members::<O>(&first.1);
            return self
                .push_onto::<O, P>(timeline.name(), timeline.cap(), post, &owners)
                .await;
        }
        let mut pushed = 0;
        let mut first = Some(first);
        for check_only in [true, false] {
            let (mut next, mut page) = match first.take() {
                Some(first) => first,
                None => self.set_page(&key, 0).await?,
            };
            loop {
                let owners = query::parse_members::<O>(&page);
                let n = self
                    .push_pass::<O, P>(timeline.name(), timeline.cap(), post, &owners, check_only)
                    .await?;
                if !check_only {
                    pushed += n;
                }
                if next == 0 {
                    break;
                }
                (next, page) = self.set_page(&key, next).await?;
            }
        }
        Ok(pushed)
    }

    /// Notes the number of `post_member` on a timeline that pulls, and its
    /// author among the pulled ones when `pulled` (one call, on the keys the
    /// timeline's owners share).
    async fn timeline_order<O: Entity, P>(
        &self,
        timeline: &Timeline<O, P>,
        post_member: &str,
        pulled: Option<&str>,
    ) -> Result<()> {
        let keys = shared_keys(timeline, &self.ns);
        let call = script::args::TimelineOrder {
            keys: [&keys[0], &keys[1], &keys[2]],
            post_member,
            keep: timeline.cap().saturating_mul(ORDER_KEPT),
            pulled_author: pulled,
        }
        .call();
        let _: Value = script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| Error::redis(&keys[1], e))?;
        Ok(())
    }

    /// The members of `owner`'s first `want` entries, newest first, on a
    /// timeline that pulls: its pushed list, read with the set of pulled
    /// authors (one round trip), merged by the posts' numbers with the own
    /// lists of the pulled authors it follows, cut to the cap. `None` on a
    /// timeline that does not pull (a plain read of the list answers).
    async fn merged_entries<O: Entity, P>(
        &self,
        timeline: &Timeline<O, P>,
        owner: &O::Pk,
        want: usize,
    ) -> Result<Option<Vec<String>>> {
        let Some(pull) = timeline.pull else {
            return Ok(None);
        };
        let want = want.min(timeline.cap());
        let keys = shared_keys(timeline, &self.ns);
        let owner_key = keyspace::entity_key(O::DESC, &self.ns, &O::member(owner));
        let list = keyspace::sub_key(&owner_key, timeline.name());
        let range = |key: &str| {
            let mut c = redis::cmd("LRANGE");
            c.arg(key).arg(0).arg(want.saturating_sub(1));
            c
        };
        let (own_range, members) = (range(&list), redis::cmd("SMEMBERS").arg(&keys[2]).clone());
        let (mut entries, pulled): (Vec<String>, Vec<String>) = futures_util::future::try_join(
            self.read_cmd(&own_range, &list),
            self.read_cmd(&members, &keys[2]),
        )
        .await?;
        if pulled.is_empty() {
            return Ok(Some(entries));
        }
        let following = keyspace::sub_key(&owner_key, pull.following);
        let flags: Vec<bool> = self
            .read_cmd(
                redis::cmd("SMISMEMBER").arg(&following).arg(&pulled),
                &following,
            )
            .await?;
        let own = keyspace::pulled_posts_name(timeline.name());
        let lists: Vec<String> = pulled
            .iter()
            .zip(flags)
            .filter(|(_, f)| *f)
            .map(|(a, _)| keyspace::sub_key(&keyspace::entity_key(O::DESC, &self.ns, a), &own))
            .collect();
        if lists.is_empty() {
            return Ok(Some(entries));
        }
        let cmds: Vec<redis::Cmd> = lists.iter().map(|l| range(l)).collect();
        let reads = lists
            .iter()
            .zip(&cmds)
            .map(|(list, cmd)| self.read_cmd::<Vec<String>>(cmd, list));
        entries.extend(
            futures_util::future::try_join_all(reads)
                .await?
                .into_iter()
                .flatten(),
        );
        if entries.is_empty() {
            return Ok(Some(entries));
        }
        let numbers: Vec<Option<f64>> = self
            .read_cmd(redis::cmd("ZMSCORE").arg(&keys[1]).arg(&entries), &keys[1])
            .await?;
        Ok(Some(merge_by_number(entries, numbers, want)))
    }

    /// How many entries `owner`'s timeline holds (`LLEN`, one round trip;
    /// entries of posts deleted since count until `repair` removes them).
    pub(crate) async fn timeline_len<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        owner: impl IntoPk<O::Pk>,
    ) -> Result<u64> {
        let owner = &owner.into_pk();
        if let Some(merged) = self.merged_entries(timeline, owner, timeline.cap()).await? {
            return Ok(merged.len() as u64);
        }
        let key = timeline.key(&self.ns, owner);
        self.read_cmd(redis::cmd("LLEN").arg(&key), &key).await
    }

    /// The pks of a page of `owner`'s timeline, newest first, without the
    /// posts (`LRANGE`, one round trip; posts deleted since included).
    pub(crate) async fn timeline_ids<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        owner: impl IntoPk<O::Pk>,
        offset: usize,
        n: usize,
    ) -> Result<Vec<P::Pk>> {
        let owner = &owner.into_pk();
        if n == 0 {
            return Ok(Vec::new());
        }
        let last = offset.saturating_add(n - 1);
        let want = last.saturating_add(1);
        if let Some(merged) = self.merged_entries(timeline, owner, want).await? {
            let page: Vec<String> = merged.into_iter().skip(offset).take(n).collect();
            return Ok(query::parse_members::<P>(&page));
        }
        let key = timeline.key(&self.ns, owner);
        let members: Vec<String> = self
            .read_cmd(redis::cmd("LRANGE").arg(&key).arg(offset).arg(last), &key)
            .await?;
        Ok(query::parse_members::<P>(&members))
    }

    /// A page of `owner`'s timeline with its posts, newest first: `LRANGE`,
    /// then one pipelined read (two round trips). Posts deleted or expired
    /// since are skipped.
    pub(crate) async fn timeline_page<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
        owner: impl IntoPk<O::Pk>,
        offset: usize,
        n: usize,
    ) -> Result<Vec<P>> {
        let owner = &owner.into_pk();
        let pks = self.timeline_ids(timeline, owner, offset, n).await?;
        Ok(self
            .get_many::<P>(&pks)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }
}

/// The lists of one [`Timeline`] in a store: `store.timeline(&PUSHED)`.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store, relation::{Relation, Timeline}};
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # #[derive(RedisEntity)] struct Post { #[pk] id: u64, text: String }
/// const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
/// const PUSHED: Timeline<User, Post> = Timeline::new("pushed", 1000);
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// // Post 1 by user 9 goes to everyone who follows 9.
/// store.timeline(&PUSHED).push_related(&1, &FOLLOWS, &9).await?;
/// let newest: Vec<Post> = store.timeline(&PUSHED).page(&8, 0, 20).await?;
/// # Ok(()) }
/// ```
pub struct Timelines<'s, O, P, C = ConnectionManager> {
    store: &'s Store<C>,
    timeline: Timeline<O, P>,
}

impl<O, P, C> Clone for Timelines<'_, O, P, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O, P, C> Copy for Timelines<'_, O, P, C> {}

impl<O, P, C> std::fmt::Debug for Timelines<'_, O, P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Timelines({:?})", self.timeline)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The lists of `timeline` in this store: push posts, read pages.
    pub fn timeline<O: Entity, P: Entity>(
        &self,
        timeline: &Timeline<O, P>,
    ) -> Timelines<'_, O, P, C> {
        Timelines {
            store: self,
            timeline: *timeline,
        }
    }
}

impl<O: Entity, P: Entity, C: ConnectionLike + Clone + Send + Sync> Timelines<'_, O, P, C> {
    /// Pushes `post` onto the list of every owner, newest first, capped:
    /// one atomic script call per 250 owners, one call at a time so that
    /// other clients' calls run in between (on a cluster, per slot among
    /// them, the slots concurrently).
    /// An owner that does not exist (never saved, deleted, expired) is
    /// skipped: no list is made for it. Returns how many lists got the post.
    /// Every owner's list and register is checked before the first write,
    /// so a key of the wrong type fails the push with [`Error::WrongType`]
    /// naming it and nothing pushed.
    pub async fn push(
        &self,
        post: impl IntoPk<P::Pk>,
        owners: impl IntoIterator<Item = impl IntoPk<O::Pk>>,
    ) -> Result<usize> {
        self.store.timeline_push(&self.timeline, post, owners).await
    }

    /// Pushes `post` onto the lists of everyone related back to `author`
    /// by `rel` (a new post goes to every follower): one round trip for the
    /// followers, one per 1,000 of them for the push. Returns how many lists
    /// got the post (followers that expired and are not swept yet are
    /// skipped, as by `push`).
    pub async fn push_related(
        &self,
        post: impl IntoPk<P::Pk>,
        rel: &Relation<O, O>,
        author: impl IntoPk<O::Pk>,
    ) -> Result<usize> {
        self.store
            .timeline_push_related(&self.timeline, post, rel, author)
            .await
    }

    /// How many entries `owner`'s list holds (`LLEN`; entries of posts
    /// deleted since count until `repair` removes them).
    pub async fn len(&self, owner: impl IntoPk<O::Pk>) -> Result<u64> {
        self.store.timeline_len(&self.timeline, owner).await
    }

    /// The pks of a page of `owner`'s list, newest first, without the posts
    /// (`LRANGE`, one round trip; posts deleted since included).
    pub async fn ids(
        &self,
        owner: impl IntoPk<O::Pk>,
        offset: usize,
        n: usize,
    ) -> Result<Vec<P::Pk>> {
        self.store
            .timeline_ids(&self.timeline, owner, offset, n)
            .await
    }

    /// A page of `owner`'s list with its posts, newest first: `LRANGE`,
    /// then one pipelined read (two round trips). Posts deleted or expired
    /// since are skipped.
    pub async fn page(&self, owner: impl IntoPk<O::Pk>, offset: usize, n: usize) -> Result<Vec<P>> {
        self.store
            .timeline_page(&self.timeline, owner, offset, n)
            .await
    }

    /// Copies every owner's list into `to` (the last step of a relayout,
    /// after the owners moved; see [`crate::relayout`]).
    pub async fn relayout<D>(
        &self,
        to: &Store<D>,
        count: usize,
    ) -> Result<crate::store::migrate::Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        self.store
            .relayout_timeline(&self.timeline, to, count)
            .await
    }
}
