//! Relations whose two sides live in two slots of a cluster (types of many
//! index shards, or two types in different slots): no one script can write
//! both, so each side is its own atomic call, in an order that leaves only
//! states `verify` reports and `repair` fixes.
//!
//! - relate: the owner's side first (`a`'s forward set; fails if `a` does
//!   not exist), then `b`'s reverse set (fails if `b` does not exist, and
//!   the owner's side is taken back). For a one-to-many relation the second
//!   call takes `b`'s reverse set over and names `b`'s previous owners,
//!   whose forward sets lose `b` in a third wave.
//! - unrelate: the owner's side first, then the other.
//! - delete or sweep of an entity: its own script removes it from every
//!   other side in its slot and returns the others, cleaned here per slot.
//!
//! A crash between two calls leaves one side listing a member whose side
//! does not list it back ([`crate::verify::Violation::OneSidedRelation`]),
//! or a member whose entity is gone (`DanglingMember`); `repair` removes
//! the listed half, which is what the interrupted call would have ended in
//! for an unrelate or a delete, and undoes an interrupted relate.

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::entity::{Entity, EntityDesc};
use crate::schema::escape::{KeyLayout, Namespace};
use crate::script::{self, Call};
use redis::aio::ConnectionLike;
use redis::Value;

use super::relation::Relation;

/// The call adding `other` to one side's set `name` of the entity
/// `member` (key `entity`): refused with `ENTITY_NOT_FOUND` when that entity
/// does not exist; with `take`, the other members leave the set and are
/// returned (one-to-many: `b` has one owner).
fn add_call(
    desc: &EntityDesc,
    ns: &Namespace,
    member: &str,
    name: &str,
    entry: &str,
    other: &str,
    take: bool,
) -> Call<'static> {
    let entity = keyspace::entity_key(desc, ns, member);
    let expiry = keyspace::expiry_key(desc, &keyspace::entity_space(desc, ns, member));
    // A type whose expiry set lives in another slot (one without indexes
    // on a cluster) is not tracked there: its relations outlive its TTL
    // until it is deleted.
    let expiry = if keyspace::slot_tag(&expiry) == keyspace::slot_tag(&entity) {
        expiry
    } else {
        String::new()
    };
    script::args::RelationAdd {
        entity: &entity,
        other,
        set_name: name,
        register_entry: entry,
        take_over: take,
        entity_key: &keyspace::ttl_key(desc, ns, member),
        expiry_set: &expiry,
        own_member: member,
    }
    .call()
}

/// The call removing `member` from the set `name` under the entity key
/// `entity` (and the set's register entry when it empties).
pub(crate) fn drop_call(entity: &str, name: &str, member: &str) -> Call<'static> {
    script::args::RelationDrop {
        entity,
        member,
        set_name: name,
    }
    .call()
}

/// The error of an add call: `NotFound` when the script found no entity
/// at `key`.
fn entity_not_found(key: &str, e: redis::RedisError) -> Error {
    match e.code() {
        Some("ENTITY_NOT_FOUND") => Error::NotFound {
            key: key.to_owned(),
        },
        _ => Error::redis(key, e),
    }
}

/// The calls that take `member` (of an entity deleted or swept) out of the
/// other sides in `away`.
pub(crate) fn unlink_calls(member: &str, away: &[(String, String)]) -> Vec<Call<'static>> {
    away.iter()
        .filter_map(|(entry, m)| {
            let mut lines = entry.split('\n');
            let (head, tail, other) = (lines.next()?, lines.next()?, lines.next()?);
            let theirs = keyspace::key_from_entry(head, m, tail);
            Some(drop_call(&theirs, other, member))
        })
        .collect()
}

/// Pairs of texts: (register entry, member) of other sides, or (renamed
/// set, register entry) of sets to unlink in pages.
pub(crate) type Pairs = Vec<(String, String)>;

/// A delete's `away` pairs split: the other sides to clean, and the
/// relation sets it renamed to be unlinked in pages (the new key, the
/// set's register entry; see `UNLINK_WHOLE` in lua/write_prelude.lua).
pub(crate) fn split_pending(away: &[(String, String)]) -> (Pairs, Pairs) {
    let mut sides = Vec::new();
    let mut pending = Vec::new();
    for (first, second) in away {
        match first.strip_prefix("@unlinking\n") {
            Some(renamed) => pending.push((renamed.to_owned(), second.clone())),
            None => sides.push((first.clone(), second.clone())),
        }
    }
    (sides, pending)
}

/// Whether a relation between entities of `types` with keys `keys` has
/// sides in two slots of a cluster (never on one server): then each side
/// is written by a call of its own.
pub(crate) fn spans_slots(types: [&EntityDesc; 2], keys: [&str; 2], ns: &Namespace) -> bool {
    if ns.layout() != KeyLayout::Cluster {
        return false;
    }
    let many = types
        .iter()
        .any(|d| d.shards > 1 && keyspace::sharded(d, ns));
    many || keyspace::slot_tag(keys[0]) != keyspace::slot_tag(keys[1])
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// True when one script writes both sides of a relation of `a` and `b`:
    /// always on one server; on a cluster when they share a slot and
    /// neither type has many shards (the one-to-many script spells a
    /// previous owner's key with its type's one space).
    pub(crate) fn one_script(&self, types: [&EntityDesc; 2], keys: [&str; 2]) -> bool {
        !spans_slots(types, keys, &self.ns)
    }

    /// Sends `calls`, one pipeline per slot, the slots concurrently; the
    /// replies in the calls' order (error replies as `Value::ServerError`).
    pub(crate) async fn invoke_per_slot(&self, calls: Vec<Call<'static>>) -> Result<Vec<Value>> {
        let first_key = |c: &Call<'static>| -> String {
            c.keys()
                .first()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .unwrap_or_default()
        };
        let keyed: Vec<(String, usize)> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| (first_key(c), i))
            .collect();
        let calls = &calls;
        self.per_slot(
            &keyed,
            |(k, _)| k.as_str(),
            |group| async move {
                let own: Vec<Call<'_>> = group.iter().map(|(_, i)| calls[*i].clone()).collect();
                let key = group.first().map(|(k, _)| k.clone()).unwrap_or_default();
                script::invoke_all(&mut self.conn.clone(), &self.sent, &own)
                    .await
                    .map_err(|e| Error::redis(&key, e))
            },
        )
        .await
    }

    /// Takes the entity `member` out of the other sides a delete or sweep
    /// of it could not reach (one round trip per slot, concurrently), and
    /// out of those of its relation sets the delete left to be unlinked in
    /// pages.
    pub(crate) async fn unlink_away(&self, member: &str, away: &[(String, String)]) -> Result<()> {
        let (away, pending) = split_pending(away);
        for (renamed, entry) in &pending {
            Box::pin(self.unlink_in_pages(member, renamed, entry)).await?;
        }
        if away.is_empty() {
            return Ok(());
        }
        for reply in self.invoke_per_slot(unlink_calls(member, &away)).await? {
            if let Value::ServerError(e) = reply {
                let e: redis::RedisError = e.into();
                return Err(Error::redis(&away[0].1, e));
            }
        }
        Ok(())
    }

    /// Takes `member` out of the other side of each member of `renamed`
    /// (a relation set its delete renamed), a page of about
    /// `members_per_call` per call until the set is gone; sides in other
    /// slots of a cluster as [`Self::unlink_away`] does. An error stops it
    /// with the rest of the set still listed: the same delete's entity is
    /// gone, and `verify` reports the members left on the other sides.
    pub(crate) async fn unlink_in_pages(
        &self,
        member: &str,
        renamed: &str,
        entry: &str,
    ) -> Result<()> {
        loop {
            let call = script::args::UnlinkPage {
                renamed,
                member,
                entry,
                // Each member costs a write of its own side (SREM, EXISTS,
                // maybe HDEL), where a query page's member costs a lookup:
                // a quarter of the members make a call of about the same
                // time (about 3 ms at ten million entities).
                count: (self.budget.per_call / 4).max(1),
            }
            .call();
            let reply: Vec<Value> = script::invoke(&mut self.conn.clone(), &self.sent, &call)
                .await
                .map_err(|e| Error::redis(renamed, e))?;
            let mut items = reply.into_iter();
            let more = matches!(items.next(), Some(Value::Int(1)));
            let sides: Vec<(String, String)> = items
                .filter_map(|v| redis::from_redis_value::<String>(v).ok())
                .map(|m| (entry.to_owned(), m))
                .collect();
            if !sides.is_empty() {
                for reply in self.invoke_per_slot(unlink_calls(member, &sides)).await? {
                    if let Value::ServerError(e) = reply {
                        return Err(Error::redis(renamed, e.into()));
                    }
                }
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// Relates (or unrelates) `a` and `b` whose sides live in two slots:
    /// one call per side in the order of the module's description.
    /// `sides`: the member and entity key of `a`, then of `b` (what the
    /// caller computed to choose this path).
    pub(crate) async fn relation_across<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        sides: [(String, String); 2],
        relate: bool,
    ) -> Result<bool> {
        let ns = &self.ns;
        let [(am, ak), (bm, bk)] = sides;
        let conn = &mut self.conn.clone();
        // a's side: `b` added to its set (relate, and the take-back of an
        // unrelate refused on b's side); `b` dropped from it.
        let forward = add_call(
            A::DESC,
            ns,
            &am,
            rel.name(),
            &keyspace::register_entry(B::DESC, ns, rel.reverse()),
            &bm,
            false,
        );
        let drop_forward = drop_call(&ak, rel.name(), &bm);
        if !relate {
            let drop_reverse = drop_call(&bk, rel.reverse(), &am);
            return self
                .unrelate_across(conn, [&forward, &drop_forward, &drop_reverse], [&ak, &bk])
                .await;
        }
        let (added, _) = script::reply::relation_added(
            script::invoke(conn, &self.sent, &forward)
                .await
                .map_err(|e| entity_not_found(&ak, e))?,
        );
        let reverse = add_call(
            B::DESC,
            ns,
            &bm,
            rel.reverse(),
            &keyspace::register_entry(A::DESC, ns, rel.name()),
            &am,
            rel.is_one_to_many(),
        );
        let previous: Vec<String> = match script::invoke::<Value, _>(conn, &self.sent, &reverse)
            .await
        {
            Ok(reply) => script::reply::relation_added(reply).1,
            Err(e) => {
                let err = entity_not_found(&bk, e);
                // `b` is missing, or its side holds a key of the wrong type
                // (refused before writing): take back what the first call
                // added, so nothing changed.
                if added > 0 && matches!(err, Error::NotFound { .. } | Error::WrongType { .. }) {
                    let _: i64 = script::invoke(conn, &self.sent, &drop_forward)
                        .await
                        .map_err(|e| Error::redis(&ak, e))?;
                }
                return Err(err);
            }
        };
        self.drop_from_previous_owners(rel, &previous, &bm, &bk)
            .await?;
        Ok(added > 0)
    }

    /// Unrelates across two slots: `b` dropped from a's set, then `a` from
    /// b's; `calls` are a's add (the take-back), a's drop and b's drop,
    /// `keys` the entity keys of `a` and `b`. True when a's set listed `b`.
    async fn unrelate_across(
        &self,
        conn: &mut C,
        [forward, drop_forward, drop_reverse]: [&Call<'static>; 3],
        [ak, bk]: [&str; 2],
    ) -> Result<bool> {
        let removed: i64 = script::invoke(conn, &self.sent, drop_forward)
            .await
            .map_err(|e| Error::redis(ak, e))?;
        if let Err(e) = script::invoke::<i64, _>(conn, &self.sent, drop_reverse).await {
            let err = Error::redis(bk, e);
            // b's side refused before writing (a key of the wrong type):
            // a's side gets its member back, so nothing changed.
            if removed > 0 && matches!(err, Error::WrongType { .. }) {
                script::invoke::<Value, _>(conn, &self.sent, forward)
                    .await
                    .map_err(|e| Error::redis(ak, e))?;
            }
            return Err(err);
        }
        Ok(removed > 0)
    }

    /// One-to-many: `b` (member `bm`, entity key `bk`) left its previous
    /// owners; their sets lose it.
    async fn drop_from_previous_owners<A: Entity, B: Entity>(
        &self,
        rel: &Relation<A, B>,
        previous: &[String],
        bm: &str,
        bk: &str,
    ) -> Result<()> {
        let calls: Vec<Call<'static>> = previous
            .iter()
            .map(|old| {
                let owner = keyspace::entity_key(A::DESC, &self.ns, old);
                drop_call(&owner, rel.name(), bm)
            })
            .collect();
        if !calls.is_empty() {
            for reply in self.invoke_per_slot(calls).await? {
                if let Value::ServerError(e) = reply {
                    return Err(Error::redis(bk, e.into()));
                }
            }
        }
        Ok(())
    }
}
