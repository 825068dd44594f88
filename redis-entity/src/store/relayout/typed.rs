//! Relations and timelines moved to the other layout: typed, so each is
//! moved by its own call once the entities of its types have (after the
//! final pass, see the module above).

use super::{member, tally};
use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::entity::Entity;
use crate::store::migrate::Progress;
use crate::store::relation::Relation;
use crate::store::timeline::Timeline;
use crate::store::Store;
use redis::aio::ConnectionLike;
use std::collections::BTreeSet;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Makes `rel` in `to` hold the pairs it holds here: a walk of the
    /// `A`s (as [`relayout_batch`](Self::relayout_batch) pages them), each
    /// one's set read here and there, each missing pair related in `to`
    /// (both sides, in its layout's way; counted in `migrated`) and each
    /// pair `to` has and this store no longer has unrelated there
    /// (`deleted`). Run it after the final pass of the entities of both
    /// types: a pair whose side is missing in `to` is reported in
    /// `failed`. An `A` gone from this store lost its pairs in `to` when
    /// the prune deleted it there.
    pub(crate) async fn relayout_relation<A: Entity, B: Entity, D>(
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
                let here = self.related(rel, &a).await?;
                let there = to.related(rel, &a).await?;
                let held: BTreeSet<String> = here.iter().map(member::<B>).collect();
                let kept: BTreeSet<String> = there.iter().map(member::<B>).collect();
                let relate = here.iter().filter(|b| !kept.contains(&member::<B>(b)));
                let done =
                    futures_util::future::join_all(relate.map(|b| to.relate(rel, &a, b))).await;
                for r in done {
                    tally(r, None, &mut total.migrated, &mut total.failed);
                }
                let gone = there.iter().filter(|b| !held.contains(&member::<B>(b)));
                let done =
                    futures_util::future::join_all(gone.map(|b| to.unrelate(rel, &a, b))).await;
                for r in done {
                    tally(r, None, &mut total.deleted, &mut total.failed);
                }
            }
        }
        total.done = true;
        Ok(total)
    }

    /// Copies every owner's `timeline` into `to` (its entries in order,
    /// replacing what `to` held for it; an owner with none here has none
    /// there): a walk of the owners, one read and one pipelined write per
    /// owner. Returns the owners copied.
    pub(crate) async fn relayout_timeline<O: Entity, P: Entity, D>(
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
                let list = timeline.key(&to.ns, &pk);
                let mut pipe = redis::pipe();
                pipe.atomic().cmd("DEL").arg(&list).ignore();
                if !listed.is_empty() {
                    let owner_key = keyspace::entity_key(O::DESC, &to.ns, &m);
                    pipe.cmd("RPUSH")
                        .arg(&list)
                        .arg(&listed)
                        .ignore()
                        .cmd("HSET")
                        .arg(keyspace::relation_register(&owner_key))
                        .arg(timeline.name())
                        .arg(&entry)
                        .ignore();
                }
                let () = pipe
                    .query_async(&mut to.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&list, e))?;
                if !listed.is_empty() {
                    total.migrated += 1;
                }
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
    total.scanned += page.len() as u64;
    super::decoded(page, &mut total.failed)
        .into_iter()
        .map(|(pk, _)| (member::<E>(&pk), pk))
        .collect()
}
