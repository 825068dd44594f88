//! A set of things a store has seen, by address: scripts and libraries its
//! connection has sent, entity types found with expiring entities. Every
//! item is `'static` (a script, a description), so its address names it.
//! Shared by the clones of a store.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Default)]
pub(crate) struct Seen(Arc<Mutex<HashSet<usize, BuildHasherDefault<AddressHasher>>>>);

/// Hashes an address by one multiplication (Fibonacci hashing), its high
/// half folded into the low: the table picks the bucket from the low bits
/// and a tag from the top 7, and an aligned address's low bits are zeros
/// that a product alone would keep. A write asks the set once or twice;
/// SipHash cost it more than the rest of the lookup.
#[derive(Default)]
pub(crate) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `usize`s are hashed here; anything else still hashes.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl Seen {
    /// The name of `item`: its address.
    pub(crate) fn id<T>(item: &T) -> usize {
        item as *const T as usize
    }

    pub(crate) fn contains(&self, id: usize) -> bool {
        // Nothing panics while holding the lock; a poisoned set is intact.
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&id)
    }

    pub(crate) fn insert(&self, id: usize) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
    }
}
