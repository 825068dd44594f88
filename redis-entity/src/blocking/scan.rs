//! Walks over stored entities without async.

use super::Store;
use crate::error::Result;
use crate::schema::entity::Entity;
use redis::aio::ConnectionLike;

/// A walk over every stored `E`, or every `E` a query matches (see
/// [`crate::Scan`]): page by page with [`next_page`](Self::next_page), or
/// entity by entity as an iterator, which reads a page when it needs one.
///
/// ```no_run
/// # use redis_entity::RedisEntity;
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # fn run(store: redis_entity::blocking::Store) -> redis_entity::Result<()> {
/// for user in store.query::<User>().scan(500) {
///     println!("{}", user?.name);
/// }
/// # Ok(()) }
/// ```
pub struct Scan<'s, E, C> {
    pub(super) store: &'s Store<C>,
    pub(super) inner: crate::store::scan::Scan<'s, E, C>,
    /// What is left of the page the iterator is on.
    pub(super) page: std::vec::IntoIter<Result<E>>,
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Scan<'_, E, C> {
    /// See [`crate::Scan::cursor`]. While iterating, entities of the page
    /// already read may be left: resume from a page boundary.
    pub fn cursor(&self) -> u64 {
        self.inner.cursor()
    }

    /// See [`crate::Scan::resume_at`].
    pub fn resume_at(mut self, cursor: u64) -> Self {
        self.inner = self.inner.resume_at(cursor);
        self
    }

    /// See [`crate::Scan::next_page`].
    pub fn next_page(&mut self) -> Result<Option<Vec<Result<E>>>> {
        self.store.run(self.inner.next_page())
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Iterator for Scan<'_, E, C> {
    type Item = Result<E>;

    /// The next entity; a failed page read is one error, after which the
    /// walk ends.
    fn next(&mut self) -> Option<Result<E>> {
        loop {
            if let Some(e) = self.page.next() {
                return Some(e);
            }
            match self.next_page() {
                Ok(Some(page)) => self.page = page.into_iter(),
                Ok(None) => return None,
                Err(e) => {
                    self.inner.stop();
                    return Some(Err(e));
                }
            }
        }
    }
}

/// The keys matching a `SCAN` pattern, a page at a time (see
/// [`crate::KeyScan`]): page by page with [`next_page`](Self::next_page), or
/// key by key as an iterator, which reads a page when it needs one.
///
/// ```no_run
/// # fn run(store: redis_entity::blocking::Store) -> redis_entity::Result<()> {
/// for key in store.keys().scan_pages("user:*") {
///     println!("{}", key?);
/// }
/// # Ok(()) }
/// ```
pub struct KeyScan<'s, C> {
    pub(super) store: &'s Store<C>,
    pub(super) inner: crate::store::KeyScan<'s, C>,
    /// What is left of the page the iterator is on; `done` after a failed
    /// page or the last one.
    pub(super) page: std::vec::IntoIter<String>,
    pub(super) done: bool,
}

impl<C: ConnectionLike + Clone + Send + Sync> KeyScan<'_, C> {
    /// See [`crate::KeyScan::next_page`].
    pub fn next_page(&mut self) -> Result<Option<Vec<String>>> {
        self.store.run(self.inner.next_page())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Iterator for KeyScan<'_, C> {
    type Item = Result<String>;

    /// The next key; a failed page read is one error, after which the walk
    /// ends.
    fn next(&mut self) -> Option<Result<String>> {
        loop {
            if let Some(k) = self.page.next() {
                return Some(Ok(k));
            }
            if self.done {
                return None;
            }
            match self.next_page() {
                Ok(Some(page)) => self.page = page.into_iter(),
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
