//! Script reads of many slots of a cluster grouped by the master serving
//! them: one call per node instead of one per slot.
//!
//! A query of a type of 16 index shards asks every shard. Where that takes
//! the query or rank script (a type whose entities may expire, a shape no
//! native command answers), one script call per shard costs the server the
//! script's set-up 16 times. Here the store keeps which master serves which
//! slots (`CLUSTER SLOTS`, read once and again after a refusal) and sends a
//! read-only script's calls in several slots of one node as one call
//! (`script::across_call`: the script runs with `allow-cross-slot-keys`,
//! which lets it read the keys of any slot its node serves). Plain reads
//! stay one pipeline per slot, sent together: measured, a command costs
//! less on its own than called from Lua (`docs/benchmarks.md`).
//!
//! The map can be stale (a resharding, a failover): a node then refuses a
//! key it does not serve ("non local key"). That makes the caller forget
//! the map and ask again one slot at a time, as before, where the cluster
//! connection follows the redirections: a stale map costs a round trip,
//! never a wrong answer.

use super::Store;
use crate::keyspace::{self, nodes};
use crate::schema::escape::KeyLayout;
use crate::script::{self, Call, Script};
use redis::aio::ConnectionLike;
use redis::Value;
use std::sync::{Arc, RwLock};

/// Which master serves which slots: `(first slot, last slot, master)`.
type Ranges = Arc<Vec<(u16, u16, usize)>>;

/// The slot map of a store's cluster, shared by its clones; empty until
/// the first grouped read.
#[derive(Debug, Default)]
pub(crate) struct NodeMap {
    ranges: RwLock<Option<Ranges>>,
}

impl NodeMap {
    fn get(&self) -> Option<Ranges> {
        self.ranges.read().ok()?.clone()
    }

    fn set(&self, ranges: Option<Ranges>) {
        if let Ok(mut r) = self.ranges.write() {
            *r = ranges;
        }
    }
}

/// The master serving `slot`, if the map covers it.
fn master_of(ranges: &[(u16, u16, usize)], slot: u16) -> Option<usize> {
    ranges
        .iter()
        .find(|&&(lo, hi, _)| (lo..=hi).contains(&slot))
        .map(|&(_, _, m)| m)
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// `keys` grouped by the master serving each one's slot (indexes into
    /// `keys`, groups in master order); `None` when the store does not
    /// write the cluster layout, or the slot map is unknown or does not
    /// cover a key (the caller reads one slot at a time).
    pub(crate) async fn by_node(&self, keys: &[&str]) -> Option<Vec<Vec<usize>>> {
        if self.ns.layout() != KeyLayout::Cluster {
            return None;
        }
        let ranges = match self.nodes.get() {
            Some(r) => r,
            None => {
                let ranges = self.read_node_map().await?;
                self.nodes.set(Some(ranges.clone()));
                ranges
            }
        };
        let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (i, key) in keys.iter().enumerate() {
            let slot = nodes::slot_of(keyspace::slot_tag(key));
            groups.entry(master_of(&ranges, slot)?).or_default().push(i);
        }
        Some(groups.into_values().collect())
    }

    /// The slot map, from `CLUSTER SLOTS`; the cluster layout on one server
    /// (no cluster support) is one node serving every slot.
    async fn read_node_map(&self) -> Option<Ranges> {
        let masters = match nodes::masters(&mut self.reader()).await {
            Ok(m) => m,
            Err(crate::error::Error::Redis { source, .. })
                if source.to_string().contains("cluster support disabled") =>
            {
                return Some(Arc::new(vec![(0, 16383, 0)]));
            }
            Err(_) => return None,
        };
        let ranges = masters
            .into_values()
            .enumerate()
            .flat_map(|(m, ranges)| ranges.into_iter().map(move |(lo, hi)| (lo, hi, m)))
            .collect();
        Some(Arc::new(ranges))
    }

    /// Forgets the slot map (a node refused a key): the next grouped read
    /// reads it again.
    pub(crate) fn forget_nodes(&self) {
        self.nodes.set(None);
    }

    /// `calls` (of a read-only script, each in one slot) sent as one call of
    /// `across` per node, on the reading connection; their replies in
    /// order. `None` when the calls are not grouped (see [`Store::by_node`])
    /// or any grouped call fails: the caller sends them one per slot, which
    /// also names any error as a single call does.
    pub(crate) async fn invoke_across(
        &self,
        across: &'static Script,
        calls: &[Call<'_>],
    ) -> Option<Vec<Value>> {
        let firsts: Vec<String> = calls
            .iter()
            .map(|c| {
                c.keys()
                    .first()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let firsts: Vec<&str> = firsts.iter().map(String::as_str).collect();
        let groups = self.by_node(&firsts).await?;
        let replies = futures_util::future::join_all(groups.iter().map(|g| {
            let grouped: Vec<Call<'_>> = g.iter().map(|&i| calls[i].clone()).collect();
            let call = script::across_call(across, &grouped);
            async move {
                script::invoke::<Value, _>(&mut self.reader(), self.reader_sent(), &call).await
            }
        }))
        .await;
        let mut out: Vec<Option<Value>> = vec![None; calls.len()];
        for (g, reply) in groups.iter().zip(replies) {
            let parts = match reply {
                Ok(Value::Array(parts)) if parts.len() == g.len() => parts,
                // A refusal of a key the node does not serve (a stale map),
                // or another error the calls one per shard will name:
                // either way the map is read again, so a refusal worded
                // otherwise than expected cannot keep a stale map.
                Err(_) => {
                    self.forget_nodes();
                    return None;
                }
                Ok(_) => return None,
            };
            for (&i, part) in g.iter().zip(parts) {
                out[i] = Some(part);
            }
        }
        out.into_iter().collect()
    }
}
