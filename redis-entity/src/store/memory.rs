//! The server's memory policy, as a store that writes must know it.
//!
//! Under a `maxmemory-policy` that evicts any key (`allkeys-lru`,
//! `allkeys-lfu`, `allkeys-random`) Redis deletes keys at its memory limit
//! without telling anyone: an index entry, a unique value's key or a schema
//! record may go while the entity stays, and queries, lookups and unique
//! checks then answer wrongly without an error. So a store refuses to
//! write there ([`Error::EvictingPolicy`]) unless it was built with
//! [`StoreBuilder::allow_eviction`](crate::StoreBuilder::allow_eviction).
//! A `volatile-*` policy evicts only keys with a TTL: entities with a TTL
//! may go before they expire and leave index entries for `sweep` and
//! `repair`; the store writes, and says so once (a `tracing` warning with
//! the `tracing` feature).
//!
//! The policy is read by the scripts that already run before writes (the
//! layout marker's, once per store, and each schema announcement, every
//! half heartbeat while the store writes), never in a round trip of its
//! own, so a policy changed by a restart, a failover or `CONFIG SET` is
//! noticed within a heartbeat. The scripts refuse before writing anything.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a store accepts of the server's memory policy, and whether it
/// has said that the policy evicts keys with a TTL.
#[derive(Debug, Default)]
pub(crate) struct MemoryPolicy {
    /// Built with `allow_eviction(true)`: an evicting policy is accepted.
    pub(crate) eviction_allowed: bool,
    /// The `volatile-*` warning was given.
    warned: AtomicBool,
}

impl MemoryPolicy {
    pub(crate) fn new(eviction_allowed: bool) -> Self {
        MemoryPolicy {
            eviction_allowed,
            warned: AtomicBool::new(false),
        }
    }

    /// Judges what a script read before a write: its `status` (`evicting`
    /// when it refused) and the server's `policy` ('' when unknown).
    pub(crate) fn judge(&self, status: &str, policy: &str) -> Result<()> {
        if status == "evicting" {
            return Err(Error::EvictingPolicy {
                policy: policy.to_owned(),
            });
        }
        if evicts_with_ttl(policy) && !self.warned.swap(true, Ordering::Relaxed) {
            warn_volatile(policy);
        }
        Ok(())
    }
}

/// A policy under which keys with a TTL may be evicted before they expire.
fn evicts_with_ttl(policy: &str) -> bool {
    policy.starts_with("volatile-")
}

#[cfg(feature = "tracing")]
fn warn_volatile(policy: &str) {
    tracing::warn!(
        policy,
        "the server's maxmemory-policy evicts keys with a TTL: entities with a TTL may be \
         evicted before they expire, leaving index entries for `sweep` and `repair`"
    );
}

#[cfg(not(feature = "tracing"))]
fn warn_volatile(_policy: &str) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evicting_policy_is_refused_and_a_volatile_one_written_through() {
        let p = MemoryPolicy::new(false);
        match p.judge("evicting", "allkeys-lru") {
            Err(Error::EvictingPolicy { policy }) => assert_eq!(policy, "allkeys-lru"),
            other => panic!("{other:?}"),
        }
        assert!(p.judge("marked", "noeviction").is_ok());
        assert!(p.judge("known", "").is_ok());
        assert!(!p.warned.load(Ordering::Relaxed));
        assert!(p.judge("known", "volatile-lru").is_ok());
        assert!(p.warned.load(Ordering::Relaxed));
    }
}
