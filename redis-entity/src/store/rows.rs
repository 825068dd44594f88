//! Reading entity records: from the near cache when the store has one for
//! the type, the rest in one pipelined round trip (over the near cache's
//! tracking connection, so that Redis tells it when they change).

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::near::{Cached, NearCache, Ticket};
use crate::plan::read;
use crate::plan::write::WritePlan;
use crate::schema::entity::{EntityDesc, Row};
use redis::aio::ConnectionLike;
use redis::Value;
use std::time::{Duration, Instant};

/// One record as read: `None` when the entity is not stored, an error when
/// what is stored cannot be read as a record of the type.
pub(crate) type Record = Result<Option<Row>>;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The records of `keys`, in their order.
    pub(crate) async fn rows(
        &self,
        desc: &'static EntityDesc,
        keys: &[EntityKeys],
    ) -> Result<Vec<Record>> {
        let op = super::observe::Op::Read {
            entity: desc.type_name,
            n: keys.len(),
        };
        op.run(&self.counters, self.rows_untraced(desc, keys)).await
    }

    async fn rows_untraced(
        &self,
        desc: &'static EntityDesc,
        keys: &[EntityKeys],
    ) -> Result<Vec<Record>> {
        let cached = self
            .near
            .as_ref()
            .is_some_and(|n| n.shared.caches(desc.type_name));
        let cluster = self.namespace().layout() == crate::schema::escape::KeyLayout::Cluster;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if !cached && (!cluster || keys.len() == 1) {
            // The common read: one pipeline over the store's connection.
            return self.rows_uncached(desc, keys).await;
        }
        // Boxed: the near cache's reads and a cluster's slots would make
        // every read's future their size (moved on every call).
        Box::pin(self.rows_routed(desc, keys, cached, cluster)).await
    }

    /// The records of `keys` read through the near cache, or over a
    /// cluster's slots.
    async fn rows_routed(
        &self,
        desc: &'static EntityDesc,
        keys: &[EntityKeys],
        cached: bool,
        cluster: bool,
    ) -> Result<Vec<Record>> {
        if !cluster {
            return self.rows_on_one_slot(desc, keys).await;
        }
        if !cached {
            return self.rows_by_slot(desc, keys).await;
        }
        // One pipeline reads one slot on a cluster.
        self.per_slot(
            keys,
            |k| k.base.as_str(),
            |group| async move { self.rows_on_one_slot(desc, &group).await },
        )
        .await
    }

    async fn rows_on_one_slot(
        &self,
        desc: &'static EntityDesc,
        keys: &[EntityKeys],
    ) -> Result<Vec<Record>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let Some(near) = self
            .near
            .as_ref()
            .filter(|n| n.shared.caches(desc.type_name))
        else {
            return self.rows_uncached(desc, keys).await;
        };
        // Lets the tracking connection's task take in the invalidations
        // that have arrived before memory answers: on a single-threaded
        // runtime (or the blocking store's) it runs only when this task
        // yields, and a loop of hits would otherwise never yield.
        tokio::task::yield_now().await;
        let shared = &near.shared;
        let mut out: Vec<Option<Record>> = keys
            .iter()
            .map(|k| shared.lookup(&k.base).map(Ok))
            .collect();
        let missing: Vec<usize> = (0..keys.len()).filter(|&i| out[i].is_none()).collect();
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        // One operation at a time per entity over the cache's connection
        // (see `near`), then tickets before the read is sent: an
        // invalidation processed after this keeps the reply out of the cache.
        let _held = shared
            .lock(missing.iter().map(|&i| keys[i].base.as_str()))
            .await;
        let tickets: Vec<_> = missing
            .iter()
            .map(|&i| shared.ticket(&keys[i].base))
            .collect();
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in &missing {
            read_with_ttl(desc, &keys[i], &mut pipe);
        }
        let first = &keys[missing[0]].base;
        let sent = Instant::now();
        let mut replies = near.route.to(first).await?.query(&pipe, first).await?;
        if replies.iter().any(crate::near::route::redirected) {
            // The slot moved: nothing of it is cached any more, and the
            // read goes to the master serving it now (a slot still moving
            // is read over the store's connection, not cached).
            near.route.moved().await?;
            replies = near.route.to(first).await?.query(&pipe, first).await?;
            if replies.iter().any(crate::near::route::redirected) {
                return self.rows_uncached(desc, keys).await;
            }
        }
        let mut it = replies.into_iter();
        for (&i, ticket) in missing.iter().zip(tickets) {
            out[i] = Some(keep(near, desc, &keys[i], ticket, sent, &mut it));
        }
        Ok(out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect())
    }

    /// The records of `keys` (in any slots of a cluster), read over the
    /// store's connection: one pipeline per slot, those of the slots one
    /// master serves sent to it as one (see [`Store::read_slots`]).
    async fn rows_by_slot(
        &self,
        desc: &'static EntityDesc,
        keys: &[EntityKeys],
    ) -> Result<Vec<Record>> {
        let slots = super::slot_groups(keys, |k| k.base.as_str());
        if slots.len() < 2 {
            return self.rows_uncached(desc, keys).await;
        }
        let reads: Vec<(&str, redis::Pipeline)> = slots
            .iter()
            .map(|slot| {
                let mut pipe = redis::pipe();
                pipe.ignore_errors();
                for &i in slot {
                    read::read(desc, &keys[i], &mut pipe);
                }
                (keys[slot[0]].base.as_str(), pipe)
            })
            .collect();
        let replies = self.read_slots(&reads, true).await;
        let mut out: Vec<Option<Record>> = (0..keys.len()).map(|_| None).collect();
        for (slot, reply) in slots.iter().zip(replies) {
            let first = &keys[slot[0]].base;
            let mut it = reply.map_err(|e| Error::redis(first, e))?.into_iter();
            for &i in slot {
                out[i] = Some(read::decode_read(desc, &keys[i], &mut it));
            }
        }
        Ok(out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect())
    }

    /// The records of `keys` (one slot), read over the store's connection.
    async fn rows_uncached(
        &self,
        desc: &'static EntityDesc,
        keys: &[EntityKeys],
    ) -> Result<Vec<Record>> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for k in keys {
            read::read(desc, k, &mut pipe);
        }
        let replies: Vec<Value> = pipe
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&keys[0].base, e))?;
        let mut it = replies.into_iter();
        Ok(keys
            .iter()
            .map(|k| read::decode_read(desc, k, &mut it))
            .collect())
    }

    /// Whether [`Store::rows_each`] reads the records of `desc` one by one
    /// as they are decoded: a hash without `#[hash]` maps (one `HGETALL`
    /// per record), on one server, of a type the near cache does not hold.
    fn reads_each_in_place(&self, desc: &'static EntityDesc) -> bool {
        desc.layout == crate::schema::entity::Layout::Hash
            && desc.maps.is_empty()
            && self.namespace().layout() != crate::schema::escape::KeyLayout::Cluster
            && !self
                .near
                .as_ref()
                .is_some_and(|n| n.shared.caches(desc.type_name))
    }

    /// The records of `members`, in one round trip where the store can
    /// (as [`Store::rows`]), handed to `each` in their order with the
    /// record's keys (a query's page, `get_many`). Where the reads allow it
    /// (`reads_each_in_place`), each record is decoded as it is taken and
    /// neither every record's keys nor every row is held at once: a page of
    /// thousands of records spent a tenth of the client's time on those two
    /// arrays (allocated, paged in and given back on every query:
    /// benches/NOTES.md, *The client's work per record and per write*).
    /// Elsewhere (cluster slots, the near cache, other layouts), `rows`.
    pub(crate) async fn rows_each(
        &self,
        desc: &'static EntityDesc,
        members: Vec<String>,
        mut each: impl FnMut(EntityKeys, Record),
    ) -> Result<()> {
        if !self.reads_each_in_place(desc) {
            let keys = crate::plan::query::member_keys(desc, &self.ns, members);
            let records = self.rows(desc, &keys).await?;
            for (k, record) in keys.into_iter().zip(records) {
                each(k, record);
            }
            return Ok(());
        }
        let Some(first) = members.first() else {
            return Ok(());
        };
        let first = crate::keyspace::entity_key(desc, &self.ns, first);
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for m in &members {
            read::read_hash(
                desc,
                &crate::keyspace::entity_key(desc, &self.ns, m),
                &mut pipe,
            );
        }
        let op = super::observe::Op::Read {
            entity: desc.type_name,
            n: members.len(),
        };
        let read = async {
            let mut reader = self.reader();
            pipe.query_async::<Vec<Value>>(&mut reader)
                .await
                .map_err(|e| Error::redis(&first, e))
        };
        let replies = op.run(&self.counters, read).await?;
        let mut it = replies.into_iter();
        for m in members {
            let keys = EntityKeys::for_record(desc, &self.ns, m);
            let record = read::decode_read(desc, &keys, &mut it);
            each(keys, record);
        }
        Ok(())
    }

    /// A write of an entity of a type the near cache holds: sent over the
    /// cache's connection, with a read of the entity after it in the same
    /// round trip, so that the record is kept fresh (tracked again) instead
    /// of dropped, and the store's next read of it is a hit. The connection
    /// tracks with `NOLOOP`, so the write's own change does not invalidate
    /// what it reads back; another client's change after the read does.
    pub(crate) async fn write_through(&self, near: &NearCache, plan: &WritePlan) -> Result<bool> {
        let (desc, keys) = (plan.desc, &plan.keys);
        let _held = near.shared.lock(std::iter::once(keys.base.as_str())).await;
        let ticket = near.shared.ticket(&keys.base);
        let sent = Instant::now();
        let (reply, rest) = near
            .route
            .to(&keys.base)
            .await?
            .invoke_then(&self.sent, &plan.call(), plan.key(), |pipe| {
                read_with_ttl(desc, keys, pipe)
            })
            .await
            .inspect_err(|_| near.shared.invalidate(keys.base.as_bytes()))?;
        if crate::near::route::redirected(&reply) {
            // Not applied there: the slot moved. The cache forgets it and
            // the write goes over the store's connection.
            near.route.moved().await?;
            let reply =
                crate::script::invoke::<Value, _>(&mut self.conn.clone(), &self.sent, &plan.call())
                    .await;
            near.shared.invalidate(keys.base.as_bytes());
            let reply = reply.map_err(|e| plan.server_error(e))?;
            self.unlink_away(&keys.member, &crate::script::reply::away(&reply))
                .await?;
            return plan.outcome(reply);
        }
        let _ = keep(near, desc, keys, ticket, sent, &mut rest.into_iter());
        // A delete's other sides in other slots (see `across`).
        self.unlink_away(&keys.member, &crate::script::reply::away(&reply))
            .await?;
        plan.outcome(reply)
    }
}

/// The read of an entity and the `PTTL` of each key it reads.
fn read_with_ttl(desc: &'static EntityDesc, keys: &EntityKeys, pipe: &mut redis::Pipeline) {
    read::read(desc, keys, pipe);
    for k in keys.read_keys() {
        pipe.cmd("PTTL").arg(k);
    }
}

/// Takes the replies of [`read_with_ttl`] and keeps the record in the
/// cache, unless `ticket` says an invalidation came since it was taken.
fn keep(
    near: &NearCache,
    desc: &'static EntityDesc,
    keys: &EntityKeys,
    ticket: Ticket,
    sent: Instant,
    it: &mut impl Iterator<Item = Value>,
) -> Record {
    let record = read::decode_read(desc, keys, it);
    // The record lives in Redis until its first key with a TTL expires;
    // measured from before the read, so never later.
    let deadline = keys
        .read_keys()
        .filter_map(|_| match it.next() {
            Some(Value::Int(ms)) if ms >= 0 => Some(sent + Duration::from_millis(ms as u64)),
            _ => None,
        })
        .min();
    if let Ok(row) = &record {
        let shared = &near.shared;
        let hook = shared.before_insert.read().ok().and_then(|h| h.clone());
        if let Some(hook) = hook {
            hook(&keys.base);
        }
        shared.insert(
            keys.base.clone(),
            ticket,
            Cached::new(&keys.base, row.clone(), deadline),
        );
    }
    record
}
