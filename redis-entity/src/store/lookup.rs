//! `find_unique` in one round trip where the store can: the owner the
//! unique key names and the owner's hash read by one read-only script
//! (lua/find_unique.lua) instead of a `GET` and then an `HGETALL`. What it
//! reads is checked where the two-step lookup's reads are (`find_unique_at`:
//! the record must still hold the value; a stale owner key is repaired).

use super::rows::Record;
use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::{self, EntityKeys};
use crate::plan::{query, read};
use crate::schema::entity::{EntityDesc, Layout};
use crate::schema::escape::KeyLayout;
use crate::script;
use redis::aio::ConnectionLike;
use redis::Value;
use std::sync::atomic::Ordering::Relaxed;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Whether a unique lookup of `desc` reads the owner and its record in
    /// one call: on one server (the script spells the owner's key, which
    /// in a cluster may be in another slot), for a hash without `#[hash]`
    /// maps (one `HGETALL` is the whole record), of a type the near cache
    /// does not hold (its record may be in memory: the owner alone is read).
    pub(super) fn looks_up_in_one_call(&self, desc: &'static EntityDesc) -> bool {
        !self.scripts_refused.load(Relaxed)
            && self.namespace().layout() != KeyLayout::Cluster
            && !keyspace::sharded(desc, self.namespace())
            && desc.layout == Layout::Hash
            && desc.maps.is_empty()
            && !self.near().is_some_and(|n| n.shared.caches(desc.type_name))
    }

    /// The owner unique key `key` names and the owner's record, read in
    /// one call (`Ok(None)`: no entity owns the value); `None` when the
    /// server refuses the script to this user (`NOPERM`): the caller reads
    /// the two keys, as it does from then on. `None` too when one of the
    /// keys holds another type: the script's WRONGTYPE names neither, the
    /// caller's two reads name the one that fails.
    pub(super) async fn owner_and_record(
        &self,
        desc: &'static EntityDesc,
        key: &str,
    ) -> Option<Result<Option<(Vec<EntityKeys>, Vec<Record>)>>> {
        let reply = match self.find_unique_call(desc, key).await {
            Err(Error::Redis { source, .. }) if source.code() == Some("NOPERM") => {
                self.scripts_refused.store(true, Relaxed);
                return None;
            }
            Err(Error::WrongType { .. }) => return None,
            reply => reply,
        };
        Some(reply.and_then(|reply| self.decode_lookup(desc, key, reply)))
    }

    /// The owner unique key `key` (value `v` of index `index`) names, then
    /// the owner's record: the two reads of a lookup that is not one call
    /// (`Ok(None)`: no entity owns the value). With `claims`, the owner is
    /// read from the value's owner key (see `owner_named`).
    pub(super) async fn owner_then_record(
        &self,
        desc: &'static EntityDesc,
        claims: bool,
        index: usize,
        key: &str,
        v: &[u8],
    ) -> Result<Option<(Vec<EntityKeys>, Vec<Record>)>> {
        let member: Option<String> = if claims {
            self.owner_named(desc, index, v).await?
        } else {
            redis::cmd("GET")
                .arg(key)
                .query_async(&mut self.reader())
                .await
                .map_err(|e| Error::redis(key, e))?
        };
        let Some(member) = member else {
            return Ok(None);
        };
        let keys = query::member_keys(desc, &self.ns, [member]);
        let records = self.rows(desc, &keys).await?;
        Ok(Some((keys, records)))
    }

    /// The reply of find_unique.lua for unique key `key`.
    async fn find_unique_call(&self, desc: &'static EntityDesc, key: &str) -> Result<Value> {
        let (head, tail) = (
            keyspace::owner_head(desc, self.namespace()),
            keyspace::owner_tail(desc, self.namespace()),
        );
        let call = script::args::FindUnique {
            unique_key: key,
            head: &head,
            tail: &tail,
            desc,
        }
        .call();
        let op = super::observe::Op::Lookup {
            entity: desc.type_name,
        };
        op.run(&self.counters, async {
            script::invoke(&mut self.reader(), self.reader_sent(), &call)
                .await
                .map_err(|e| Error::redis(key, e))
        })
        .await
    }

    /// The owner's keys and record in a reply of find_unique.lua, as the
    /// two-step lookup has them after its reads.
    fn decode_lookup(
        &self,
        desc: &'static EntityDesc,
        key: &str,
        reply: Value,
    ) -> Result<Option<(Vec<EntityKeys>, Vec<Record>)>> {
        let unexpected = |detail: &str| Error::UnexpectedReply {
            key: key.to_owned(),
            detail: detail.into(),
        };
        let Value::Array(parts) = reply else {
            return Err(unexpected("not the reply of a unique lookup"));
        };
        let mut parts = parts.into_iter();
        let member = match parts.next() {
            None => return Ok(None),
            Some(Value::BulkString(m)) => {
                String::from_utf8(m).map_err(|_| unexpected("an owner that is not text"))?
            }
            Some(_) => return Err(unexpected("an owner that is not a string")),
        };
        self.counters.read(1);
        let keys = query::member_keys(desc, self.namespace(), [member]);
        let records = vec![read::decode_read(desc, &keys[0], &mut parts)];
        Ok(Some((keys, records)))
    }
}
