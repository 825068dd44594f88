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
//! less on its own than called from Lua (`benches/NOTES.md`).
//!
//! Plain reads of several slots go the same way where the connection lets
//! a pipeline be routed (a cluster connection, directly, in an
//! [`crate::AnyConnection`] or counted): the pipelines of the slots one
//! master serves are one pipeline to it (`route_pipeline`), since the
//! cluster client refuses a pipeline whose keys are in several slots. A
//! master then reads, say, 5 index shards for one request instead of 5:
//! on 3 masters a read of 16 shards is 3 requests, sent together.
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
use redis::cluster_async::ClusterConnection;
use redis::{Pipeline, RedisResult, Value};
use std::any::Any;
use std::sync::{Arc, RwLock};

/// The cluster connection under a store's connection, and the counter to
/// count a request on, if the connection is counted.
pub(crate) type ClusterOf<C> =
    fn(&C) -> Option<(ClusterConnection, Option<crate::conn::RoundTrips>)>;

/// [`ClusterOf`] for any connection type: a `ClusterConnection`, an
/// `AnyConnection` to a cluster, or either counted. Other connections
/// (one server, a wrapper of the application's) read one slot per
/// pipeline, as before.
pub(crate) fn cluster_of<C: 'static>(
    conn: &C,
) -> Option<(ClusterConnection, Option<crate::conn::RoundTrips>)> {
    fn inner(conn: &dyn Any) -> Option<ClusterConnection> {
        if let Some(c) = conn.downcast_ref::<ClusterConnection>() {
            return Some(c.clone());
        }
        match conn.downcast_ref::<crate::any::AnyConnection>() {
            Some(crate::any::AnyConnection::Cluster(c)) => Some(c.clone()),
            _ => None,
        }
    }
    let conn: &dyn Any = conn;
    if let Some(c) = conn.downcast_ref::<crate::conn::CountingConnection<ClusterConnection>>() {
        let (c, trips) = c.parts();
        return Some((c.clone(), Some(trips.clone())));
    }
    if let Some(c) =
        conn.downcast_ref::<crate::conn::CountingConnection<crate::any::AnyConnection>>()
    {
        let (c, trips) = c.parts();
        return inner(c).map(|c| (c, Some(trips.clone())));
    }
    inner(conn).map(|c| (c, None))
}

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

    /// The replies of `reads`: pipelines of plain read commands, each
    /// naming a key of the one slot it reads; one result per pipeline,
    /// what `query_async` gives for it (`ignore_errors`: error replies
    /// kept in their places, as the pipelines were built; otherwise an
    /// error reply fails its pipeline).
    ///
    /// The pipelines of the slots one master serves are sent to it as one
    /// (see the module's text) when the store's connection can route a
    /// pipeline and the slot map is known; a failure of a grouped request
    /// or an error reply in it sends the pipelines again one per slot,
    /// which names the error as before (a stale map is read again).
    pub(crate) async fn read_slots<K: AsRef<str> + Sync>(
        &self,
        reads: &[(K, Pipeline)],
        ignore_errors: bool,
    ) -> Vec<RedisResult<Vec<Value>>> {
        if let Some(replies) = self.read_by_node(reads, ignore_errors).await {
            return replies.into_iter().map(Ok).collect();
        }
        futures_util::future::join_all(
            reads
                .iter()
                .map(|(_, pipe)| async move { pipe.query_async(&mut self.reader()).await }),
        )
        .await
    }

    /// [`read_slots`](Self::read_slots) grouped by node; `None` where it
    /// cannot be or any part fails.
    async fn read_by_node<K: AsRef<str> + Sync>(
        &self,
        reads: &[(K, Pipeline)],
        ignore_errors: bool,
    ) -> Option<Vec<Vec<Value>>> {
        if reads.len() < 2 {
            return None;
        }
        let (conn, trips) = (self.cluster_of)(&self.reader())?;
        let keys: Vec<&str> = reads.iter().map(|(k, _)| k.as_ref()).collect();
        let groups = self.by_node(&keys).await?;
        if groups.len() == reads.len() {
            return None;
        }
        use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};
        let replies = futures_util::future::join_all(groups.iter().map(|g| {
            let mut merged = redis::pipe();
            for &i in g {
                for cmd in reads[i].1.cmd_iter() {
                    merged.add_command(cmd.clone());
                }
            }
            let n = merged.len();
            // As the cluster connection routes a read-only command: to a
            // replica if it was built to read from replicas, else the master.
            let route = Route::with_key(keys[g[0]], SlotAddr::ReplicaOptional);
            let mut conn = conn.clone();
            if let Some(t) = &trips {
                t.add();
            }
            async move {
                conn.route_pipeline(merged, 0, n, SingleNodeRoutingInfo::SpecificNode(route))
                    .await
            }
        }))
        .await;
        let mut out: Vec<Vec<Value>> = vec![Vec::new(); reads.len()];
        for (g, reply) in groups.iter().zip(replies) {
            let Ok(values) = reply else {
                // A refusal of a key the node does not serve: the map is
                // stale (or the node is gone); read it again next time.
                self.forget_nodes();
                return None;
            };
            let mut values = values.into_iter();
            for &i in g {
                let part: Vec<Value> = values.by_ref().take(reads[i].1.len()).collect();
                let failed = part.iter().any(|v| matches!(v, Value::ServerError(_)));
                if part.len() != reads[i].1.len() || (failed && !ignore_errors) {
                    return None;
                }
                out[i] = part;
            }
        }
        Some(out)
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
        // Decided once for every node: the first reply must not turn the
        // later calls into `EVALSHA`s their nodes refuse.
        let sent = self.reader_sent();
        let known = sent.contains(across.unit());
        let replies = futures_util::future::join_all(groups.iter().map(|g| {
            let grouped: Vec<Call<'_>> = g.iter().map(|&i| calls[i].clone()).collect();
            let call = script::across_call(across, &grouped);
            async move {
                script::invoke_if_known::<Value, _>(&mut self.reader(), sent, &call, known).await
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
