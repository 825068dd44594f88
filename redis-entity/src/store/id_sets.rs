//! The sets that hold a type's ids in one space (`keyspace::bucketed_ids`):
//! the one set and the buckets its directory lists, for the readers that
//! count or delete them whole (`schema`). The directory is walked with
//! `SSCAN`, a page of bucket names at a time, so that the client holds one
//! page of names however many ids the type has (a million ids are 10,000
//! buckets). Walks of the entities (`Scan`, `verify`) page the directory
//! themselves.

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::entity::EntityDesc;
use crate::schema::escape::Namespace;
use redis::aio::ConnectionLike;

/// Bucket names asked for per `SSCAN` of the directory.
const DIRECTORY_PAGE: usize = 1000;

/// Where a walk of a space's sets of ids is.
enum Walk {
    /// Nothing read yet: the first page starts with the one set.
    Start,
    /// At this cursor of the directory's `SSCAN`.
    At(u64),
    /// Every set given.
    Done,
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The next page of the sets of `desc`'s ids in `space`, on `conn`
    /// (`None` when `walk` is done): the one set first, then the buckets a
    /// page of the directory lists. A type with a text pk has the one set
    /// alone.
    async fn next_id_sets(
        &self,
        conn: &mut C,
        desc: &EntityDesc,
        space: &Namespace,
        walk: &mut Walk,
    ) -> Result<Option<Vec<String>>> {
        let cursor = match *walk {
            Walk::Done => return Ok(None),
            Walk::Start => 0,
            Walk::At(cursor) => cursor,
        };
        let ids = keyspace::ids_key(desc, space);
        let mut sets = Vec::new();
        if matches!(walk, Walk::Start) {
            sets.push(ids.clone());
        }
        *walk = Walk::Done;
        if !keyspace::bucketed_ids(desc) {
            return Ok(Some(sets));
        }
        let directory = keyspace::ids_directory(&ids);
        let (next, buckets): (u64, Vec<String>) = redis::cmd("SSCAN")
            .arg(&directory)
            .arg(cursor)
            .arg("COUNT")
            .arg(DIRECTORY_PAGE)
            .query_async(conn)
            .await
            .map_err(|e| Error::redis(&directory, e))?;
        if next != 0 {
            *walk = Walk::At(next);
        }
        sets.extend(buckets.iter().map(|b| format!("{ids}:{b}")));
        Ok(Some(sets))
    }

    /// How many ids the sets of `space` hold (a member in two of them,
    /// the one set and its bucket after a repair, counts twice).
    pub(crate) async fn count_id_sets(&self, desc: &EntityDesc, space: &Namespace) -> Result<u64> {
        let (mut conn, mut walk, mut total) = (self.reader(), Walk::Start, 0);
        while let Some(sets) = self.next_id_sets(&mut conn, desc, space, &mut walk).await? {
            if sets.is_empty() {
                continue;
            }
            let mut pipe = redis::pipe();
            for set in &sets {
                pipe.cmd("SCARD").arg(set);
            }
            let counts: Vec<u64> = pipe
                .query_async(&mut conn)
                .await
                .map_err(|e| Error::redis(&sets[0], e))?;
            total += counts.iter().sum::<u64>();
        }
        Ok(total)
    }

    /// Deletes the sets of `space` and the directory of its buckets. The
    /// directory goes last, so that a delete cut short leaves the buckets
    /// it did not reach listed, for the next one.
    pub(crate) async fn delete_id_sets(&self, desc: &EntityDesc, space: &Namespace) -> Result<()> {
        // The directory is read where the sets are deleted (a replica may
        // not have a bucket made a moment ago).
        let (mut conn, mut walk) = (self.connection(), Walk::Start);
        while let Some(sets) = self.next_id_sets(&mut conn, desc, space, &mut walk).await? {
            // One space's sets share its slot: one UNLINK per page.
            if !sets.is_empty() {
                let _: u64 = redis::cmd("UNLINK")
                    .arg(&sets)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| Error::redis(&sets[0], e))?;
            }
        }
        if keyspace::bucketed_ids(desc) {
            let directory = keyspace::ids_directory(&keyspace::ids_key(desc, space));
            let _: u64 = redis::cmd("UNLINK")
                .arg(&directory)
                .query_async(&mut conn)
                .await
                .map_err(|e| Error::redis(&directory, e))?;
        }
        Ok(())
    }
}
