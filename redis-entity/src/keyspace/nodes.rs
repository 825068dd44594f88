//! Reaching every master of a cluster through one cluster connection.
//!
//! `SCAN` names no key, so a cluster connection sends it to any one node and
//! a walk would see that node's keys only. A cluster connection routes a
//! pipeline by its first command that names a key, so a `SCAN` pipelined
//! with an ignored `EXISTS` of a key in a slot a master serves goes to that
//! master: [`node_hints`] finds one such key per master
//! (`CLUSTER SLOTS`, then a short text whose CRC16 falls in the master's
//! slots), and [`route_to`] adds it to a pipeline.

use crate::error::{Error, Result};
use crate::schema::escape::KeyLayout;
use redis::aio::ConnectionLike;
use redis::Value;

/// The CRC16 (XMODEM) Redis Cluster hashes keys with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of a hash tag's text.
pub(crate) fn slot_of(tag: &str) -> u16 {
    crc16(tag.as_bytes()) % 16384
}

/// A key whose slot lies in one of `ranges` (a master's slots).
fn key_in(ranges: &[(u16, u16)]) -> Option<String> {
    (0u32..1_000_000).find_map(|n| {
        let tag = n.to_string();
        let slot = slot_of(&tag);
        ranges
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&slot))
            .then(|| format!("@redis-entity:route:{{{tag}}}"))
    })
}

/// Adds to `pipe` one page of a `SCAN` of the keys matching `pattern`, from
/// `cursor`, 1,000 keys looked at (the walks of keys over a keyspace).
pub(crate) fn scan_page(pipe: &mut redis::Pipeline, cursor: u64, pattern: &str) {
    pipe.cmd("SCAN")
        .arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(1000);
}

/// Adds to `pipe` an ignored `EXISTS` of `hint`, which sends the pipeline
/// to the node serving `hint`'s slot on a cluster (nothing else changes).
pub(crate) fn route_to(pipe: &mut redis::Pipeline, hint: Option<&str>) {
    if let Some(hint) = hint {
        pipe.cmd("EXISTS").arg(hint).ignore();
    }
}

/// One key per master whose slot that master serves, in a stable order;
/// `[None]` for one server (no routing needed).
pub(crate) async fn node_hints<C: ConnectionLike + Send>(
    conn: &mut C,
    layout: KeyLayout,
) -> Result<Vec<Option<String>>> {
    {
        if layout != KeyLayout::Cluster {
            return Ok(vec![None]);
        }
        let bad = || Error::UnexpectedReply {
            key: "CLUSTER SLOTS".into(),
            detail: "not a list of slot ranges".into(),
        };
        let masters = match masters(conn).await {
            // The cluster layout on one server (`StoreBuilder::key_layout`): that
            // server is every node.
            Err(Error::Redis { source, .. })
                if source.to_string().contains("cluster support disabled") =>
            {
                return Ok(vec![None]);
            }
            other => other?,
        };
        masters
            .values()
            .map(|ranges| key_in(ranges).map(Some).ok_or_else(bad))
            .collect()
    }
}

/// Every master's address (`host:port`) and the slot ranges it serves, from
/// `CLUSTER SLOTS`.
pub(crate) async fn masters<C: ConnectionLike + Send>(
    conn: &mut C,
) -> Result<std::collections::BTreeMap<String, Vec<(u16, u16)>>> {
    {
        let reply: Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(conn)
            .await
            .map_err(|e| Error::redis("CLUSTER SLOTS", e))?;
        let bad = || Error::UnexpectedReply {
            key: "CLUSTER SLOTS".into(),
            detail: "not a list of slot ranges".into(),
        };
        let Value::Array(ranges) = reply else {
            return Err(bad());
        };
        // master address -> its slot ranges
        let mut masters: std::collections::BTreeMap<String, Vec<(u16, u16)>> = Default::default();
        for r in ranges {
            let Value::Array(parts) = r else {
                return Err(bad());
            };
            let (Some(Value::Int(lo)), Some(Value::Int(hi)), Some(Value::Array(node))) =
                (parts.first(), parts.get(1), parts.get(2))
            else {
                return Err(bad());
            };
            let address = node
                .iter()
                .take(2)
                .map(|v| match v {
                    Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    Value::Int(i) => i.to_string(),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>()
                .join(":");
            masters
                .entry(address)
                .or_default()
                .push((*lo as u16, *hi as u16));
        }
        Ok(masters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_cluster_s() {
        // From the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot_of("foo"), 12182);
        assert_eq!(slot_of("somekey"), 11058);
    }

    #[test]
    fn a_hint_lands_in_the_masters_slots() {
        let hint = key_in(&[(5461, 10922)]).unwrap();
        let tag = &hint[hint.find('{').unwrap() + 1..hint.len() - 1];
        assert!((5461..=10922).contains(&slot_of(tag)), "{hint}");
    }
}
