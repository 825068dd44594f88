//! Walking every entity of a type in pages, with a cursor: `SSCAN` of the
//! set of all ids for an indexed type, `SCAN` of the entity keys otherwise.
//! Memory stays bounded by the page, and each page costs the same whatever
//! the position (no rereading of what came before, as paging by offset
//! does). Like every Redis cursor, an entity stored or deleted during the
//! walk may or may not be seen; one present the whole time is seen at
//! least once (`SCAN` may return a key twice: pages may repeat an entity).

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::entity::Entity;
use redis::aio::ConnectionLike;
use std::marker::PhantomData;

/// A walk over every stored `E`, a page at a time; see
/// [`Store::scan`].
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// # #[derive(RedisEntity)] struct User { #[pk] id: u64, name: String }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let mut users = store.scan::<User>(500);
/// while let Some(page) = users.next_page().await? {
///     for user in page {
///         let user = user?; // a record that does not decode is an error in its place
///         println!("{}", user.name);
///     }
///     // `users.cursor()` resumes from here later (`Store::scan_from`).
/// }
/// # Ok(()) }
/// ```
pub struct Scan<'s, E, C> {
    store: &'s Store<C>,
    cursor: u64,
    count: usize,
    done: bool,
    _e: PhantomData<fn() -> E>,
}

impl<E, C> std::fmt::Debug for Scan<'_, E, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("cursor", &self.cursor)
            .field("done", &self.done)
            .finish()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Walks every stored `E`, about `count` at a time (a hint to Redis:
    /// a page may hold fewer or more, and may be empty; a small type, kept
    /// by Redis in a compact encoding, comes back in one page).
    pub fn scan<E: Entity>(&self, count: usize) -> Scan<'_, E, C> {
        self.scan_from(0, count)
    }

    /// Resumes a walk at a cursor given by [`Scan::cursor`] (0 starts over).
    pub fn scan_from<E: Entity>(&self, cursor: u64, count: usize) -> Scan<'_, E, C> {
        Scan {
            store: self,
            cursor,
            count: count.max(1),
            done: false,
            _e: PhantomData,
        }
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Scan<'_, E, C> {
    /// Where the walk is: give it to [`Store::scan_from`] to go on later.
    /// 0 once the walk is over.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The next page: one round trip for the cursor, one for the records;
    /// `None` when the walk is over. Entities deleted since they were listed
    /// are left out; a record that does not decode is an error in its place.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Result<E>>>> {
        if self.done {
            return Ok(None);
        }
        let (store, desc) = (self.store, E::DESC);
        let ns = store.namespace().as_str();
        // An indexed type keeps the set of its ids; others are found by
        // their keys.
        let (cmd, key) = if desc.indexes.is_empty() {
            let mut c = redis::cmd("SCAN");
            let pattern = keyspace::entity_scan_pattern(desc, ns);
            c.arg(self.cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(self.count);
            (c, pattern)
        } else {
            let ids = keyspace::ids_key(desc, ns);
            let mut c = redis::cmd("SSCAN");
            c.arg(&ids).arg(self.cursor).arg("COUNT").arg(self.count);
            (c, ids)
        };
        let (next, found): (u64, Vec<String>) = cmd
            .query_async(&mut store.reader())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        let mut members: Vec<String> = if desc.indexes.is_empty() {
            // Sub keys (columns, maps, relation sets) name their entity too.
            found
                .iter()
                .filter_map(|k| keyspace::member_of_key(desc, ns, k))
                .collect()
        } else {
            found
        };
        members.sort();
        members.dedup();
        self.cursor = next;
        self.done = next == 0;
        // The records of the page, as `get_many_each` reads them; those
        // deleted since they were listed are left out.
        let pks: Vec<E::Pk> = members
            .iter()
            .filter_map(|m| crate::plan::query::parse_member::<E>(m))
            .collect();
        let page: Vec<Result<E>> = store
            .get_many_each::<E>(&pks)
            .await?
            .into_iter()
            .filter_map(Result::transpose)
            .collect();
        Ok(Some(page))
    }
}
