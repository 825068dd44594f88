//! Which tracking connection reads a key: the one server's, or on a Redis
//! Cluster the one of the master serving the key's slot. Each master's
//! connection tracks what it read there, so each master tells the cache
//! when one of its keys changes. The slot map comes from `CLUSTER SLOTS`;
//! a read or write-through answered with a redirection (`MOVED`, `ASK`:
//! the slot moved, or is moving) drops every record and reads the map
//! again.

use super::tracking::Tracking;
use super::{NearCacheOptions, Shared};
use crate::error::{Error, Result};
use std::sync::{Arc, RwLock};

/// The tracking connection of each master and the slots it serves.
type SlotMap = Vec<(u16, u16, String, Arc<Tracking>)>;

pub(crate) enum Route {
    /// One server.
    One(Arc<Tracking>),
    /// A Redis Cluster (boxed: much bigger than one connection's handle).
    Cluster(Box<Nodes>),
}

pub(crate) struct Nodes {
    /// What the slot map is read from.
    seed: redis::Client,
    /// `redis://[user:password@]`: the scheme and credentials of the seed
    /// URL, which every master's URL shares.
    prefix: String,
    options: NearCacheOptions,
    shared: Arc<Shared>,
    map: RwLock<Arc<SlotMap>>,
    /// One reading of the slot map at a time.
    loading: tokio::sync::Mutex<()>,
}

/// The scheme and credentials of `url` (`redis://user:pw@`), or `redis://`.
fn prefix_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let host_start = rest.find('@').map_or(0, |at| at + 1);
    format!("{scheme}://{}", &rest[..host_start])
}

/// True for a reply that sends the command to another node.
pub(crate) fn redirected(v: &redis::Value) -> bool {
    match v {
        redis::Value::ServerError(e) => matches!(e.code(), "MOVED" | "ASK"),
        _ => false,
    }
}

impl Route {
    /// The route of a cluster given some nodes' URLs; the map is read on
    /// first use.
    pub fn cluster(
        urls: &[String],
        options: NearCacheOptions,
        shared: Arc<Shared>,
    ) -> Result<Self> {
        let first = urls.first().ok_or_else(|| Error::InvalidKey {
            segment: String::new(),
            reason: "no node URL given",
        })?;
        let seed = redis::Client::open(first.as_str()).map_err(|e| Error::redis(first, e))?;
        Ok(Route::Cluster(Box::new(Nodes {
            seed,
            prefix: prefix_of(first),
            options,
            shared,
            map: RwLock::new(Arc::new(Vec::new())),
            loading: tokio::sync::Mutex::new(()),
        })))
    }

    /// The tracking connection that reads `key`.
    pub async fn to(&self, key: &str) -> Result<Arc<Tracking>> {
        match self {
            Route::One(t) => Ok(t.clone()),
            // Boxed: the slot map's load (a connection and `CLUSTER SLOTS`)
            // would otherwise be part of every one-server read's future.
            Route::Cluster(nodes) => Box::pin(nodes.to(key)).await,
        }
    }

    /// After a redirection: every record is dropped (the slot's keys now
    /// live elsewhere, tracked by no connection of ours) and the slot map is
    /// read again.
    pub async fn moved(&self) -> Result<()> {
        match self {
            Route::One(_) => Ok(()),
            Route::Cluster(nodes) => {
                nodes.shared.drop_all();
                Box::pin(nodes.load()).await
            }
        }
    }

    /// Connects every tracking connection there is now.
    pub async fn connect(&self) -> Result<()> {
        match self {
            Route::One(t) => t.connection().await.map(|_| ()),
            Route::Cluster(nodes) => {
                nodes.load().await?;
                let map = nodes.current();
                for (_, _, _, t) in map.iter() {
                    t.connection().await?;
                }
                Ok(())
            }
        }
    }

    /// The one server's tracking connection; on a cluster, the first
    /// master's.
    pub async fn first(&self) -> Result<Arc<Tracking>> {
        match self {
            Route::One(t) => Ok(t.clone()),
            Route::Cluster(nodes) => {
                if nodes.current().is_empty() {
                    nodes.load().await?;
                }
                nodes
                    .current()
                    .first()
                    .map(|(_, _, _, t)| t.clone())
                    .ok_or_else(|| Error::UnexpectedReply {
                        key: "CLUSTER SLOTS".into(),
                        detail: "no master".into(),
                    })
            }
        }
    }
}

impl Nodes {
    fn current(&self) -> Arc<SlotMap> {
        self.map
            .read()
            .map(|m| m.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    async fn to(&self, key: &str) -> Result<Arc<Tracking>> {
        let slot = crate::keyspace::nodes::slot_of(crate::keyspace::slot_tag(key));
        for attempt in 0..2 {
            if attempt == 1 || self.current().is_empty() {
                self.load().await?;
            }
            if let Some((_, _, _, t)) = self
                .current()
                .iter()
                .find(|(lo, hi, _, _)| (*lo..=*hi).contains(&slot))
            {
                return Ok(t.clone());
            }
        }
        Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: format!("no master serves slot {slot}"),
        })
    }

    /// Reads the slot map; a master seen before keeps its connection.
    async fn load(&self) -> Result<()> {
        let _one = self.loading.lock().await;
        let mut conn = self
            .seed
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| Error::redis("CLUSTER SLOTS", e))?;
        let masters = crate::keyspace::nodes::masters(&mut conn).await?;
        let old = self.current();
        let mut map = SlotMap::new();
        for (address, ranges) in masters {
            let tracking = match old.iter().find(|(_, _, a, _)| *a == address) {
                Some((_, _, _, t)) => t.clone(),
                None => Arc::new(Tracking::new(
                    &format!("{}{address}/", self.prefix),
                    &self.options,
                    self.shared.clone(),
                )?),
            };
            for (lo, hi) in ranges {
                map.push((lo, hi, address.clone(), tracking.clone()));
            }
        }
        if let Ok(mut slot) = self.map.write() {
            *slot = Arc::new(map);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_masters_url_keeps_the_seeds_scheme_and_credentials() {
        assert_eq!(prefix_of("redis://127.0.0.1:7000/"), "redis://");
        assert_eq!(
            prefix_of("redis://app:secret@10.0.0.1:7000/0"),
            "redis://app:secret@"
        );
        assert_eq!(prefix_of("rediss://h:1"), "rediss://");
    }
}
