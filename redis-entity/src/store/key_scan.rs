//! A walk of the keyspace a `SCAN` page at a time, `store.keys().scan_pages`:
//! what it holds is one page, whatever the number of keys (`keys().scan`
//! collects them all).

use super::Store;
use crate::error::Result;
use redis::aio::ConnectionLike;

/// The keys matching a `SCAN` pattern, a page at a time, on every master of
/// a cluster one after the other: [`Keys::scan_pages`](crate::Keys::scan_pages).
///
/// Like every Redis cursor, a key written or deleted during the walk may or
/// may not be met; one present the whole time is met at least once (`SCAN`
/// may return a key twice).
///
/// ```no_run
/// # async fn run(store: redis_entity::Store) -> redis_entity::Result<()> {
/// let mut keys = store.keys().scan_pages("user:*");
/// let mut n = 0;
/// while let Some(page) = keys.next_page().await? {
///     n += page.len();
/// }
/// # Ok(()) }
/// ```
pub struct KeyScan<'s, C> {
    store: &'s Store<C>,
    pattern: String,
    /// One routing key per master (`None` on one server), fetched at the
    /// first page; `node` is the one being walked.
    hints: Option<Vec<Option<String>>>,
    node: usize,
    cursor: u64,
}

impl<'s, C: ConnectionLike + Clone + Send + Sync> KeyScan<'s, C> {
    pub(crate) fn new(store: &'s Store<C>, pattern: &str) -> Self {
        KeyScan {
            store,
            pattern: pattern.to_owned(),
            hints: None,
            node: 0,
            cursor: 0,
        }
    }

    /// The next page of keys (possibly empty: `SCAN` may find none in the
    /// slots it looked at); `None` once every master has been walked.
    pub async fn next_page(&mut self) -> Result<Option<Vec<String>>> {
        let hints = match &self.hints {
            Some(hints) => hints,
            None => self.hints.insert(self.store.node_hints().await?),
        };
        let Some(hint) = hints.get(self.node).cloned() else {
            return Ok(None);
        };
        let (next, page) = self
            .store
            .scan_page(hint.as_deref(), self.cursor, &self.pattern)
            .await?;
        self.cursor = next;
        if next == 0 {
            self.node += 1;
        }
        Ok(Some(page))
    }
}
