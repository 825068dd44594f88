//! Entities a type's first index leaves behind on a cluster.
//!
//! On a cluster a type without indexes keeps each entity under its own hash
//! tag (`user:{9}`); once the type has an index it is sharded and keeps it
//! in its shard (`{user:3}:user:9`). Entities written before the index was
//! added are where the type without indexes kept them, which the indexed
//! type does not read. `verify` reports them ([`Violation::Unplaced`]) and
//! `reindex` (or `repair`) moves each one, every key of it (`DUMP`, then
//! `RESTORE` under the shard's spelling with the remaining TTL, then `DEL`
//! of the old key), before it indexes. One server has one spelling for both
//! (`user:9`), so nothing moves there.

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::verify::Violation;
use crate::schema::entity::EntityDesc;
use redis::aio::ConnectionLike;
use redis::Value;
use std::collections::BTreeMap;

/// `desc` as it was without indexes: where it kept its entities then.
pub(crate) fn unindexed(desc: &EntityDesc) -> EntityDesc {
    EntityDesc {
        indexes: &[],
        group: None,
        shards: 1,
        ..*desc
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The members of `desc` stored where the type without indexes kept
    /// them, with their keys; none unless the type is sharded.
    pub(crate) async fn unplaced(
        &self,
        desc: &EntityDesc,
    ) -> Result<BTreeMap<String, Vec<String>>> {
        let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if !keyspace::sharded(desc, &self.ns) || desc.group.is_some() {
            return Ok(found);
        }
        let plain = unindexed(desc);
        for key in self
            .keys()
            .scan(&keyspace::entity_scan_pattern(&plain, &self.ns))
            .await?
        {
            if let Some(m) = keyspace::member_of_key(&plain, &self.ns, &key) {
                found.entry(m).or_default().push(key);
            }
        }
        Ok(found)
    }

    /// What `verify` reports of [`unplaced`](Self::unplaced) entities.
    pub(crate) async fn verify_placement(&self, desc: &EntityDesc) -> Result<Vec<Violation>> {
        let plain = unindexed(desc);
        Ok(self
            .unplaced(desc)
            .await?
            .into_keys()
            .map(|member| Violation::Unplaced {
                key: keyspace::entity_key(&plain, &self.ns, &member),
                member,
            })
            .collect())
    }

    /// Moves every key of each of `members` (as [`unplaced`](Self::unplaced)
    /// found them) to its spelling in the entity's shard; returns how many
    /// entities moved. A key already there is replaced: the old spelling is
    /// the one the entity was last written in before the index came.
    pub(crate) async fn place(
        &self,
        desc: &EntityDesc,
        members: &BTreeMap<String, Vec<String>>,
    ) -> Result<usize> {
        let plain = unindexed(desc);
        // (old key, new key)
        let mut moves: Vec<(String, String)> = Vec::new();
        for (m, keys) in members {
            let old_base = EntityKeys::new(&plain, &self.ns, m.clone()).base;
            let new_base = EntityKeys::new(desc, &self.ns, m.clone()).base;
            for k in keys {
                if let Some(suffix) = k.strip_prefix(&old_base) {
                    moves.push((k.clone(), format!("{new_base}{suffix}")));
                }
            }
        }
        for chunk in moves.chunks(500) {
            self.move_keys(chunk).await?;
        }
        Ok(members.len())
    }

    /// Moves a chunk of keys (old, new): each old key's value and TTL
    /// (DUMP, PTTL) restored under the new spelling, then the old key
    /// deleted.
    async fn move_keys(&self, chunk: &[(String, String)]) -> Result<()> {
        let restores: Vec<(String, String, Vec<u8>, i64)> = chunk
            .iter()
            .zip(self.dumps(chunk).await?)
            .filter_map(|((old, new), (data, ttl))| match data {
                Value::BulkString(b) => Some((new.clone(), old.clone(), b, ttl.max(0))),
                _ => None,
            })
            .collect();
        // Written under the new spelling, one pipeline per new slot...
        self.per_slot(
            &restores,
            |(new, ..)| new.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for (new, _, data, ttl) in &group {
                    pipe.cmd("RESTORE")
                        .arg(new)
                        .arg(*ttl)
                        .arg(data.as_slice())
                        .arg("REPLACE")
                        .ignore();
                }
                let () = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0].0, e))?;
                Ok(vec![(); group.len()])
            },
        )
        .await?;
        // ...then the old keys go.
        self.per_slot(
            &restores,
            |(_, old, ..)| old.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for (_, old, ..) in &group {
                    pipe.cmd("DEL").arg(old).ignore();
                }
                let () = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0].1, e))?;
                Ok(vec![(); group.len()])
            },
        )
        .await?;
        Ok(())
    }

    /// The old keys' values and TTLs (-1 for none), one pipeline per old
    /// slot.
    async fn dumps(&self, chunk: &[(String, String)]) -> Result<Vec<(Value, i64)>> {
        self.per_slot(
            chunk,
            |(old, _)| old.as_str(),
            |group| async move {
                let mut pipe = redis::pipe();
                for (old, _) in &group {
                    pipe.cmd("DUMP").arg(old).cmd("PTTL").arg(old);
                }
                let flat: Vec<Value> = pipe
                    .query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0].0, e))?;
                let mut it = flat.into_iter();
                Ok((0..group.len())
                    .map(|_| {
                        let data = it.next().unwrap_or(Value::Nil);
                        let ttl = match it.next() {
                            Some(Value::Int(ms)) => ms,
                            _ => -1,
                        };
                        (data, ttl)
                    })
                    .collect())
            },
        )
        .await
    }
}
