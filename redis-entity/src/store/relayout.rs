//! Moving a keyspace to the other key layout: from one server to a Redis
//! Cluster (or back), the entities of each type copied into a store of the
//! other layout, which writes every key and index entry in its own form.
//!
//! One batch is one page of the source's walk of the type ([`Store::scan`]:
//! SCAN or SSCAN, never KEYS; shard after shard on a cluster), one
//! pipelined read of the entities' remaining TTLs, and one batch of writes
//! on the destination (each entity atomic, its indexes included, its TTL
//! kept). The cursor of each batch is reported, so an interrupted move
//! resumes where it stopped; copying again is harmless (saves are upserts).
//! Relations and timelines are typed, so they move with
//! [`Store::relayout_relation`] and [`Store::relayout_timeline`] once their
//! entities have. The source is left as it was: drop it once the
//! destination is checked (`verify` on it).
//!
//! ```no_run
//! # use redis_entity::{RedisEntity, Store};
//! # #[derive(RedisEntity)] struct User { #[pk] id: u64, #[index] country: String }
//! # async fn run() -> redis_entity::Result<()> {
//! let old = Store::connect("redis://10.0.0.1:6379/").await?;
//! let new = Store::connect_cluster(&["redis://10.0.0.2:7000/", "redis://10.0.0.3:7000/"]).await?;
//! let done = old.relayout::<User, _>(&new, 0, 500, |p| eprintln!("{} copied", p.migrated)).await?;
//! assert!(done.failed.is_empty());
//! # Ok(()) }
//! ```

use super::migrate::Progress;
use super::relation::Relation;
use super::timeline::Timeline;
use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::entity::Entity;
use redis::aio::ConnectionLike;
use std::time::Duration;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Copies one page of `E` into `to`, from `cursor` (0 starts; a page
    /// holds about `count` entities). Records that do not decode are
    /// reported in `failed` with their key, and not copied.
    pub async fn relayout_batch<E: Entity, D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut walk = self.scan_from::<E>(cursor, count);
        let page = walk.next_page().await?.unwrap_or_default();
        let mut out = Progress {
            cursor: walk.cursor(),
            done: walk.cursor() == 0,
            scanned: page.len() as u64,
            ..Progress::default()
        };
        let mut entities = Vec::with_capacity(page.len());
        for record in page {
            match record {
                Ok(e) => entities.push(e),
                Err(e) => out.failed.push((error_key(&e), e.to_string())),
            }
        }
        if entities.is_empty() {
            return Ok(out);
        }
        let ttls = self.remaining_ttls(&entities).await?;
        let plans = entities
            .iter()
            .zip(&ttls)
            .map(|(e, ttl)| to.save_plan(e, false, *ttl))
            .collect::<Result<Vec<_>>>()?;
        for (plan, r) in plans.iter().zip(to.write_many(&plans).await?) {
            match r {
                Ok(_) => out.migrated += 1,
                Err(e) => out.failed.push((plan.key().to_owned(), e.to_string())),
            }
        }
        Ok(out)
    }

    /// Copies every stored `E` into `to`, batch after batch from `cursor`,
    /// calling `progress` after each with the totals so far.
    pub async fn relayout<E: Entity, D>(
        &self,
        to: &Store<D>,
        cursor: u64,
        count: usize,
        mut progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut total = Progress {
            cursor,
            ..Progress::default()
        };
        loop {
            let batch = self.relayout_batch::<E, D>(to, total.cursor, count).await?;
            total.add(batch);
            progress(&total);
            if total.done {
                return Ok(total);
            }
        }
    }

    /// The remaining TTL of each entity (`None`: none), one pipeline per
    /// slot.
    async fn remaining_ttls<E: Entity>(&self, entities: &[E]) -> Result<Vec<Option<Duration>>> {
        let keys: Vec<String> = entities
            .iter()
            .map(|e| {
                let mut m = String::new();
                e.write_own_member(&mut m);
                keyspace::ttl_key(E::DESC, &self.ns, &m)
            })
            .collect();
        self.per_slot(
            &keys,
            |k| k.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for k in &group {
                    pipe.cmd("PTTL").arg(k);
                }
                let ms: Vec<i64> = pipe
                    .query_async(&mut self.reader())
                    .await
                    .map_err(|e| Error::redis(&group[0], e))?;
                Ok(ms
                    .into_iter()
                    .map(|ms| (ms > 0).then(|| Duration::from_millis(ms as u64)))
                    .collect())
            },
        )
        .await
    }

    /// Relates again in `to` every pair `rel` holds here: a walk of the
    /// `A`s (as [`relayout_batch`](Self::relayout_batch) pages them), each
    /// one's set read, each pair related in `to` (both sides, in its
    /// layout's way). Run it after the entities of both types have moved:
    /// a pair whose side is missing in `to` is reported in `failed`.
    /// Returns the pairs related in `migrated`.
    pub async fn relayout_relation<A: Entity, B: Entity, D>(
        &self,
        rel: &Relation<A, B>,
        to: &Store<D>,
        count: usize,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut total = Progress::default();
        let mut walk = self.scan::<A>(count);
        while let Some(page) = walk.next_page().await? {
            for (_, a) in owners_of_page(page, &mut total) {
                let pairs = self.related(rel, &a).await?;
                let done =
                    futures_util::future::join_all(pairs.iter().map(|b| to.relate(rel, &a, b)))
                        .await;
                for r in done {
                    match r {
                        Ok(_) => total.migrated += 1,
                        Err(e) => total.failed.push((error_key(&e), e.to_string())),
                    }
                }
            }
        }
        total.done = true;
        Ok(total)
    }

    /// Copies every owner's `timeline` into `to` (its entries in order,
    /// replacing what `to` held for it): a walk of the owners, one read and
    /// one pipelined write per owner. Returns the owners copied.
    pub async fn relayout_timeline<O: Entity, P: Entity, D>(
        &self,
        timeline: &Timeline<O, P>,
        to: &Store<D>,
        count: usize,
    ) -> Result<Progress>
    where
        D: ConnectionLike + Clone + Send + Sync,
    {
        let mut total = Progress::default();
        let mut walk = self.scan::<O>(count);
        let entry = keyspace::timeline_entry(P::DESC, &to.ns);
        while let Some(page) = walk.next_page().await? {
            for (m, pk) in owners_of_page(page, &mut total) {
                let from = timeline.key(&self.ns, &pk);
                let listed: Vec<Vec<u8>> = self
                    .read_cmd(redis::cmd("LRANGE").arg(&from).arg(0).arg(-1), &from)
                    .await?;
                if listed.is_empty() {
                    continue;
                }
                let list = timeline.key(&to.ns, &pk);
                let owner_key = keyspace::entity_key(O::DESC, &to.ns, &m);
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("DEL")
                    .arg(&list)
                    .ignore()
                    .cmd("RPUSH")
                    .arg(&list)
                    .arg(&listed)
                    .ignore()
                    .cmd("HSET")
                    .arg(keyspace::relation_register(&owner_key))
                    .arg(timeline.name())
                    .arg(&entry)
                    .ignore();
                let () = pipe
                    .query_async(&mut to.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&list, e))?;
                total.migrated += 1;
            }
        }
        total.done = true;
        Ok(total)
    }
}

/// The members and pks of a page of a walk of `E`, counted as scanned; a
/// record that does not decode is reported in `failed` (its relations or
/// timeline are not copied).
fn owners_of_page<E: Entity>(page: Vec<Result<E>>, total: &mut Progress) -> Vec<(String, E::Pk)> {
    let mut owners = Vec::with_capacity(page.len());
    for record in page {
        total.scanned += 1;
        match record {
            Ok(e) => {
                let mut m = String::new();
                e.write_own_member(&mut m);
                if let Some(pk) = E::read_member(&m) {
                    owners.push((m, pk));
                }
            }
            Err(e) => total.failed.push((error_key(&e), e.to_string())),
        }
    }
    owners
}

/// The key an error names, for a progress report.
fn error_key(e: &Error) -> String {
    match e {
        Error::NotFound { key }
        | Error::Redis { key, .. }
        | Error::WrongType { key, .. }
        | Error::Decode { key, .. }
        | Error::MissingField { key, .. }
        | Error::UnexpectedReply { key, .. } => key.clone(),
        _ => String::new(),
    }
}
