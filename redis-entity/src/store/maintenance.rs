//! Keeping indexes honest: `verify` (every invariant checked against what is
//! stored), `repair`, `reindex` (after an index was added) and `sweep`
//! (entries of expired entities). The checking itself is the pure state
//! machine of [`crate::plan::verify`].

mod handle;

pub use handle::Maintenance;

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::query;
use crate::plan::verify::{self, Progress, Repaired, Report, Unrepaired};
use crate::plan::write;
use crate::schema::entity::{Entity, EntityDesc};
use crate::schema::escape::Namespace;
use crate::script::{self, args::Repair, write::WriteOp};
use redis::aio::ConnectionLike;
use redis::Value;
use std::collections::BTreeMap;

/// How many writes or script calls one pipelined round trip of `repair`
/// and `reindex` carries.
const BATCH: usize = 500;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Checks every index invariant of `E` against what is stored (SCAN, never
    /// KEYS; reads every entity and index key, so its time is proportional to
    /// the data; it holds one page at a time). See
    /// [`crate::verify::Violation`] for what it finds.
    pub(crate) async fn verify<E: Entity>(&self) -> Result<Report> {
        self.verify_with::<E>(|_| {}).await
    }

    /// [`verify`](Self::verify), calling `progress` after every round trip
    /// (each reads at most 500 entities, or about 10,000 index members).
    pub(crate) async fn verify_with<E: Entity>(
        &self,
        mut progress: impl FnMut(&Progress) + Send,
    ) -> Result<Report> {
        // Shard after shard for a sharded type: each shard's keys are
        // spelled as on one server under its hash tag, and its SCANs go to
        // its node. A type of no shards on a cluster (no index, no group)
        // has its entities in every slot: the walk runs on each master,
        // its SCANs sent there (`nodes::node_hints`; one server: one walk).
        let mut report = Report::default();
        let walks: Vec<(Namespace, Option<String>)> = if keyspace::sharded(E::DESC, &self.ns) {
            keyspace::spaces(E::DESC, &self.ns)
                .into_iter()
                .map(|space| {
                    let hint = keyspace::ids_key(E::DESC, &space);
                    (space, Some(hint))
                })
                .collect()
        } else {
            self.node_hints()
                .await?
                .into_iter()
                .map(|hint| (self.ns.clone(), hint))
                .collect()
        };
        for (space, hint) in walks {
            let name = keyspace::ids_key(E::DESC, &space);
            let mut v = verify::Verifier::new(E::DESC, &space)
                .decoding(verify::row_check::<E>)
                .members(verify::member_check::<E>);
            while let Some(pipe) = v.next_request() {
                let replies = self.verify_request(pipe, &name, hint.as_deref()).await?;
                v.feed(replies)?;
                progress(&v.progress());
            }
            let r = v.report();
            report.entities += r.entities;
            report.index_entries += r.index_entries;
            report.violations.extend(r.violations);
        }
        if keyspace::needs_claims(E::DESC, &self.ns) {
            report.violations.extend(self.verify_owners(E::DESC).await?);
        }
        report
            .violations
            .extend(self.verify_placement(E::DESC).await?);
        report.memory_policy = self
            .memory_policy_at(&keyspace::ids_key(E::DESC, &self.ns))
            .await?;
        Ok(report)
    }

    /// The `maxmemory-policy` of the server holding `key` (`None` when the
    /// user may not run `INFO`).
    async fn memory_policy_at(&self, key: &str) -> Result<Option<String>> {
        let call = script::args::ReadMemoryPolicy { on: key }.call();
        script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| Error::redis(key, e))
    }

    /// Sends one request of `verify`, its errors named by `name`. A `SCAN`
    /// goes to the node of `hint` (a shard's key, or a key of a master);
    /// on a cluster, a request of keyed commands only is sent as one
    /// pipeline per slot (the other sides of relations live in other
    /// slots), its replies put back in order.
    async fn verify_request(
        &self,
        mut pipe: redis::Pipeline,
        name: &str,
        hint: Option<&str>,
    ) -> Result<Vec<Value>> {
        let keyed: Option<Vec<(String, redis::Cmd)>> = pipe
            .cmd_iter()
            .map(|c| {
                let mut args = c.args_iter();
                let name = match args.next()? {
                    redis::Arg::Simple(n) => n.to_ascii_uppercase(),
                    _ => return None,
                };
                let key = match args.next()? {
                    redis::Arg::Simple(k) if name != b"SCAN" => {
                        String::from_utf8_lossy(k).into_owned()
                    }
                    _ => return None,
                };
                Some((key, c.clone()))
            })
            .collect();
        let keyed = match keyed {
            Some(k)
                if self.ns.layout() == crate::schema::escape::KeyLayout::Cluster
                    && !k.is_empty() =>
            {
                k
            }
            _ => {
                crate::keyspace::nodes::route_to(&mut pipe, hint);
                return pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(name, e));
            }
        };
        self.per_slot(
            &keyed,
            |(k, _)| k.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                pipe.ignore_errors();
                let key = group[0].0.clone();
                for (_, c) in group {
                    pipe.add_command(c);
                }
                pipe.query_async::<Vec<Value>>(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&key, e))
            },
        )
        .await
    }

    /// Removes the index entries of entities of `E` that have expired,
    /// looking at no more than `budget` members whose TTL has passed (oldest
    /// first): one read of the expiry set, one pipelined write. Returns how
    /// many expired entities were unindexed. Queries already skip expired
    /// entities and remove what they meet; a periodic sweep removes the rest,
    /// with no keyspace notifications and no `CONFIG`.
    pub(crate) async fn sweep<E: Entity>(&self, budget: usize) -> Result<usize> {
        let mut swept = 0;
        for space in keyspace::spaces(E::DESC, &self.ns) {
            swept += self
                .sweep_in::<E>(&space, budget.saturating_sub(swept))
                .await?;
        }
        Ok(swept)
    }

    /// The sweep of one space (the store's, or a shard's).
    async fn sweep_in<E: Entity>(&self, space: &Namespace, budget: usize) -> Result<usize> {
        if budget == 0 {
            return Ok(0);
        }
        let key = keyspace::expiry_key(E::DESC, space);
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
            .write_many(&query::sweep_plans(E::DESC, space, &due))
            .await?
            .into_iter()
            .filter(|r| matches!(r, Ok(true)))
            .count();
        Ok(swept)
    }

    /// Fixes what `verify` reported, each fix conditional on the state it
    /// repairs still being there: stale entries are removed (only if still
    /// stale), missing ones re-added from the stored values, each entity in
    /// one atomic write; what an entity that is gone left behind (index
    /// entries, both sides of its relations, its keys, its place in
    /// timelines) is removed while it is still gone; the listed half of a
    /// one-sided relation is removed. Duplicate unique values, unreadable
    /// and undecodable records need a person: they are returned in
    /// [`Repaired::left`] with the reason, as is any fix whose write failed.
    pub(crate) async fn repair<E: Entity>(&self, report: &Report) -> Result<Repaired> {
        self.repair_with::<E>(report, |_| {}).await
    }

    /// [`repair`](Self::repair), calling `progress` after every round trip
    /// (each carries at most 500 fixes).
    pub(crate) async fn repair_with<E: Entity>(
        &self,
        report: &Report,
        mut progress: impl FnMut(&Progress) + Send,
    ) -> Result<Repaired> {
        // A repair brings the stored data to the code's definition: that
        // definition becomes the keyspace's, fitting or not.
        self.adopt_forced(E::DESC).await?;
        let plan = verify::repairs(E::DESC, &self.ns, report);
        let total = plan.writes.len()
            + plan.removals.len()
            + plan.one_sided.len()
            + plan.owners.len()
            + plan.unplaced.len();
        let mut done = 0;
        let mut step = |n: usize| {
            done += n;
            progress(&Progress {
                step: "repairing",
                done,
                total: Some(total),
            });
        };
        let ids = keyspace::ids_key(E::DESC, &self.ns);
        // Violation position -> why its fix failed.
        let mut failed: BTreeMap<usize, String> = BTreeMap::new();
        if !plan.unplaced.is_empty() {
            // Moved before the other fixes, which read each entity where
            // it lives.
            self.place_unplaced(E::DESC, &plan.unplaced, &mut failed)
                .await?;
            step(plan.unplaced.len());
        }
        for chunk in plan.writes.chunks(BATCH) {
            self.write_fixes(chunk, &mut failed).await?;
            step(chunk.len());
        }
        for chunk in plan.removals.chunks(BATCH) {
            self.remove_gone(chunk, &mut failed).await?;
            step(chunk.len());
        }
        for chunk in plan.one_sided.chunks(BATCH) {
            self.remove_one_sided(chunk, &ids, &mut failed).await?;
            step(chunk.len());
        }
        for (v, at) in &plan.owners {
            match self.repair_owner(E::DESC, v).await {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    failed.insert(*at, why);
                }
                Err(e) => {
                    failed.insert(*at, e.to_string());
                }
            }
            step(1);
        }
        let mut left: BTreeMap<usize, String> = failed;
        for (at, why) in plan.manual {
            left.insert(at, why.to_owned());
        }
        Ok(Repaired {
            fixed: report.violations.len() - left.len(),
            left: left
                .into_iter()
                .map(|(at, reason)| Unrepaired {
                    violation: report.violations[at].clone(),
                    reason,
                })
                .collect(),
        })
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Repair's first step: the unplaced entities (member, violation) that
    /// are still unplaced move into their index shards, then are indexed
    /// there; `failed` gets each one whose index write failed.
    async fn place_unplaced(
        &self,
        desc: &'static crate::schema::entity::EntityDesc,
        unplaced: &[(String, usize)],
        failed: &mut BTreeMap<usize, String>,
    ) -> Result<()> {
        let found = self.unplaced(desc).await?;
        let wanted: BTreeMap<String, Vec<String>> = unplaced
            .iter()
            .filter_map(|(m, _)| Some((m.clone(), found.get(m)?.clone())))
            .collect();
        self.place(desc, &wanted).await?;
        let moved: Vec<(String, usize)> = unplaced
            .iter()
            .filter(|(m, _)| wanted.contains_key(m))
            .cloned()
            .collect();
        for chunk in moved.chunks(BATCH) {
            let plans: Vec<_> = chunk
                .iter()
                .map(|(m, _)| {
                    write::lifecycle(
                        desc,
                        self.namespace(),
                        EntityKeys::new(desc, self.namespace(), m.clone()),
                        WriteOp::Reindex,
                        None,
                    )
                })
                .collect();
            for ((m, at), r) in chunk.iter().zip(self.write_many(&plans).await?) {
                if let Err(e) = r {
                    failed.insert(
                        *at,
                        format!("moved into its shard, then not indexed: {e} ({m})"),
                    );
                }
            }
        }
        Ok(())
    }

    /// A batch of repair's entity writes (each with the violations it
    /// fixes); `failed` gets the violations of each write that failed.
    async fn write_fixes(
        &self,
        chunk: &[(write::WritePlan, Vec<usize>)],
        failed: &mut BTreeMap<usize, String>,
    ) -> Result<()> {
        let plans: Vec<write::WritePlan> = chunk.iter().map(|(p, _)| p.clone()).collect();
        for ((_, fixes), r) in chunk.iter().zip(self.write_many(&plans).await?) {
            match r {
                // Deleted since the report: nothing left to repair.
                Ok(_) | Err(Error::NotFound { .. }) => {}
                Err(e) => {
                    for at in fixes {
                        failed.entry(*at).or_insert_with(|| e.to_string());
                    }
                }
            }
        }
        Ok(())
    }

    /// A batch of repair script calls that remove what a gone entity left
    /// (listed members, leftover keys), each only while it is still gone;
    /// `failed` gets each call's violation that an error answered.
    async fn remove_gone(
        &self,
        chunk: &[(Repair, usize)],
        failed: &mut BTreeMap<usize, String>,
    ) -> Result<()> {
        let calls = self.gone_checked(chunk).await?;
        let replies = self.invoke_per_slot(calls).await?;
        for ((removal, at), v) in chunk.iter().zip(replies) {
            if let Value::ServerError(e) = v {
                failed
                    .entry(*at)
                    .or_insert_with(|| Error::redis(removal.subject(), e.into()).to_string());
            }
        }
        Ok(())
    }

    /// A batch of one-sided relations (set, member, violation): SREM of the
    /// listed half; `failed` gets each whose SREM failed.
    async fn remove_one_sided(
        &self,
        chunk: &[(String, String, usize)],
        ids: &str,
        failed: &mut BTreeMap<usize, String>,
    ) -> Result<()> {
        // One pipeline per slot on a cluster: the sets are of many owners.
        let replies = self
            .per_slot(
                chunk,
                |(key, _, _)| key.as_str(),
                |group| async move {
                    let mut pipe = redis::pipe();
                    pipe.ignore_errors();
                    for (key, member, _) in &group {
                        pipe.cmd("SREM").arg(key).arg(member);
                    }
                    pipe.query_async::<Vec<Value>>(&mut self.conn.clone())
                        .await
                        .map_err(|e| Error::redis(ids, e))
                },
            )
            .await?;
        for ((key, _, at), v) in chunk.iter().zip(replies) {
            if let Value::ServerError(e) = v {
                failed
                    .entry(*at)
                    .or_insert_with(|| Error::redis(key, redis::RedisError::from(e)).to_string());
            }
        }
        Ok(())
    }

    /// Repair's removals, ready to send: a removal of a member whose entity
    /// lives in another slot of a cluster than the set listing it cannot
    /// check the entity in its script, so the entity is checked here first
    /// and the removal sent as `gone` (without that key) while it is still
    /// missing; one that came back needs nothing (an `EXISTS` that is 0
    /// stands in for it, in its own slot).
    async fn gone_checked(
        &self,
        removals: &[(Repair, usize)],
    ) -> Result<Vec<script::Call<'static>>> {
        let across: Vec<(String, usize)> = removals
            .iter()
            .enumerate()
            .filter_map(|(i, (r, _))| match r {
                Repair::Member {
                    entity_key,
                    listing,
                    ..
                } if keyspace::slot_tag(entity_key) != keyspace::slot_tag(listing) => {
                    Some((entity_key.clone(), i))
                }
                _ => None,
            })
            .collect();
        let mut calls: Vec<script::Call<'static>> =
            removals.iter().map(|(r, _)| r.call()).collect();
        if across.is_empty() {
            return Ok(calls);
        }
        let exists = self
            .per_slot(
                &across,
                |(k, _)| k.as_str(),
                |group| async move {
                    let mut pipe = redis::pipe();
                    for (k, _) in &group {
                        pipe.cmd("EXISTS").arg(k);
                    }
                    pipe.query_async::<Vec<i64>>(&mut self.conn.clone())
                        .await
                        .map_err(|e| Error::redis(&group[0].0, e))
                },
            )
            .await?;
        for ((entity, i), n) in across.iter().zip(exists) {
            calls[*i] = match &removals[*i].0 {
                Repair::Member {
                    listing,
                    register,
                    member,
                    listing_name,
                    ..
                } if n == 0 => Repair::Gone {
                    listing: listing.clone(),
                    register: register.clone(),
                    member: member.clone(),
                    listing_name: listing_name.clone(),
                },
                // Back since verify looked: the removal would do nothing.
                _ => Repair::Key {
                    entity_key: entity.clone(),
                    leftover: entity.clone(),
                },
            }
            .call();
        }
        Ok(calls)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Store<C> {
    /// Indexes every stored `E` again from its stored values (after an index
    /// was added to the type, or to rebuild lost index keys): SCAN of the
    /// entity keys, one pipelined write per 500 entities. Returns how many
    /// entities were indexed.
    pub(crate) async fn reindex<E: Entity>(&self) -> Result<usize> {
        self.reindex_with::<E>(|_| {}).await
    }

    /// [`reindex`](Self::reindex), calling `progress` after every round
    /// trip (a SCAN page, then each batch of 500 entities).
    pub(crate) async fn reindex_with<E: Entity>(
        &self,
        mut progress: impl FnMut(&Progress) + Send,
    ) -> Result<usize> {
        // The code's definition becomes the keyspace's, fitting or not (a
        // reindex is what moves entities into index shards); indexes it
        // builds are built by the walk of `schema apply`, and marked ready.
        if self.tracks_schemas() {
            let applied = self
                .schema()
                .apply_as::<E>(crate::store::schema::Adopt::Forced, &mut progress)
                .await?;
            if applied.walks > 0 {
                return Ok(applied.indexed);
            }
        }
        let desc = E::DESC;
        // Entities written before the type had indexes move into their
        // shards first (on a cluster; see `unplaced`).
        let unplaced = self.unplaced(desc).await?;
        if !unplaced.is_empty() {
            let moved = self.place(desc, &unplaced).await?;
            progress(&Progress {
                step: "moving into index shards",
                done: moved,
                total: Some(unplaced.len()),
            });
        }
        // Each SCAN page is indexed as it comes, so that the walk holds one
        // page, not every member (see `entities_on_page`).
        let (mut indexed, mut done) = (0, 0);
        for space in keyspace::spaces(desc, &self.ns) {
            let mut cursor: u64 = 0;
            loop {
                let (next, keys, _) = self.entity_page(desc, &space, cursor, false).await?;
                let page = entities_on_page::<E>(&space, &keys);
                for chunk in page.chunks(BATCH) {
                    indexed += self.reindex_members(desc, chunk).await?;
                    done += chunk.len();
                    progress(&Progress {
                        step: "indexing",
                        done,
                        total: None,
                    });
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(indexed)
    }

    /// One SCAN page of the entity keys of `space` from `cursor` (on a
    /// cluster, sent to the master of the space's slot), and with
    /// `run_id` the run id of the server that answered it (a walk resumed
    /// later checks that its cursor still means something there).
    pub(crate) async fn entity_page(
        &self,
        desc: &EntityDesc,
        space: &Namespace,
        cursor: u64,
        run_id: bool,
    ) -> Result<(u64, Vec<String>, Option<String>)> {
        let hint = keyspace::ids_key(desc, space);
        let mut pipe = redis::pipe();
        keyspace::nodes::scan_page(
            &mut pipe,
            cursor,
            &keyspace::entity_scan_pattern(desc, space),
        );
        if run_id {
            pipe.cmd("INFO").arg("server");
        }
        keyspace::nodes::route_to(
            &mut pipe,
            keyspace::sharded(desc, &self.ns).then_some(hint.as_str()),
        );
        let mut replies: Vec<redis::Value> = pipe
            .query_async(&mut self.connection())
            .await
            .map_err(|e| Error::redis(&hint, e))?;
        let info = if run_id { replies.pop() } else { None };
        let (next, keys): (u64, Vec<String>) =
            redis::from_redis_value(replies.pop().unwrap_or(redis::Value::Nil))
                .map_err(|e| Error::redis(&hint, e.into()))?;
        let run = info
            .and_then(|v| redis::from_redis_value::<String>(v).ok())
            .map(|info| {
                info.lines()
                    .find_map(|l| l.strip_prefix("run_id:"))
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            });
        Ok((next, keys, run))
    }

    /// Indexes a batch of members again from their stored values (one
    /// pipelined write): how many were indexed.
    pub(crate) async fn reindex_members(
        &self,
        desc: &'static crate::schema::entity::EntityDesc,
        chunk: &[String],
    ) -> Result<usize> {
        let plans: Vec<_> = chunk
            .iter()
            .map(|m| {
                write::lifecycle(
                    desc,
                    self.namespace(),
                    EntityKeys::new(desc, self.namespace(), m.clone()),
                    WriteOp::Reindex,
                    None,
                )
            })
            .collect();
        let mut indexed = 0;
        for r in self.write_many(&plans).await? {
            match r {
                Ok(_) => indexed += 1,
                // Keys of an entity that is gone (an expired one's
                // relation sets, say): nothing to index.
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(indexed)
    }
}

/// The members of the entities a SCAN page of entity keys (of `space`)
/// shows, each once, in order. An entity is taken from one key of its own,
/// the one that exists while it does (`ttl_key`: the entity key, or a
/// strings-layout type's first required column), not from its other keys
/// (columns, maps, relation sets), which may fall on other pages: so a walk
/// of pages meets each entity once. (A strings-layout type without a
/// required column is taken from any key that shows it exists, so such an
/// entity may be met once per page it falls on; SCAN may also return a key
/// twice. Reindexing it again writes the same entries.) Only members some
/// pk writes: a key no pk produces (`product:{X}`) is verify's to report,
/// never indexed.
pub(crate) fn entities_on_page<E: Entity>(space: &Namespace, keys: &[String]) -> Vec<String> {
    let desc = E::DESC;
    let any_presence = desc.layout == crate::schema::entity::Layout::Strings
        && !desc.columns.iter().any(|c| !c.optional && c.ttl.is_none());
    let head = keyspace::owner_head(desc, space);
    let presence = keyspace::presence_suffixes(desc, space);
    let page: std::collections::BTreeSet<String> = keys
        .iter()
        .filter_map(|k| {
            let m = keyspace::member_of_key(desc, space, k)?;
            let own = if any_presence {
                presence.iter().any(|s| *k == format!("{head}{m}{s}"))
            } else {
                *k == keyspace::ttl_key(desc, space, &m)
            };
            own.then_some(m)
        })
        .filter(|m| E::read_member(m).is_some())
        .collect();
    page.into_iter().collect()
}
