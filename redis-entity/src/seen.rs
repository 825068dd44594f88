//! A set of things a store has seen, by address: scripts and libraries its
//! connection has sent, entity types found with expiring entities. Every
//! item is `'static` (a script, a description), so its address names it.
//! Shared by the clones of a store.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Default)]
pub(crate) struct Seen(Arc<Mutex<HashSet<usize>>>);

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
