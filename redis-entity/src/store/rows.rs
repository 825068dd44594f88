//! Reading entity records: from the near cache when the store has one for
//! the type, the rest in one pipelined round trip (over the near cache's
//! tracking connection, so that Redis tells it when they change).

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::near::Cached;
use crate::plan::read;
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
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let Some(near) = self
            .near
            .as_ref()
            .filter(|n| n.shared.caches(desc.type_name))
        else {
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
            return Ok(keys
                .iter()
                .map(|k| read::decode_read(desc, k, &mut it))
                .collect());
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
        // Tickets before the read is sent: an invalidation processed after
        // this keeps the reply out of the cache.
        let tickets: Vec<_> = missing
            .iter()
            .map(|&i| shared.ticket(&keys[i].base))
            .collect();
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in &missing {
            read::read(desc, &keys[i], &mut pipe);
            for k in keys[i].read_keys() {
                pipe.cmd("PTTL").arg(k);
            }
        }
        let sent = Instant::now();
        let replies = near.tracking.query(&pipe, &keys[missing[0]].base).await?;
        let mut it = replies.into_iter();
        for (&i, ticket) in missing.iter().zip(tickets) {
            let k = &keys[i];
            let record = read::decode_read(desc, k, &mut it);
            // The record lives in Redis until its first key with a TTL
            // expires; measured from before the read, so never later.
            let deadline = k
                .read_keys()
                .filter_map(|_| match it.next() {
                    Some(Value::Int(ms)) if ms >= 0 => {
                        Some(sent + Duration::from_millis(ms as u64))
                    }
                    _ => None,
                })
                .min();
            if let Ok(row) = &record {
                let hook = shared.before_insert.read().ok().and_then(|h| h.clone());
                if let Some(hook) = hook {
                    hook(&k.base);
                }
                shared.insert(
                    k.base.clone(),
                    ticket,
                    Cached::new(&k.base, row.clone(), deadline),
                );
            }
            out[i] = Some(record);
        }
        Ok(out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect())
    }
}
