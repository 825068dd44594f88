//! Unique values of a type spread over many index shards of a cluster.
//!
//! Two entities holding one value may live in two shards, which no one
//! script sees together, so each value has an owner key in the value's own
//! slot (`keyspace::owner_key`, a hash: `owner`, `at`). The protocol:
//!
//! 1. The write goes out with its unique values marked "keep" (the script
//!    refuses it, with nothing written, if a unique value would change, and
//!    names the stored ones), and, in the same wave, a claim of each new
//!    value: a free value is claimed, one the entity owns already is its own.
//!    A write that changes no unique value is done here: one round trip.
//! 2. A value claimed by another entity is taken over only when that claim
//!    is older than [`CLAIM_LEASE_MS`] and its owner does not hold the value
//!    (checked in the owner's shard); otherwise the write fails with
//!    `Error::UniqueViolation` and the claims it made are released. With
//!    every value claimed, the write goes out again, unmarked.
//! 3. Once it is written, the values it replaced are released (their owner
//!    keys go, if the entity still owns them).
//!
//! So a write that changes a unique value costs three round trips, an insert
//! two. The owner key changes only by compare-and-set, so two entities never
//! own one value; a crash between the steps leaves a claim whose owner does
//! not hold the value, which the next claimer takes over once the lease has
//! passed, and `verify` reports (`StaleOwner`) and `repair` removes. A write
//! must finish within the lease of its claim (ten seconds; writes take
//! milliseconds), or a claimer may take the value over under it.

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::verify::Violation;
use crate::plan::write::{IndexValue, WritePlan};
use crate::schema::entity::{EntityDesc, IndexKind, IndexSource, Layout};
use crate::schema::escape::escape_bytes_into;
use crate::script::reply::{self, ClaimReply};
use crate::script::{self, args::ClaimMode, write::WriteOp, Call};
use redis::aio::ConnectionLike;
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};

/// How long a claim protects a write under way: a claim older than this
/// whose owner does not hold the value is taken over.
pub(crate) const CLAIM_LEASE_MS: u64 = 10_000;

fn claim_call(owner_key: &str, mode: ClaimMode<'_>, member: &str) -> Call<'static> {
    script::args::Claim {
        owner_key,
        mode,
        member,
    }
    .call()
}

/// The escaped form of a stored value, as index keys hold it.
fn escaped(raw: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    escape_bytes_into(&mut v, raw);
    v
}

/// The unique indexes of `desc` whose values owner keys guard: those of a
/// column (an indexed pk is unique by itself).
fn guarded(desc: &EntityDesc) -> impl Iterator<Item = usize> + '_ {
    desc.indexes
        .iter()
        .enumerate()
        .filter(|(_, i)| i.kind == IndexKind::Unique && i.source != IndexSource::Pk)
        .map(|(n, _)| n)
}

/// The error of a write refused because the entity's value of index `n`
/// is another entity's.
fn unique_violation(plan: &WritePlan, n: usize) -> Error {
    let value = match &plan.index_values[n] {
        IndexValue::Value(raw) => crate::error::shown(raw),
        _ => String::new(),
    };
    Error::UniqueViolation {
        field: plan.desc.indexes[n].field,
        value,
    }
}

/// A write that changes a unique value goes through the protocol of the
/// module's description: every write that may give an entity a unique value.
pub(crate) fn claims_for(plan: &WritePlan, ns: &crate::schema::escape::Namespace) -> bool {
    matches!(
        plan.op,
        WriteOp::Save | WriteOp::Insert | WriteOp::Update | WriteOp::Cas
    ) && keyspace::needs_claims(plan.desc, ns)
        && guarded(plan.desc).any(|n| {
            matches!(
                plan.index_values[n],
                IndexValue::Value(_) | IndexValue::Absent
            )
        })
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The owner key of index `n`'s escaped value.
    fn owner_of(&self, desc: &EntityDesc, n: usize, value: &[u8]) -> String {
        keyspace::owner_key(desc, &self.ns, desc.indexes[n].field, value)
    }

    /// Sends `calls` (one slot each, any slots) concurrently; a reply each.
    async fn claims(&self, calls: Vec<Call<'static>>) -> Result<Vec<Value>> {
        let replies = self.invoke_per_slot(calls).await?;
        for r in &replies {
            if let Value::ServerError(e) = r {
                return Err(Error::redis("claim", e.clone().into()));
            }
        }
        Ok(replies)
    }

    /// True when `owner` holds `value` of index `n`: its shard's unique key
    /// names it and it exists (one pipeline in the owner's slot).
    async fn holds(&self, desc: &EntityDesc, n: usize, value: &[u8], owner: &str) -> Result<bool> {
        let claim = (String::new(), value.to_vec(), owner.to_owned());
        let holds = self.holds_many(desc, n, &[claim]).await?;
        Ok(holds.first() == Some(&true))
    }

    /// Releases `member`'s claims on `keys` (one call per slot, concurrently).
    pub(crate) async fn release(&self, keys: &[String], member: &str) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let calls = keys
            .iter()
            .map(|k| claim_call(k, ClaimMode::Release, member))
            .collect();
        self.claims(calls).await.map(|_| ())
    }

    /// [`release`](Self::release) after the write it follows has its
    /// outcome: a failure to release leaves a claim whose owner does not
    /// hold the value, which the next claimer takes over after the lease
    /// and `verify` reports; it does not change the write's outcome.
    async fn release_quietly(&self, keys: &[String], member: &str) {
        let _ = self.release(keys, member).await;
    }

    /// Settles the claims of step 2: a claim held by another is taken over
    /// if its owner let it go. `Ok(None)` when every value is the member's,
    /// else the index of a value held by another.
    async fn settle(
        &self,
        desc: &EntityDesc,
        member: &str,
        wanted: &[(usize, Vec<u8>, String)],
        answers: &[ClaimReply],
        granted: &mut Vec<String>,
    ) -> Result<Option<usize>> {
        for ((n, value, key), answer) in wanted.iter().zip(answers) {
            let ClaimReply::Held { owner, age_ms } = answer else {
                continue;
            };
            if *age_ms < CLAIM_LEASE_MS || self.holds(desc, *n, value, owner).await? {
                return Ok(Some(*n));
            }
            let reply = script::invoke::<Value, _>(
                &mut self.conn.clone(),
                &self.sent,
                &claim_call(key, ClaimMode::Takeover { found_owner: owner }, member),
            )
            .await
            .map_err(|e| Error::redis(key, e))?;
            match reply::claim(reply, key)? {
                ClaimReply::Granted => granted.push(key.clone()),
                ClaimReply::Mine => {}
                ClaimReply::Held { .. } => return Ok(Some(*n)),
            }
        }
        Ok(None)
    }

    /// Sends the plan's call and returns its raw reply (an error reply as
    /// the typed error), keeping the near cache and other sides in step.
    async fn write_reply(&self, plan: &WritePlan) -> Result<Value> {
        let reply =
            script::invoke::<Value, _>(&mut self.conn.clone(), &self.sent, &plan.call()).await;
        self.forget([plan]);
        reply.map_err(|e| plan.server_error(e))
    }

    /// A write of a type whose unique values have owner keys (see the
    /// module's description).
    pub(crate) async fn write_claimed(&self, plan: &WritePlan) -> Result<bool> {
        let desc = plan.desc;
        let member = plan.keys.member.as_str();
        let wanted = self.claims_wanted(plan);
        let mut first = plan.clone();
        first.keep_unique = true;
        let calls: Vec<Call<'static>> = wanted
            .iter()
            .map(|(_, _, k)| claim_call(k, ClaimMode::Claim, member))
            .collect();
        // Step 1: the marked write and the claims, in one wave.
        let (reply, claimed) =
            futures_util::future::join(self.write_reply(&first), self.claims(calls)).await;
        let answers: Vec<ClaimReply> = match claimed {
            Ok(replies) => replies
                .into_iter()
                .zip(&wanted)
                .map(|(r, (_, _, k))| reply::claim(r, k))
                .collect::<Result<_>>()?,
            Err(e) => {
                // The write may have gone through unchanged: it needs no claim.
                return match reply {
                    Ok(v) if reply::claim_refusal(&v).is_none() => plan.outcome(v),
                    _ => Err(e),
                };
            }
        };
        let mut granted: Vec<String> = wanted
            .iter()
            .zip(&answers)
            .filter(|(_, a)| **a == ClaimReply::Granted)
            .map(|((_, _, k), _)| k.clone())
            .collect();
        let stored = match reply {
            Ok(v) => match reply::claim_refusal(&v) {
                Some(stored) => stored,
                // No unique value changed: written, in one round trip (a
                // value claimed here had lost its owner key: it has it now);
                // or refused before any change (a condition, a version):
                // the claims made for it go.
                None => {
                    let outcome = plan.outcome(v);
                    if outcome.is_err() {
                        self.release_quietly(&granted, member).await;
                    }
                    return outcome;
                }
            },
            Err(e) => {
                self.release_quietly(&granted, member).await;
                return Err(e);
            }
        };
        // Step 2: every new value must be the entity's.
        if let Some(n) = self
            .settle(desc, member, &wanted, &answers, &mut granted)
            .await?
        {
            self.release_quietly(&granted, member).await;
            return Err(unique_violation(plan, n));
        }
        let written = match self.write_once(plan).await {
            Ok(w) => w,
            Err(e) => {
                self.release_quietly(&granted, member).await;
                return Err(e);
            }
        };
        // Step 3: the values it replaced are free.
        let replaced = self.replaced_owners(desc, &wanted, stored);
        self.release_quietly(&replaced, member).await;
        Ok(written)
    }

    /// The unique values with owner keys that `plan` writes: (index,
    /// escaped value, owner key).
    fn claims_wanted(&self, plan: &WritePlan) -> Vec<(usize, Vec<u8>, String)> {
        guarded(plan.desc)
            .filter_map(|n| match &plan.index_values[n] {
                IndexValue::Value(raw) => {
                    let v = escaped(raw);
                    let key = self.owner_of(plan.desc, n, &v);
                    Some((n, v, key))
                }
                _ => None,
            })
            .collect()
    }

    /// The owner keys of the values the entity held before the write
    /// (`stored`, one per unique index, from the refused first try) that it
    /// no longer holds.
    fn replaced_owners(
        &self,
        desc: &EntityDesc,
        wanted: &[(usize, Vec<u8>, String)],
        stored: Vec<Option<Vec<u8>>>,
    ) -> Vec<String> {
        let uniques = desc
            .indexes
            .iter()
            .enumerate()
            .filter(|(_, i)| i.kind == IndexKind::Unique);
        uniques
            .zip(stored)
            .filter(|((n, _), _)| guarded(desc).any(|g| g == *n))
            .filter_map(|((n, _), old)| {
                let old = old?;
                let kept = wanted.iter().any(|(w, v, _)| *w == n && *v == old);
                (!kept).then(|| self.owner_of(desc, n, &old))
            })
            .collect()
    }

    /// A delete of an entity of a type whose unique values have owner keys:
    /// its values are read, the entity deleted, then its values released
    /// (three round trips).
    pub(crate) async fn delete_claimed(&self, plan: &WritePlan) -> Result<bool> {
        let desc = plan.desc;
        let values = self.unique_values(desc, &plan.keys).await?;
        let deleted = self.write_once(plan).await?;
        self.release_quietly(&values, &plan.keys.member).await;
        Ok(deleted)
    }

    /// The owner keys of the unique values the entity holds now.
    async fn unique_values(
        &self,
        desc: &'static EntityDesc,
        keys: &EntityKeys,
    ) -> Result<Vec<String>> {
        let row = match self.rows(desc, std::slice::from_ref(keys)).await?.pop() {
            Some(Ok(Some(row))) => row,
            // Gone, or not readable: nothing of it to release.
            _ => return Ok(Vec::new()),
        };
        Ok(guarded(desc)
            .filter_map(|n| match (desc.indexes[n].source, desc.layout) {
                (IndexSource::Column(c), Layout::Hash | Layout::Strings | Layout::Json) => {
                    let raw = row.columns.get(c)?.as_ref()?;
                    Some(self.owner_of(desc, n, &escaped(raw)))
                }
                _ => None,
            })
            .collect())
    }

    /// The member that owns index `n`'s escaped `value` (the owner key's
    /// `owner`), for `find_unique`.
    pub(crate) async fn owner_named(
        &self,
        desc: &EntityDesc,
        n: usize,
        value: &[u8],
    ) -> Result<Option<String>> {
        let key = self.owner_of(desc, n, value);
        redis::cmd("HGET")
            .arg(&key)
            .arg("owner")
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&key, e))
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The owner keys' part of `verify` for a type whose unique values have
    /// them: every value an entity holds (its shard's unique key names it
    /// and it exists) has an owner key naming it, one holder per value, and
    /// no owner key older than the lease names an entity not holding it.
    pub(crate) async fn verify_owners(&self, desc: &'static EntityDesc) -> Result<Vec<Violation>> {
        let mut found = Vec::new();
        for n in guarded(desc).collect::<Vec<_>>() {
            found.extend(self.unowned_values(desc, n).await?);
            found.extend(self.stale_owners(desc, n).await?);
        }
        Ok(found)
    }

    /// Values of index `n` held by more than one entity, and values whose
    /// owner key does not name their one holder. Every shard's unique keys
    /// are walked page by page; each value held by an entity (its shard's
    /// key names it, and it exists) is looked up in its owner key. What is
    /// kept is the values found wrong: owner key -> the holders it does
    /// not name, and the one it names if that one holds the value too.
    async fn unowned_values(&self, desc: &'static EntityDesc, n: usize) -> Result<Vec<Violation>> {
        let field = desc.indexes[n].field;
        let first = keyspace::shard_space(desc, &self.ns, 0);
        let pattern = format!(
            "{}{{{}:*}}:{}",
            self.ns.as_str(),
            desc.prefix,
            &keyspace::index_scan_pattern(desc, &first, field)[first.as_str().len()..]
        );
        let prefixes: Vec<String> = keyspace::spaces(desc, &self.ns)
            .iter()
            .map(|space| keyspace::index_prefix(desc, space, field))
            .collect();
        let prefixes = &prefixes;
        let mut wrong: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let visit = |page| self.unowned_on_page(desc, n, prefixes, page);
        self.each_page(&pattern, visit, |found| {
            for (key, member, also) in found {
                let holders = wrong.entry(key).or_default();
                holders.insert(member);
                holders.extend(also);
            }
        })
        .await?;
        Ok(wrong
            .into_iter()
            .map(|(key, held)| match held.len() {
                1 => Violation::UnownedValue {
                    key,
                    member: held.into_iter().next().unwrap_or_default(),
                },
                _ => Violation::DuplicateUnique {
                    key,
                    members: held.into_iter().collect(),
                },
            })
            .collect())
    }

    /// One page of shard unique keys (of index `n`, spelled with one of
    /// `prefixes`): for each value an entity holds whose owner key does not
    /// name it, (owner key, that holder, the entity the owner key names if
    /// it holds the value too).
    async fn unowned_on_page(
        &self,
        desc: &'static EntityDesc,
        n: usize,
        prefixes: &[String],
        page: Vec<String>,
    ) -> Result<Vec<(String, String, Option<String>)>> {
        let keys: Vec<(String, Vec<u8>)> = page
            .into_iter()
            .filter_map(|k| {
                let value = prefixes
                    .iter()
                    .find_map(|p| k.strip_prefix(p.as_str()))?
                    .as_bytes()
                    .to_vec();
                Some((k, value))
            })
            .collect();
        let named = self.live_members_named(desc, &keys).await?;
        let held: Vec<(Vec<u8>, String)> = keys
            .into_iter()
            .zip(named)
            .filter_map(|((_, value), m)| Some((value, m?)))
            .collect();
        let owner_keys: Vec<String> = held
            .iter()
            .map(|(v, _)| self.owner_of(desc, n, v))
            .collect();
        let owners = self.owners_named(owner_keys.clone()).await?;
        // The values whose owner key does not name their holder, and
        // of those named owners, which hold the value too (one batch).
        let mut unnamed = Vec::new();
        let mut named_others = Vec::new();
        for (((value, member), key), owner) in held.into_iter().zip(owner_keys).zip(owners) {
            match owner.map(|(o, _)| o) {
                Some(o) if o == member => {}
                Some(o) => named_others.push(((key, value, o), member)),
                None => unnamed.push((key, member, None)),
            }
        }
        let (claims, members): (Vec<_>, Vec<_>) = named_others.into_iter().unzip();
        let holds = self.holds_many(desc, n, &claims).await?;
        // (owner key, a holder it does not name, the one it names if
        // that one holds the value too)
        let mut found = unnamed;
        for (((key, _, owner), member), holds) in claims.into_iter().zip(members).zip(holds) {
            found.push((key, member, holds.then_some(owner)));
        }
        Ok(found)
    }

    /// Owner keys of index `n` naming an entity that does not hold their
    /// value, walked page by page.
    async fn stale_owners(&self, desc: &'static EntityDesc, n: usize) -> Result<Vec<Violation>> {
        let pattern = keyspace::owner_scan_pattern(desc, &self.ns, desc.indexes[n].field);
        let head = &pattern[..pattern.len() - 2];
        let visit = |page: Vec<String>| async move {
            let named = self.owners_named(page.clone()).await?;
            // A younger claim may be a write under way.
            let claims: Vec<(String, Vec<u8>, String)> = page
                .into_iter()
                .zip(named)
                .filter_map(|(key, owner)| {
                    let (owner, age_ms) = owner?;
                    let value = key
                        .strip_prefix(head)
                        .and_then(|k| k.strip_suffix('}'))
                        .unwrap_or_default()
                        .as_bytes()
                        .to_vec();
                    (age_ms >= CLAIM_LEASE_MS).then_some((key, value, owner))
                })
                .collect();
            let holds = self.holds_many(desc, n, &claims).await?;
            Ok(claims
                .into_iter()
                .zip(holds)
                .filter(|(_, holds)| !holds)
                .map(|((key, _, owner), _)| Violation::StaleOwner { key, member: owner })
                .collect::<Vec<_>>())
        };
        let mut found = Vec::new();
        self.each_page(&pattern, visit, |stale| found.extend(stale))
            .await?;
        Ok(found)
    }

    /// [`holds`](Self::holds) for many (key, escaped value, owner): one
    /// pipeline per slot of the owners' shard keys, concurrently.
    async fn holds_many(
        &self,
        desc: &EntityDesc,
        n: usize,
        claims: &[(String, Vec<u8>, String)],
    ) -> Result<Vec<bool>> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let local: Vec<(String, String)> = claims
            .iter()
            .map(|(_, value, owner)| {
                let space = keyspace::entity_space(desc, &self.ns, owner);
                let key = keyspace::index_key(desc, &space, desc.indexes[n].field, value);
                (String::from_utf8_lossy(&key).into_owned(), owner.clone())
            })
            .collect();
        self.per_slot(
            &local,
            |(k, _)| k.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for (k, owner) in &group {
                    pipe.cmd("GET")
                        .arg(k)
                        .cmd("EXISTS")
                        .arg(keyspace::ttl_key(desc, &self.ns, owner));
                }
                let replies: Vec<(Option<String>, i64)> = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0].0, e))?;
                Ok(group
                    .iter()
                    .zip(replies)
                    .map(|((_, owner), (named, alive))| {
                        named.as_deref() == Some(owner.as_str()) && alive == 1
                    })
                    .collect())
            },
        )
        .await
    }

    /// The member each shard unique key (key, escaped value) names, `None`
    /// where it names none or an entity that does not exist (one pipeline
    /// per slot).
    async fn live_members_named(
        &self,
        desc: &'static EntityDesc,
        keys: &[(String, Vec<u8>)],
    ) -> Result<Vec<Option<String>>> {
        // (A SCAN page may be empty; so would the pipelines be.)
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.per_slot(
            keys,
            |(k, _)| k.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for (k, _) in &group {
                    pipe.cmd("GET").arg(k);
                }
                let named: Vec<Option<String>> = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0].0, e))?;
                let mut pipe = redis::pipe();
                for m in &named {
                    pipe.cmd("EXISTS").arg(keyspace::ttl_key(
                        desc,
                        &self.ns,
                        m.as_deref().unwrap_or(""),
                    ));
                }
                let alive: Vec<i64> = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0].0, e))?;
                // A stale shard entry is verify's StaleEntry already.
                Ok(named
                    .into_iter()
                    .zip(alive)
                    .map(|(m, a)| m.filter(|_| a == 1))
                    .collect::<Vec<_>>())
            },
        )
        .await
    }

    /// The owner and the age of the claim (ms) of each owner key, `None`
    /// for one that does not exist (one pipeline per slot, concurrently).
    async fn owners_named(&self, keys: Vec<String>) -> Result<Vec<Option<(String, u64)>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        self.per_slot(
            &keys,
            |k| k.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for k in &group {
                    pipe.cmd("HMGET").arg(k).arg("owner").arg("at");
                }
                let replies: Vec<(Option<String>, Option<u64>)> = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0], e))?;
                Ok(replies
                    .into_iter()
                    .map(|(o, at)| o.map(|o| (o, now.saturating_sub(at.unwrap_or(0)))))
                    .collect())
            },
        )
        .await
    }

    /// Repairs an owner key `verify` reported: a stale owner's claim is
    /// released if that owner still does not hold the value; an unowned
    /// value is claimed for its holder (taken over from an owner that does
    /// not hold it). `Err` with the reason when it cannot be.
    pub(crate) async fn repair_owner(
        &self,
        desc: &'static EntityDesc,
        v: &Violation,
    ) -> Result<std::result::Result<(), String>> {
        let (key, member) = match v {
            Violation::StaleOwner { key, member } | Violation::UnownedValue { key, member } => {
                (key, member)
            }
            _ => return Ok(Ok(())),
        };
        let Some(n) = guarded(desc).find(|n| {
            let head = keyspace::owner_key(desc, &self.ns, desc.indexes[*n].field, b"");
            key.starts_with(&head[..head.len() - 1])
        }) else {
            return Ok(Err("not an owner key of this type".into()));
        };
        let head = keyspace::owner_key(desc, &self.ns, desc.indexes[n].field, b"");
        let value = key
            .strip_prefix(&head[..head.len() - 1])
            .and_then(|k| k.strip_suffix('}'))
            .unwrap_or_default()
            .as_bytes()
            .to_vec();
        if let Violation::StaleOwner { .. } = v {
            if !self.holds(desc, n, &value, member).await? {
                self.release(std::slice::from_ref(key), member).await?;
            }
            return Ok(Ok(()));
        }
        let reply = script::invoke::<Value, _>(
            &mut self.conn.clone(),
            &self.sent,
            &claim_call(key, ClaimMode::Claim, member),
        )
        .await
        .map_err(|e| Error::redis(key, e))?;
        let answer = reply::claim(reply, key)?;
        let mut granted = Vec::new();
        let wanted = [(n, value, key.clone())];
        match self.settle(desc, member, &wanted, &[answer], &mut granted).await? {
            None => Ok(Ok(())),
            Some(_) => Ok(Err(
                "another entity holds the claim, younger than the lease or holding the value: decide which keeps it".into(),
            )),
        }
    }
}
