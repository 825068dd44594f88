//! The arguments of each script, one struct per script (or per mode of a
//! script), with named fields: the one place that knows in which order a
//! script reads its `KEYS` and `ARGV`. Each field's doc names what the Lua
//! reads it as; each struct's `call` encodes it, and the tests below pin
//! every encoding, so that a change of order on one side fails here.
//!
//! Callers compute the keys and values (they know the types and the
//! keyspace); a struct only lays them out.

use super::{
    words::Sink, Call, Script, Words, BOARD, CACHE, CLAIM, FIND_UNIQUE, LAYOUT, MEMORY_POLICY,
    QUERY, RANK, RELATION, RENAME, REPAIR, SCHEMA, TIMELINE, TIMELINE_ORDER, UNLINK,
};
use crate::keyspace::{self, EntityKeys};
use crate::schema::entity::EntityDesc;
use smallvec::SmallVec;

/// `'1'` or `'0'`, as the scripts read a flag.
fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

/// board.lua: a score added on a board bucket, and the bucket's expiry.
#[derive(Debug, Clone)]
pub(crate) struct BoardIncr<'a> {
    /// `KEYS[1]`: the bucket, a sorted set.
    pub bucket: &'a str,
    /// `ARGV[1]`: the delta added (ZINCRBY's increment).
    pub delta: f64,
    /// `ARGV[2]`: the entity's member.
    pub member: &'a str,
    /// `ARGV[3]`: the bucket's expiry, unix ms (PEXPIREAT).
    pub expires_at_ms: u64,
}

impl BoardIncr<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        BOARD
            .call()
            .key(self.bucket)
            .arg(crate::schema::codec::score_text(self.delta))
            .arg(self.member)
            .arg(self.expires_at_ms.to_string())
    }
}

/// layout.lua: a namespace's layout marker, recorded unless the server's
/// memory policy refuses the store's writes.
#[derive(Debug, Clone)]
pub(crate) struct MarkLayout<'a> {
    /// `KEYS[1]`: the marker, a string.
    pub marker: &'a str,
    /// `ARGV[1]`: the store's key layout, as the marker names it.
    pub layout: &'a str,
    /// `ARGV[2]`: the store accepts a policy that evicts any key.
    pub eviction_allowed: bool,
}

impl MarkLayout<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        LAYOUT
            .call()
            .key(self.marker)
            .arg(self.layout)
            .arg(flag(self.eviction_allowed))
    }
}

/// read_memory_policy.lua: the server's `maxmemory-policy`, read.
#[derive(Debug, Clone)]
pub(crate) struct ReadMemoryPolicy<'a> {
    /// `KEYS[1]`: a key on the server to ask (routes the call on a cluster).
    pub on: &'a str,
}

impl ReadMemoryPolicy<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        MEMORY_POLICY.call().key(self.on)
    }
}

/// rename.lua: renamed fields of a page of entities rewritten.
#[derive(Debug, Clone)]
pub(crate) struct RenameFields<'a> {
    /// `KEYS`: the entity hashes.
    pub keys: &'a [String],
    /// `ARGV`: (old name, new name) pairs.
    pub renames: &'a [(String, String)],
}

impl RenameFields<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let mut call = RENAME.call();
        for k in self.keys {
            call = call.key(k);
        }
        for (old, new) in self.renames {
            call = call.arg(old).arg(new);
        }
        call
    }
}

/// What a call of schema.lua does to a type's schema record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaMode<'a> {
    /// Announces the caller's definition (`'use'`, or `'use-evicting'`
    /// from a store that accepts a memory policy evicting any key):
    /// `ARGV[3]` its text, `ARGV[4]` its heartbeat in ms, `ARGV[5..]`
    /// "<field> <kind>" of its indexes.
    Use {
        text: &'a str,
        heartbeat_ms: u64,
        indexes: Vec<String>,
        eviction_allowed: bool,
    },
    /// Makes the caller's definition the current one (`'adopt'`), if the
    /// current one is still `over`; `states`: index fields to set.
    Adopt {
        text: &'a str,
        heartbeat_ms: u64,
        over: &'a str,
        states: Vec<(String, String)>,
    },
    /// Records the walk's progress (`'step'`).
    Step { walk: &'a str },
    /// Ends a walk that started at `started_ms` (`'finish'`), unless one of
    /// `unless_seen` wrote since; then sets `states` ('' deletes).
    Finish {
        started_ms: u64,
        unless_seen: Vec<String>,
        states: Vec<(String, String)>,
    },
}

/// schema.lua: one step on a type's schema record.
#[derive(Debug, Clone)]
pub(crate) struct SchemaStep<'a> {
    /// `KEYS[1]`: the record, a hash.
    pub record: &'a str,
    /// `ARGV[2]`: the caller's fingerprint.
    pub fingerprint: &'a str,
    /// `ARGV[1]` and what follows `ARGV[2]`.
    pub mode: SchemaMode<'a>,
}

impl SchemaStep<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let call = SCHEMA.call().key(self.record);
        let pairs = |mut call: Call<'static>, states: &[(String, String)]| {
            for (f, v) in states {
                call = call.arg(f).arg(v);
            }
            call
        };
        match &self.mode {
            SchemaMode::Use {
                text,
                heartbeat_ms,
                indexes,
                eviction_allowed,
            } => {
                let mut call = call
                    .arg(if *eviction_allowed {
                        "use-evicting"
                    } else {
                        "use"
                    })
                    .arg(self.fingerprint)
                    .arg(text)
                    .arg(heartbeat_ms.to_string());
                for i in indexes {
                    call = call.arg(i);
                }
                call
            }
            SchemaMode::Adopt {
                text,
                heartbeat_ms,
                over,
                states,
            } => pairs(
                call.arg("adopt")
                    .arg(self.fingerprint)
                    .arg(text)
                    .arg(heartbeat_ms.to_string())
                    .arg(over),
                states,
            ),
            SchemaMode::Step { walk } => call.arg("step").arg(self.fingerprint).arg(walk),
            SchemaMode::Finish {
                started_ms,
                unless_seen,
                states,
            } => {
                let mut call = call
                    .arg("finish")
                    .arg(self.fingerprint)
                    .arg(started_ms.to_string())
                    .arg(unless_seen.len().to_string());
                for f in unless_seen {
                    call = call.arg(f);
                }
                pairs(call, states)
            }
        }
    }
}

/// What a call of claim.lua does to the owner key of a unique value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimMode<'a> {
    /// Claims a free value (`'claim'`).
    Claim,
    /// Takes the claim over from `found_owner`, found not to hold the value
    /// (`'takeover'`, `ARGV[3]`: the owner found before).
    Takeover { found_owner: &'a str },
    /// Releases the member's own claim (`'release'`).
    Release,
}

/// claim.lua: the owner key of one unique value on a cluster.
#[derive(Debug, Clone)]
pub(crate) struct Claim<'a> {
    /// `KEYS[1]`: the owner key, a hash (`owner`, `at`).
    pub owner_key: &'a str,
    /// `ARGV[1]` (`mode`), and `ARGV[3]` for a takeover.
    pub mode: ClaimMode<'a>,
    /// `ARGV[2]` (`member`): the member claiming, taking over or releasing.
    pub member: &'a str,
}

impl Claim<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let mode = match self.mode {
            ClaimMode::Claim => "claim",
            ClaimMode::Takeover { .. } => "takeover",
            ClaimMode::Release => "release",
        };
        let call = CLAIM.call().key(self.owner_key).arg(mode).arg(self.member);
        match self.mode {
            ClaimMode::Takeover { found_owner } => call.arg(found_owner),
            _ => call,
        }
    }
}

/// The arguments of find_unique.lua: a unique key and how the type spells
/// an entity key around a member.
pub(crate) struct FindUnique<'a> {
    /// `KEYS[1]`: the unique key.
    pub unique_key: &'a str,
    /// `ARGV[1]`: what every entity key of the type starts with.
    pub head: &'a str,
    /// `ARGV[2]`: what every entity key of the type ends with.
    pub tail: &'a str,
    /// `ARGV[3..]`: the type, whose fields the owner's read asks for
    /// (`keyspace::hash_fields`; none for a type read whole,
    /// `keyspace::reads_by_fields`).
    pub desc: &'a EntityDesc,
}

impl FindUnique<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let call = FIND_UNIQUE
            .call()
            .key(self.unique_key)
            .arg(self.head)
            .arg(self.tail);
        if !keyspace::reads_by_fields(self.desc) {
            return call;
        }
        keyspace::hash_fields(self.desc).fold(call, |call, f| call.arg(f))
    }
}

/// The step of one call of cache.lua (`ARGV[1]`, `mode`) and its arguments.
#[derive(Debug, Clone)]
pub(crate) enum CacheStep<'a> {
    /// `'get'`: a lookup, taking the lock on a miss.
    Get {
        /// `ARGV[2]`: the caller's lock token.
        token: &'a str,
        /// `ARGV[3]`: the lock's expiry when taken, ms.
        lock_ms: u128,
        /// `ARGV[4]`: `'1'` to rebuild stale values (stale-while-revalidate).
        rebuild_stale: bool,
    },
    /// `'put'`: stores a load's result while the lock is still the caller's.
    Put {
        /// `ARGV[2]`: the caller's lock token.
        token: &'a str,
        /// `ARGV[3]`: `'v'` with a value, `'n'` for a cached miss (`None`).
        /// `ARGV[4]`: the value's JSON (`''` for a miss).
        json: Option<&'a [u8]>,
        /// `ARGV[5]`: the soft expiry, ms from now.
        soft_ttl_ms: u128,
        /// `ARGV[6]`: the hard expiry (the key's PX), ms.
        hard_ttl_ms: u128,
    },
    /// `'renew'`: sets the expiry of the caller's lock.
    Renew {
        /// `ARGV[2]`: the caller's lock token.
        token: &'a str,
        /// `ARGV[3]`: the lock's new expiry, ms.
        lock_ms: u128,
    },
    /// `'release'`: releases the caller's lock.
    Release {
        /// `ARGV[2]`: the caller's lock token.
        token: &'a str,
    },
}

/// cache.lua: one step of the read-through cache on one entry.
#[derive(Debug, Clone)]
pub(crate) struct CacheCall<'a> {
    /// `KEYS[1]`: the cached value (`'n'`, or `'v<soft expiry ms>:<json>'`).
    pub value_key: &'a str,
    /// `KEYS[2]`: the rebuild lock, holding the loading caller's token.
    pub lock_key: &'a str,
    /// `ARGV[1..]`: the step.
    pub step: CacheStep<'a>,
}

impl CacheCall<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let call = CACHE.call().key(self.value_key).key(self.lock_key);
        match &self.step {
            CacheStep::Get {
                token,
                lock_ms,
                rebuild_stale,
            } => call
                .arg("get")
                .arg(token)
                .arg(lock_ms.to_string())
                .arg(flag(*rebuild_stale)),
            CacheStep::Put {
                token,
                json,
                soft_ttl_ms,
                hard_ttl_ms,
            } => call
                .arg("put")
                .arg(token)
                .arg(if json.is_some() { "v" } else { "n" })
                .arg(json.unwrap_or_default())
                .arg(soft_ttl_ms.to_string())
                .arg(hard_ttl_ms.to_string()),
            CacheStep::Renew { token, lock_ms } => {
                call.arg("renew").arg(token).arg(lock_ms.to_string())
            }
            CacheStep::Release { token } => call.arg("release").arg(token),
        }
    }
}

/// One side of a relation, as relation.lua's `relate` and `unrelate` read
/// it: the side of `a` (the owner) or of `b`.
#[derive(Debug, Clone)]
pub(crate) struct RelationSide {
    /// `KEYS[1]` / `KEYS[2]`: the side's relation set (`a`'s forward set,
    /// `b`'s reverse set).
    pub set: String,
    /// `KEYS[3]` / `KEYS[4]`: the side's relation register.
    pub register: String,
    /// `ARGV[2]` / `ARGV[3]` (`a`, `b`): the side's member.
    pub member: String,
    /// `ARGV[4]` / `ARGV[5]` (`name`, `reverse`): the set's name, the field
    /// of its register.
    pub set_name: String,
    /// `ARGV[6]` / `ARGV[7]`: the side's register entry (how the other side
    /// finds this side's sets).
    pub register_entry: String,
    /// `ARGV[11]` / `ARGV[13]`: the key whose existence means the side's
    /// entity exists.
    pub entity_key: String,
    /// `ARGV[12]` / `ARGV[14]`: the expiry set of the side's type.
    pub expiry_set: String,
}

/// relation.lua, modes `relate` and `unrelate`: both sides in one call.
#[derive(Debug, Clone)]
pub(crate) struct Relate {
    /// `ARGV[1]`: `'relate'` (true) or `'unrelate'`.
    pub relate: bool,
    /// The owner's side.
    pub a: RelationSide,
    /// The other side.
    pub b: RelationSide,
    /// `ARGV[8]`: `'1'` for one-to-many (`b` has at most one `a`).
    pub one_to_many: bool,
    /// `ARGV[9]`: the owner head of `a`'s type (before a previous owner's
    /// member in its key).
    pub a_owner_head: String,
    /// `ARGV[10]`: the owner tail of `a`'s type (after it).
    pub a_owner_tail: String,
}

impl Relate {
    pub(crate) fn call(&self) -> Call<'static> {
        let (a, b) = (&self.a, &self.b);
        RELATION
            .call()
            .key(&a.set)
            .key(&b.set)
            .key(&a.register)
            .key(&b.register)
            .arg(if self.relate { "relate" } else { "unrelate" })
            .arg(&a.member)
            .arg(&b.member)
            .arg(&a.set_name)
            .arg(&b.set_name)
            .arg(&a.register_entry)
            .arg(&b.register_entry)
            .arg(flag(self.one_to_many))
            .arg(&self.a_owner_head)
            .arg(&self.a_owner_tail)
            .arg(&a.entity_key)
            .arg(&a.expiry_set)
            .arg(&b.entity_key)
            .arg(&b.expiry_set)
    }
}

/// relation.lua, mode `add`: one side of a relation whose sides are in two
/// slots of a cluster.
#[derive(Debug, Clone)]
pub(crate) struct RelationAdd<'a> {
    /// The side's entity key: `KEYS[1]` is its set `set_name` under it,
    /// `KEYS[2]` its relation register.
    pub entity: &'a str,
    /// `ARGV[2]` (`other`): the member added to the set.
    pub other: &'a str,
    /// `ARGV[3]` (`name`): the set's name, the field of the register.
    pub set_name: &'a str,
    /// `ARGV[4]` (`entry`): the set's register entry.
    pub register_entry: &'a str,
    /// `ARGV[5]` (`take`): `'1'` to take the set over (the other members
    /// leave it and are returned).
    pub take_over: bool,
    /// `ARGV[6]` (`key`): the key whose existence means the side's entity
    /// exists.
    pub entity_key: &'a str,
    /// `ARGV[7]` (`expiry`): its type's expiry set, `''` when in another slot.
    pub expiry_set: &'a str,
    /// `ARGV[8]` (`own`): the side's own member.
    pub own_member: &'a str,
}

impl RelationAdd<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        side_call(self.entity, self.set_name, "add")
            .arg(self.other)
            .arg(self.set_name)
            .arg(self.register_entry)
            .arg(flag(self.take_over))
            .arg(self.entity_key)
            .arg(self.expiry_set)
            .arg(self.own_member)
    }
}

/// A relation.lua call on one side of a relation in `mode`: `KEYS[1]` the
/// side's set `set_name` under `entity`, `KEYS[2]` its register, `ARGV[1]`
/// the mode (shared by `add` and `drop`, which the rest of ARGV tells apart).
fn side_call(entity: &str, set_name: &str, mode: &str) -> Call<'static> {
    RELATION
        .call()
        .key(keyspace::sub_key(entity, set_name))
        .key(keyspace::relation_register(entity))
        .arg(mode)
}

/// relation.lua, mode `drop`: one member out of one side's set.
#[derive(Debug, Clone)]
pub(crate) struct RelationDrop<'a> {
    /// The side's entity key: `KEYS[1]` is its set `set_name` under it,
    /// `KEYS[2]` its relation register.
    pub entity: &'a str,
    /// `ARGV[2]`: the member removed.
    pub member: &'a str,
    /// `ARGV[3]`: the set's name, the field of the register.
    pub set_name: &'a str,
}

impl RelationDrop<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        side_call(self.entity, self.set_name, "drop")
            .arg(self.member)
            .arg(self.set_name)
    }
}

/// unlink.lua: one page of a deleted entity's renamed relation set taken
/// out of the other sides.
#[derive(Debug, Clone)]
pub(crate) struct UnlinkPage<'a> {
    /// `KEYS[1]`: the renamed set (`<relation set>:@unlinking`).
    pub renamed: &'a str,
    /// `ARGV[1]`: the deleted entity's member.
    pub member: &'a str,
    /// `ARGV[2]`: the set's register entry (how to find the other side).
    pub entry: &'a str,
    /// `ARGV[3]`: how many members the page takes.
    pub count: usize,
}

impl UnlinkPage<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        UNLINK
            .call()
            .key(self.renamed)
            .arg(self.member)
            .arg(self.entry)
            .arg(self.count.to_string())
            .arg(keyspace::RELATION_REGISTER_SUFFIX)
    }
}

/// timeline_order.lua: a post's number on a timeline that pulls.
#[derive(Debug, Clone)]
pub(crate) struct TimelineOrder<'a> {
    /// `KEYS[1..3]`: the sequence, the posts' numbers, the pulled authors.
    pub keys: [&'a str; 3],
    /// `ARGV[1]`: the post's member.
    pub post_member: &'a str,
    /// `ARGV[2]`: how many numbers are kept.
    pub keep: usize,
    /// `ARGV[3]`: the author when its posts are pulled.
    pub pulled_author: Option<&'a str>,
}

impl TimelineOrder<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let [seq, numbers, pulled] = self.keys;
        TIMELINE_ORDER
            .call()
            .key(seq)
            .key(numbers)
            .key(pulled)
            .arg(self.post_member)
            .arg(self.keep.to_string())
            .arg(self.pulled_author.unwrap_or(""))
    }
}

/// timeline.lua: a post pushed onto the timelines of many owners.
#[derive(Debug, Clone)]
pub(crate) struct TimelinePush<'a> {
    /// `ARGV[1]`: `'check'` (only check the keys' types) or `'push'`.
    pub check_only: bool,
    /// The owners' entity keys: `KEYS` holds per owner its timeline (the
    /// list `timeline_name` under it), then its relation register.
    pub owner_keys: &'a [String],
    /// `ARGV[2]`: the post's member.
    pub post_member: &'a str,
    /// How many entries a timeline keeps; `ARGV[3]` is the last position
    /// kept (`cap - 1`, LTRIM's stop).
    pub cap: usize,
    /// `ARGV[4]`: the timeline's name, the field of the register.
    pub timeline_name: &'a str,
    /// `ARGV[5]`: the timeline's register entry.
    pub register_entry: &'a str,
    /// `ARGV[6]`: what follows an owner's entity key in the key whose
    /// existence means the owner exists (`keyspace::presence_suffix`):
    /// owners that do not exist are skipped.
    pub presence_suffix: &'a str,
}

impl TimelinePush<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        let mut call = TIMELINE.call();
        for owner in self.owner_keys {
            call = call
                .key(keyspace::sub_key(owner, self.timeline_name))
                .key(keyspace::relation_register(owner));
        }
        call.arg(if self.check_only { "check" } else { "push" })
            .arg(self.post_member)
            .arg(self.cap.saturating_sub(1).to_string())
            .arg(self.timeline_name)
            .arg(self.register_entry)
            .arg(self.presence_suffix)
    }
}

/// The keys and the liveness test rank.lua reads in both of its modes.
#[derive(Debug, Clone)]
pub(crate) struct RankIndex {
    /// `KEYS[1]`: the sorted index.
    pub sorted_index: String,
    /// `KEYS[2]`: the expiry set of the type.
    pub expiry_set: String,
    /// `head`: the owner head (before a member in its entity keys).
    pub owner_head: String,
    /// The last `ARGV`s: the presence suffixes (a member is live when one of
    /// `head .. member .. suffix` exists).
    pub presence_suffixes: Vec<String>,
}

impl RankIndex {
    fn call(&self, mode_args: &[&str]) -> Call<'static> {
        let mut call = RANK.call().key(&self.sorted_index).key(&self.expiry_set);
        for a in mode_args {
            call = call.arg(a);
        }
        for s in &self.presence_suffixes {
            call = call.arg(s);
        }
        call
    }
}

/// rank.lua: the rank of `member` among the live members.
#[derive(Debug, Clone)]
pub(crate) struct Rank<'a> {
    /// `KEYS`, `ARGV[2]` (the owner head) and `ARGV[3..]` (the suffixes).
    pub index: RankIndex,
    /// `ARGV[1]`: the member.
    pub member: &'a str,
}

impl Rank<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        self.index.call(&[self.member, &self.index.owner_head])
    }
}

/// rank.lua, mode `@ahead`: how many live members of one shard rank ahead
/// of a member of another.
#[derive(Debug, Clone)]
pub(crate) struct RankAhead<'a> {
    /// `KEYS`, `ARGV[2]` (the owner head) and `ARGV[5..]` (the suffixes).
    pub index: RankIndex,
    /// `ARGV[3]`: the member of the other shard.
    pub member: &'a str,
    /// `ARGV[4]`: its score, as Redis writes it.
    pub score: &'a str,
}

impl RankAhead<'_> {
    pub(crate) fn call(&self) -> Call<'static> {
        self.index
            .call(&["@ahead", &self.index.owner_head, self.member, self.score])
    }
}

/// The source of one group of query.lua's conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuerySource {
    /// `'s'`: sets of members, one key per part.
    Sets,
    /// `'z'`: lexicographic ranges of a prefix index's sorted set (entries
    /// `escaped value:member`), a key and a range per part.
    Lex,
    /// `'r'`: score ranges of a sorted index, a key and a range per part.
    Scores,
}

/// One part of a query group: a key, and for ranges its min and max
/// (ZRANGEBYLEX / ZRANGEBYSCORE syntax).
#[derive(Debug, Clone)]
pub(crate) struct QueryPart {
    /// The next `KEYS` entry.
    pub key: Vec<u8>,
    /// For `Lex` and `Scores`: the part's min and max, in `ARGV`.
    pub range: Option<(Vec<u8>, Vec<u8>)>,
}

/// One group of conditions of query.lua: `ARGV` op, source, part count,
/// then the parts' ranges; `KEYS` the parts' keys.
#[derive(Debug, Clone)]
pub(crate) struct QueryGroup {
    /// The operation: `all`, `any` or `none`.
    pub op: &'static str,
    /// Where its members come from.
    pub source: QuerySource,
    /// Its parts, in order.
    pub parts: Vec<QueryPart>,
}

/// How query.lua sorts and cuts the page (the sort mode `ARGV`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuerySort {
    /// `'o'`: by the order's sorted index.
    Ordered,
    /// `'-'`: unsorted (the caller sorts a whole result itself).
    Unsorted,
    /// `'n'`: numerically by member.
    Numeric,
    /// `'s'`: by member text.
    Text,
}

/// query.lua: the members matching a query, one call, nothing written.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    /// `ARGV[1]` the group count, then each group.
    pub groups: Vec<QueryGroup>,
    /// The last `KEYS` entry: the set of all members of the type (the
    /// universe of a query with only `none` conditions).
    pub ids_set: String,
    /// The sort mode.
    pub sort: QuerySort,
    /// The page's offset.
    pub offset: usize,
    /// The page's size (-1: no limit; 0: only count).
    pub limit: i64,
    /// The expiry set of the type.
    pub expiry_set: String,
    /// The owner head (before a member in its entity keys).
    pub owner_head: String,
    /// After their count: the presence suffixes.
    pub presence_suffixes: Vec<String>,
    /// The order's sorted index and `true` for descending (`desc`), or
    /// none (`''`, `''`).
    pub order: Option<(String, bool)>,
    /// `'1'` to return each page member's score.
    pub with_scores: bool,
    /// The most members one call reads in a page (0: no bound).
    pub per_call: usize,
    /// The estimate of a whole answer's work above which it is paged.
    pub whole: usize,
    /// The cursor of the next page ('' for the first call).
    pub cursor: String,
}

impl Query {
    pub(crate) fn call(&self) -> Call<'static> {
        let mut call = QUERY.call().arg(self.groups.len().to_string());
        for g in &self.groups {
            let source = match g.source {
                QuerySource::Sets => "s",
                QuerySource::Lex => "z",
                QuerySource::Scores => "r",
            };
            call = call.arg(g.op).arg(source).arg(g.parts.len().to_string());
            for p in &g.parts {
                call = call.key(&p.key);
                if let Some((min, max)) = &p.range {
                    call = call.arg(min).arg(max);
                }
            }
        }
        let sort = match self.sort {
            QuerySort::Ordered => "o",
            QuerySort::Unsorted => "-",
            QuerySort::Numeric => "n",
            QuerySort::Text => "s",
        };
        call = call
            .key(&self.ids_set)
            .arg(sort)
            .arg(self.offset.to_string())
            .arg(self.limit.to_string())
            .arg(&self.expiry_set)
            .arg(&self.owner_head)
            .arg(self.presence_suffixes.len().to_string());
        for s in &self.presence_suffixes {
            call = call.arg(s);
        }
        let (order, direction) = match &self.order {
            Some((zset, true)) => (zset.as_str(), "desc"),
            Some((zset, false)) => (zset.as_str(), "asc"),
            None => ("", ""),
        };
        call.arg(order)
            .arg(direction)
            .arg(flag(self.with_scores))
            .arg(self.per_call.to_string())
            .arg(self.whole.to_string())
            .arg(&self.cursor)
    }
}

/// repair.lua: what a gone entity left, removed while it is still gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Repair {
    /// `'member'`: its member out of a relation set or timeline.
    Member {
        /// `KEYS[1]`: the key whose existence means the entity exists.
        entity_key: String,
        /// `KEYS[2]`: the set or list listing it.
        listing: String,
        /// `KEYS[3]`: the register of the listing's owner.
        register: String,
        /// `ARGV[2]`: the member.
        member: String,
        /// `ARGV[3]`: the listing's name in the register.
        listing_name: String,
    },
    /// `'gone'`: as `Member` for an entity in another slot, whose absence
    /// the client checked just before (no entity key).
    Gone {
        /// `KEYS[1]`: the set or list listing it.
        listing: String,
        /// `KEYS[2]`: the register of the listing's owner.
        register: String,
        /// `ARGV[2]`: the member.
        member: String,
        /// `ARGV[3]`: the listing's name in the register.
        listing_name: String,
    },
    /// `'key'`: one of its own keys left behind.
    Key {
        /// `KEYS[1]`: the key whose existence means the entity exists.
        entity_key: String,
        /// `KEYS[2]`: the key removed.
        leftover: String,
    },
}

impl Repair {
    pub(crate) fn call(&self) -> Call<'static> {
        match self {
            Repair::Member {
                entity_key,
                listing,
                register,
                member,
                listing_name,
            } => REPAIR
                .call()
                .key(entity_key)
                .key(listing)
                .key(register)
                .arg("member")
                .arg(member)
                .arg(listing_name),
            Repair::Gone {
                listing,
                register,
                member,
                listing_name,
            } => REPAIR
                .call()
                .key(listing)
                .key(register)
                .arg("gone")
                .arg(member)
                .arg(listing_name),
            Repair::Key {
                entity_key,
                leftover,
            } => REPAIR.call().key(entity_key).key(leftover).arg("key"),
        }
    }

    /// The key the removal is about: the set or list, or the leftover key.
    pub(crate) fn subject(&self) -> &str {
        match self {
            Repair::Member { listing, .. } | Repair::Gone { listing, .. } => listing,
            Repair::Key { leftover, .. } => leftover,
        }
    }
}

/// The entity's TTL after a write: write_prelude.lua's `ttl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteTtl {
    /// `-1`: the remaining TTL stays.
    Keep,
    /// `0`: the TTL is removed.
    Remove,
    /// That many ms (at least 1: 0 would mean none).
    Set(u64),
}

/// The value a write gives one indexed field, as write_prelude.lua's
/// `begin` reads it (the first letter is the mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexArg<'a> {
    /// `''`: not known; the script reads it after the write (an increment).
    Unknown,
    /// `'u'`: the write does not touch the field.
    Unchanged,
    /// `'n'`: no value; `'m'` with `keep_unique` (refused if the stored
    /// unique value would change).
    Absent { keep_unique: bool },
    /// `'v'` then the stored form (or the escaped value of an indexed pk
    /// field); `'w'` with `keep_unique`.
    Value { stored: &'a [u8], keep_unique: bool },
}

impl IndexArg<'_> {
    fn push(&self, args: &mut impl Sink) {
        match *self {
            IndexArg::Unknown => args.word(b""),
            IndexArg::Unchanged => args.word(b"u"),
            IndexArg::Absent { keep_unique } => args.word(if keep_unique { b"m" } else { b"n" }),
            IndexArg::Value {
                stored,
                keep_unique,
            } => args.word_of(&[if keep_unique { b"w" } else { b"v" }, stored]),
        }
    }
}

/// One condition on a stored value, as write_prelude.lua's `begin` reads
/// it (`w.conds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConditionArg<'a> {
    /// The 0-based position of the key holding the value (sent 1-based).
    pub key: usize,
    /// The hash field holding it (`''`: the key is the value's own).
    pub field: &'a str,
    /// The test: `eq`, `ne`, `ge`, `le`, `gt`, `lt`.
    pub test: &'static str,
    /// `eq`/`ne`: the stored form (`None`: nothing stored), sent as `'v'`
    /// then the bytes, or `'n'`; the comparisons: the bound.
    pub operand: Option<&'a [u8]>,
    /// A bounded increment's delta, added to the stored value (nothing
    /// stored: 0) before the comparison.
    pub delta: Option<&'a [u8]>,
}

impl ConditionArg<'_> {
    fn push(&self, args: &mut Words) {
        args.push_number(self.key + 1);
        args.push(self.field);
        args.push(self.test);
        let equality = self.test == "eq" || self.test == "ne";
        match (equality, self.operand) {
            (true, Some(v)) => args.push_concat(&[b"v", v]),
            (true, None) => args.push(b"n"),
            (false, v) => args.push(v.unwrap_or_default()),
        }
        args.push(self.delta.unwrap_or_default());
    }
}

/// An argument of a data command: a column's name is borrowed from the
/// type's description, a value owned (a save copies no name per entity).
pub(crate) type CommandArg = std::borrow::Cow<'static, [u8]>;

/// One data command a write function runs on one of the entity's keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteCommand<'a> {
    /// Its name (`HSET`, `SET`, `HREPLACE`, `INCRBY`, ...).
    pub name: &'static str,
    /// The key's 0-based position in the entity's keys (sent 1-based).
    pub key: usize,
    /// Its arguments after the key (sent after their count).
    pub args: &'a [CommandArg],
}

/// One entity's part of a call of a write function (write_prelude.lua's
/// `begin`, then the operation's own arguments).
#[derive(Debug, Clone)]
pub(crate) struct Write<'a> {
    /// `KEYS`: the entity's keys, in the order of the type header's roles.
    pub keys: &'a EntityKeys,
    /// Argument 1: the request token (`''` for none, see `once`).
    pub token: &'a str,
    /// Argument 2 (`NS`): the namespace.
    pub namespace: &'a str,
    /// Argument 3 (`member`): the entity's member.
    pub member: &'a str,
    /// Argument 4 (`ttl`).
    pub ttl: WriteTtl,
    /// Argument 5 (`cas`): the compare-and-set document (`''` for none).
    pub cas: &'a [u8],
    /// Argument 6 (`version_expected`): `''` for no check.
    pub version_expected: &'a str,
    /// Then the count of conditions, and five arguments per condition.
    pub conditions: Vec<ConditionArg<'a>>,
    /// Then one value per index of `T.idx`.
    pub index_values: Vec<IndexArg<'a>>,
    /// Then per data command: its name, its 1-based key position, its
    /// argument count, its arguments.
    pub commands: Vec<WriteCommand<'a>>,
    /// Then clean's (1-based index, escaped value) pairs of stale entries
    /// (given here 0-based).
    pub stale: &'a [(usize, Vec<u8>)],
}

impl Write<'_> {
    /// The entity's arguments, in the order write_prelude.lua reads them.
    #[cfg(test)]
    pub(crate) fn args(&self) -> Words {
        let mut args = Words::new();
        self.push_args(&mut args);
        args
    }

    /// `KEYS`: the entity's keys, in the order of the type header's roles.
    pub(crate) fn key_args(&self) -> Words {
        let mut keys = Words::new();
        self.push_keys(&mut keys);
        keys
    }

    /// The call of `function` (the type's write function of one entity)
    /// for this write.
    pub(crate) fn call(&self, function: &'static Script) -> Call<'static> {
        let mut call = function.call();
        self.push_keys(&mut call.keys);
        self.push_args(&mut call.args);
        call
    }
}

impl EntityPart for Write<'_> {
    fn push_keys(&self, keys: &mut Words) {
        for k in self.keys.all() {
            keys.push(k);
        }
    }

    fn push_args(&self, args: &mut Words) {
        args.push(self.token);
        args.push(self.namespace);
        args.push(self.member);
        match self.ttl {
            WriteTtl::Set(ms) => args.push(ms.to_string()),
            WriteTtl::Remove => args.push(b"0"),
            WriteTtl::Keep => args.push(b"-1"),
        }
        args.push(self.cas);
        args.push(self.version_expected);
        args.push_number(self.conditions.len());
        for c in &self.conditions {
            c.push(args);
        }
        for v in &self.index_values {
            v.push(args);
        }
        push_commands(args, &self.commands);
        for (i, v) in self.stale {
            args.push_number(i + 1);
            args.push(v);
        }
    }
}

/// Per data command: its name, its 1-based key position, its argument
/// count, its arguments.
fn push_commands(args: &mut impl Sink, commands: &[WriteCommand<'_>]) {
    for c in commands {
        args.word(c.name.as_bytes());
        args.word(itoa::Buffer::new().format(c.key + 1).as_bytes());
        args.word(itoa::Buffer::new().format(c.args.len()).as_bytes());
        for a in c.args {
            args.word(a);
        }
    }
}

/// The call of a type's straight-line function (script/fast.rs) for one
/// write: the entity's keys without its index shadow; the namespace, the
/// member, the values of the indexes the call sends, one operation code per
/// column, the value or delta of each column set or incremented (in column
/// order), then the data commands of the `#[hash]` maps.
#[derive(Debug, Clone)]
pub(crate) struct FastWrite<'a> {
    /// The entity's keys (the shadow, always last, is left out).
    pub keys: &'a EntityKeys,
    /// The namespace.
    pub namespace: &'a str,
    /// The entity's member.
    pub member: &'a str,
    /// The value of each index `fast::sends_value` names, in index order.
    pub sent: SmallVec<[IndexArg<'a>; 4]>,
    /// One `fast::OP_*` code per column.
    pub ops: SmallVec<[u8; 16]>,
    /// Per column, in column order: the value (set) or delta (increments),
    /// if it has one (only those are sent).
    pub values: SmallVec<[Option<&'a [u8]>; 16]>,
    /// The data commands of the maps.
    pub tail: Vec<WriteCommand<'a>>,
}

impl FastWrite<'_> {
    /// `KEYS` and `ARGV`, as an operation of a unit of work takes them.
    pub(crate) fn parts(&self) -> (Words, Words) {
        let (mut keys, mut args) = (Words::new(), Words::new());
        self.push_keys(&mut keys);
        self.push_args(&mut args);
        (keys, args)
    }

    /// The call of `function` (the type's straight-line function), as
    /// `explain` shows it and the paths that send it with other commands
    /// (the near cache's write-through, a write with claims) take it; a
    /// single write alone sends [`Self::command`].
    pub(crate) fn call(&self, function: &'static Script) -> Call<'static> {
        let mut call = function.call();
        self.push_keys(&mut call.keys);
        self.push_args(&mut call.args);
        call
    }

    /// The call of `function` built as the command it sends, in one pass:
    /// a single write's words go straight into the command, not into a
    /// call's buffers first (which cost about 1,000 client instructions per
    /// write more: benches/NOTES.md).
    pub(crate) fn command(&self, function: &'static Script) -> redis::Cmd {
        let keys = self.key_count();
        let key_bytes: usize = self.keys.read_keys().map(str::len).sum();
        let value_bytes: usize = self.values.iter().flatten().map(|v| v.len()).sum();
        let words = keys + 2 + self.sent.len() + self.values.len() + 4 * self.tail.len();
        let bytes = key_bytes
            + self.namespace.len()
            + self.member.len()
            + self.ops.len()
            + value_bytes
            + 24 * (self.sent.len() + self.tail.len());
        match function.fcall(keys, words, bytes) {
            Some(mut cmd) => {
                self.keys_to(&mut cmd);
                self.args_to(&mut cmd);
                cmd
            }
            // (A write function is a function: not reached.)
            None => self.call(function).command(true),
        }
    }

    /// The entity's keys the call sends: all but the index shadow.
    fn key_count(&self) -> usize {
        self.keys.all().count() - usize::from(self.keys.shadow.is_some())
    }

    fn keys_to(&self, keys: &mut impl Sink) {
        for k in self.keys.all().take(self.key_count()) {
            keys.word(k.as_bytes());
        }
    }

    fn args_to(&self, args: &mut impl Sink) {
        args.word(self.member.as_bytes());
        for v in &self.sent {
            v.push(args);
        }
        // The namespace rides in the operations' word (script/fast.rs).
        args.word_of(&[&self.ops, self.namespace.as_bytes()]);
        for v in self.values.iter().flatten() {
            args.word(v);
        }
        push_commands(args, &self.tail);
    }
}

impl EntityPart for FastWrite<'_> {
    fn push_keys(&self, keys: &mut Words) {
        self.keys_to(keys);
    }

    fn push_args(&self, args: &mut Words) {
        self.args_to(args);
    }
}

/// One entity's keys and arguments, as a call of its type's write function
/// takes them (alone, or as a part of a batch or a unit of work).
pub(crate) trait EntityPart {
    /// Adds its keys.
    fn push_keys(&self, keys: &mut Words);
    /// Adds its arguments.
    fn push_args(&self, args: &mut Words);
}

impl<P: EntityPart> EntityPart for &P {
    fn push_keys(&self, keys: &mut Words) {
        (**self).push_keys(keys);
    }

    fn push_args(&self, args: &mut Words) {
        (**self).push_args(args);
    }
}

/// One call of a batch write function (batch.lua) writing one entity per
/// (keys, arguments) part: `KEYS` holds each entity's keys in turn; `ARGV`,
/// per entity, its key count, its argument count and its arguments.
pub(crate) fn write_batch(
    function: &'static Script,
    parts: impl IntoIterator<Item = impl EntityPart>,
) -> Call<'static> {
    let mut call = function.call();
    // Each part's arguments follow their count: they are laid out here
    // first (one buffer for the whole batch), then copied after it.
    let mut part_args = Words::new();
    for part in parts {
        let keys_before = call.keys.len();
        part.push_keys(&mut call.keys);
        part_args.clear();
        part.push_args(&mut part_args);
        call.args.push_number(call.keys.len() - keys_before);
        call.args.push_number(part_args.len());
        call.args.extend_from(&part_args);
    }
    call
}

/// One operation of a unit of work (lua/unit.lua): its kind (`save`,
/// `insert`, `update`, `delete`, `relate`, `unrelate`, `push`, `board`),
/// its type's number in the unit library (0 for none), and its keys and
/// arguments as the single operation's call has them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnitOp<'a> {
    pub kind: &'static str,
    pub type_number: usize,
    pub keys: &'a Words,
    pub args: &'a Words,
}

/// The byte naming each kind of unit operation in the unit call's header
/// (lua/unit.lua `KINDS`, and `FAST_MODE` for the straight-line kinds).
const UNIT_KINDS: [(&str, u8); 11] = [
    ("save", b's'),
    ("insert", b'i'),
    ("update", b'u'),
    ("delete", b'd'),
    ("relate", b'r'),
    ("unrelate", b'n'),
    ("push", b'p'),
    ("board", b'b'),
    ("fast_save", b'S'),
    ("fast_insert", b'I'),
    ("fast_update", b'U'),
];

/// The largest type number, and key or argument count, the header holds.
pub(crate) const UNIT_MAX_TYPES: usize = 0xFFFF;
pub(crate) const UNIT_MAX_COUNT: usize = 0xFF_FFFF;

/// The call of a unit library's function: `KEYS` holds each operation's
/// keys in turn; `ARGV[1]` is the header, 9 bytes per operation (its kind's
/// byte, its type number in 2 bytes, its key count and argument count in 3
/// bytes each, big-endian: one argument read with one `string.byte` per
/// operation, where four arguments each would cost their conversion and a
/// `tonumber`), then each operation's arguments in turn. The caller keeps
/// the counts within [`UNIT_MAX_TYPES`] and [`UNIT_MAX_COUNT`].
pub(crate) fn unit_call(function: &'static Script, ops: &[UnitOp<'_>]) -> Call<'static> {
    let mut call = function.call();
    let mut header = Vec::with_capacity(9 * ops.len());
    for op in ops {
        let code = UNIT_KINDS
            .iter()
            .find(|(k, _)| *k == op.kind)
            .map_or(b'?', |(_, c)| *c);
        header.push(code);
        header.extend_from_slice(&(op.type_number as u16).to_be_bytes());
        header.extend_from_slice(&(op.keys.len() as u32).to_be_bytes()[1..]);
        header.extend_from_slice(&(op.args.len() as u32).to_be_bytes()[1..]);
    }
    call.args.push(header);
    for op in ops {
        call.keys.extend_from(op.keys);
        call.args.extend_from(op.args);
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's `KEYS` and `ARGV`, as text.
    fn encoded(call: &Call<'_>) -> (Vec<String>, Vec<String>) {
        let text = |v: &Words| {
            v.iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect()
        };
        (text(&call.keys), text(&call.args))
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[track_caller]
    fn assert_encoding(call: Call<'_>, keys: &[&str], args: &[&str]) {
        assert_eq!(encoded(&call), (strings(keys), strings(args)));
    }

    #[test]
    fn board_incr_is_bucket_then_delta_member_expiry() {
        let call = BoardIncr {
            bucket: "b:1",
            delta: 2.5,
            member: "9",
            expires_at_ms: 1700,
        }
        .call();
        assert_encoding(call, &["b:1"], &["2.5", "9", "1700"]);
    }

    #[test]
    fn claim_modes_are_mode_member_and_the_found_owner_on_takeover() {
        let claim = |mode| Claim {
            owner_key: "o",
            mode,
            member: "7",
        };
        assert_encoding(claim(ClaimMode::Claim).call(), &["o"], &["claim", "7"]);
        assert_encoding(claim(ClaimMode::Release).call(), &["o"], &["release", "7"]);
        let takeover = ClaimMode::Takeover { found_owner: "3" };
        assert_encoding(claim(takeover).call(), &["o"], &["takeover", "7", "3"]);
    }

    #[test]
    fn cache_steps_are_mode_token_then_their_arguments() {
        let cache = |step| CacheCall {
            value_key: "v",
            lock_key: "l",
            step,
        };
        let keys = &["v", "l"];
        let get = CacheStep::Get {
            token: "t",
            lock_ms: 50,
            rebuild_stale: true,
        };
        assert_encoding(cache(get).call(), keys, &["get", "t", "50", "1"]);
        let put = CacheStep::Put {
            token: "t",
            json: Some(b"{}"),
            soft_ttl_ms: 10,
            hard_ttl_ms: 20,
        };
        assert_encoding(
            cache(put).call(),
            keys,
            &["put", "t", "v", "{}", "10", "20"],
        );
        let miss = CacheStep::Put {
            token: "t",
            json: None,
            soft_ttl_ms: 5,
            hard_ttl_ms: 5,
        };
        assert_encoding(cache(miss).call(), keys, &["put", "t", "n", "", "5", "5"]);
        let renew = CacheStep::Renew {
            token: "t",
            lock_ms: 7,
        };
        assert_encoding(cache(renew).call(), keys, &["renew", "t", "7"]);
        let release = CacheStep::Release { token: "t" };
        assert_encoding(cache(release).call(), keys, &["release", "t"]);
    }

    fn side(x: &str) -> RelationSide {
        RelationSide {
            set: format!("{x}.set"),
            register: format!("{x}.reg"),
            member: format!("{x}.m"),
            set_name: format!("{x}.name"),
            register_entry: format!("{x}.entry"),
            entity_key: format!("{x}.key"),
            expiry_set: format!("{x}.exp"),
        }
    }

    #[test]
    fn relate_interleaves_the_two_sides_as_relation_lua_reads_them() {
        let relate = Relate {
            relate: true,
            a: side("a"),
            b: side("b"),
            one_to_many: true,
            a_owner_head: "head".into(),
            a_owner_tail: "tail".into(),
        };
        let keys = &["a.set", "b.set", "a.reg", "b.reg"];
        let args = [
            "relate", "a.m", "b.m", "a.name", "b.name", "a.entry", "b.entry", "1", "head", "tail",
            "a.key", "a.exp", "b.key", "b.exp",
        ];
        assert_encoding(relate.call(), keys, &args);
        let unrelate = Relate {
            relate: false,
            one_to_many: false,
            ..relate
        };
        let (_, args) = encoded(&unrelate.call());
        assert_eq!((args[0].as_str(), args[7].as_str()), ("unrelate", "0"));
    }

    #[test]
    fn relation_add_and_drop_name_the_side_set_and_register() {
        let add = RelationAdd {
            entity: "u:1",
            other: "2",
            set_name: "follows",
            register_entry: "entry",
            take_over: true,
            entity_key: "u:1",
            expiry_set: "",
            own_member: "1",
        };
        let keys = &["u:1:follows", "u:1:@rel"];
        let args = ["add", "2", "follows", "entry", "1", "u:1", "", "1"];
        assert_encoding(add.call(), keys, &args);
        let drop = RelationDrop {
            entity: "u:1",
            member: "2",
            set_name: "follows",
        };
        assert_encoding(drop.call(), keys, &["drop", "2", "follows"]);
    }

    #[test]
    fn timeline_push_lists_list_then_register_per_owner() {
        let owners = ["u:1".to_owned(), "u:2".to_owned()];
        let push = TimelinePush {
            check_only: false,
            owner_keys: &owners,
            post_member: "p9",
            cap: 100,
            timeline_name: "feed",
            register_entry: "entry",
            presence_suffix: ":name",
        };
        let keys = &["u:1:feed", "u:1:@rel", "u:2:feed", "u:2:@rel"];
        let args = ["push", "p9", "99", "feed", "entry", ":name"];
        assert_encoding(push.call(), keys, &args);
        let check = TimelinePush {
            check_only: true,
            ..push
        };
        let (_, args) = encoded(&check.call());
        assert_eq!(args[0], "check");
    }

    fn rank_index() -> RankIndex {
        RankIndex {
            sorted_index: "z".into(),
            expiry_set: "e".into(),
            owner_head: "u:".into(),
            presence_suffixes: vec!["".into(), ":x".into()],
        }
    }

    #[test]
    fn rank_and_rank_ahead_put_the_suffixes_last() {
        let rank = Rank {
            index: rank_index(),
            member: "9",
        };
        assert_encoding(rank.call(), &["z", "e"], &["9", "u:", "", ":x"]);
        let ahead = RankAhead {
            index: rank_index(),
            member: "9",
            score: "1.5",
        };
        let args = ["@ahead", "u:", "9", "1.5", "", ":x"];
        assert_encoding(ahead.call(), &["z", "e"], &args);
    }

    #[test]
    fn query_lists_groups_then_the_page_the_liveness_test_and_the_order() {
        let query = Query {
            groups: vec![
                QueryGroup {
                    op: "any",
                    source: QuerySource::Sets,
                    parts: vec![
                        QueryPart {
                            key: b"s1".to_vec(),
                            range: None,
                        },
                        QueryPart {
                            key: b"s2".to_vec(),
                            range: None,
                        },
                    ],
                },
                QueryGroup {
                    op: "all",
                    source: QuerySource::Scores,
                    parts: vec![QueryPart {
                        key: b"z".to_vec(),
                        range: Some((b"(1.5".to_vec(), b"+inf".to_vec())),
                    }],
                },
                QueryGroup {
                    op: "none",
                    source: QuerySource::Lex,
                    parts: vec![QueryPart {
                        key: b"p".to_vec(),
                        range: Some((b"[a:".to_vec(), b"(a;".to_vec())),
                    }],
                },
            ],
            ids_set: "ids".into(),
            sort: QuerySort::Numeric,
            offset: 3,
            limit: 7,
            expiry_set: "e".into(),
            owner_head: "u:".into(),
            presence_suffixes: vec!["".into(), ":x".into()],
            order: Some(("z".into(), true)),
            with_scores: true,
            per_call: 2000,
            whole: 8000,
            cursor: "w:0:0:0".into(),
        };
        let keys = ["s1", "s2", "z", "p", "ids"];
        let args = [
            "3", "any", "s", "2", "all", "r", "1", "(1.5", "+inf", "none", "z", "1", "[a:", "(a;",
            "n", "3", "7", "e", "u:", "2", "", ":x", "z", "desc", "1", "2000", "8000", "w:0:0:0",
        ];
        assert_encoding(query.call(), &keys, &args);
        let unordered = Query {
            groups: vec![],
            sort: QuerySort::Unsorted,
            order: None,
            with_scores: false,
            limit: -1,
            presence_suffixes: vec![],
            per_call: 0,
            cursor: String::new(),
            ..query
        };
        let args = [
            "0", "-", "3", "-1", "e", "u:", "0", "", "", "0", "0", "8000", "",
        ];
        assert_encoding(unordered.call(), &["ids"], &args);
    }

    fn entity_keys(member: &str) -> EntityKeys {
        EntityKeys {
            member: member.into(),
            base: format!("u:{member}"),
            columns: vec![],
            maps: vec![format!("u:{member}:m")],
            shadow: Some(format!("u:{member}:@shadow")),
        }
    }

    /// An equality, an absence and a bounded increment's condition.
    fn three_conditions() -> Vec<ConditionArg<'static>> {
        vec![
            ConditionArg {
                key: 0,
                field: "status",
                test: "eq",
                operand: Some(b"0"),
                delta: None,
            },
            ConditionArg {
                key: 1,
                field: "",
                test: "ne",
                operand: None,
                delta: None,
            },
            ConditionArg {
                key: 0,
                field: "stock",
                test: "ge",
                operand: Some(b"0"),
                delta: Some(b"-1"),
            },
        ]
    }

    #[test]
    fn a_write_is_the_prelude_then_commands_then_stale_entries() {
        let keys = entity_keys("9");
        let set: [CommandArg; 2] = [b"email"[..].into(), b"a@x".to_vec().into()];
        let stale = [(1, b"DE".to_vec())];
        let write = Write {
            keys: &keys,
            token: "t1",
            namespace: "t:",
            member: "9",
            ttl: WriteTtl::Set(1500),
            cas: b"{}",
            version_expected: "3",
            conditions: three_conditions(),
            index_values: vec![
                IndexArg::Unknown,
                IndexArg::Unchanged,
                IndexArg::Absent { keep_unique: false },
                IndexArg::Absent { keep_unique: true },
                IndexArg::Value {
                    stored: b"a@x",
                    keep_unique: false,
                },
                IndexArg::Value {
                    stored: b"b@x",
                    keep_unique: true,
                },
            ],
            commands: vec![
                WriteCommand {
                    name: "HSET",
                    key: 0,
                    args: &set,
                },
                WriteCommand {
                    name: "DEL",
                    key: 1,
                    args: &[],
                },
            ],
            stale: &stale,
        };
        let keys = ["u:9", "u:9:m", "u:9:@shadow"];
        let args = [
            "t1", "t:", "9", "1500", "{}", "3", // common arguments
            "3", "1", "status", "eq", "v0", "", "2", "", "ne", "n", "", "1", "stock", "ge", "0",
            "-1", // three conditions
            "", "u", "n", "m", "va@x", "wb@x", // index values
            "HSET", "1", "2", "email", "a@x", "DEL", "2", "0", // commands
            "2", "DE", // stale entries
        ];
        let function = &*BOARD; // any script: the encoding does not depend on it
        assert_encoding(write.call(function), &keys, &args);
        let kept = Write {
            ttl: WriteTtl::Keep,
            ..write.clone()
        };
        assert_eq!(&kept.args()[3], b"-1");
        let removed = Write {
            ttl: WriteTtl::Remove,
            ..write
        };
        assert_eq!(&removed.args()[3], b"0");
    }

    #[test]
    fn a_write_batch_frames_each_entity_with_its_key_and_argument_counts() {
        let (one, two) = (entity_keys("1"), entity_keys("2"));
        let write = |keys| Write {
            keys,
            token: "",
            namespace: "",
            member: "m",
            ttl: WriteTtl::Keep,
            cas: b"",
            version_expected: "",
            conditions: vec![],
            index_values: vec![],
            commands: vec![],
            stale: &[],
        };
        let call = write_batch(&BOARD, [&one, &two].map(write));
        let keys = ["u:1", "u:1:m", "u:1:@shadow", "u:2", "u:2:m", "u:2:@shadow"];
        let entity = ["", "", "m", "-1", "", "", "0"];
        let args: Vec<&str> = [&["3", "7"][..], &entity, &["3", "7"], &entity].concat();
        assert_encoding(call, &keys, &args);
    }

    #[test]
    fn a_unit_heads_its_arguments_with_each_operations_kind_type_and_counts() {
        let (k1, a1): (Words, Words) = (
            ["u:1"].into_iter().collect(),
            ["x", "y"].into_iter().collect(),
        );
        let (k2, a2): (Words, Words) = (
            ["b:1", "b:2"].into_iter().collect(),
            ["z"].into_iter().collect(),
        );
        let ops = [
            UnitOp {
                kind: "save",
                type_number: 1,
                keys: &k1,
                args: &a1,
            },
            UnitOp {
                kind: "board",
                type_number: 0,
                keys: &k2,
                args: &a2,
            },
        ];
        let call = unit_call(&BOARD, &ops);
        assert_eq!(
            call.args[0],
            [b's', 0, 1, 0, 0, 1, 0, 0, 2, b'b', 0, 0, 0, 0, 2, 0, 0, 1][..]
        );
        let (keys, args) = encoded(&call);
        assert_eq!(keys, strings(&["u:1", "b:1", "b:2"]));
        assert_eq!(args[1..], strings(&["x", "y", "z"]));
    }

    #[test]
    fn the_unit_function_reads_each_kind_by_the_byte_the_header_gives_it() {
        let lua = include_str!("lua/unit.lua");
        for (kind, code) in UNIT_KINDS {
            // The straight-line kinds are in FAST_MODE, by the mode they run.
            let entry = match kind.strip_prefix("fast_") {
                Some(mode) => format!("[{code}] = '{mode}'"),
                None => format!("[{code}] = '{kind}'"),
            };
            assert!(lua.contains(&entry), "lua/unit.lua KINDS lacks {entry}");
        }
        assert_eq!(lua.matches("] = '").count(), UNIT_KINDS.len());
    }

    #[test]
    fn repair_modes_name_their_keys_and_arguments() {
        let member = Repair::Member {
            entity_key: "k".into(),
            listing: "l".into(),
            register: "r".into(),
            member: "9".into(),
            listing_name: "n".into(),
        };
        assert_encoding(member.call(), &["k", "l", "r"], &["member", "9", "n"]);
        let gone = Repair::Gone {
            listing: "l".into(),
            register: "r".into(),
            member: "9".into(),
            listing_name: "n".into(),
        };
        assert_encoding(gone.call(), &["l", "r"], &["gone", "9", "n"]);
        let key = Repair::Key {
            entity_key: "k".into(),
            leftover: "x".into(),
        };
        assert_encoding(key.call(), &["k", "x"], &["key"]);
        assert_eq!((member.subject(), key.subject()), ("l", "x"));
    }
}
