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

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// A page of the sets of `desc`'s ids in `space`, on `conn`, from the
    /// directory's `cursor` (`None` for the first page, which starts with
    /// the one set): the cursor to go on from (`None` at the end) and the
    /// sets' keys. A type with a text pk has the one set alone.
    async fn id_sets_page(
        &self,
        conn: &mut C,
        desc: &EntityDesc,
        space: &Namespace,
        cursor: Option<u64>,
    ) -> Result<(Option<u64>, Vec<String>)> {
        let ids = keyspace::ids_key(desc, space);
        let mut sets = Vec::new();
        if cursor.is_none() {
            sets.push(ids.clone());
        }
        if !keyspace::bucketed_ids(desc) {
            return Ok((None, sets));
        }
        let directory = keyspace::ids_directory(&ids);
        let (next, buckets): (u64, Vec<String>) = redis::cmd("SSCAN")
            .arg(&directory)
            .arg(cursor.unwrap_or(0))
            .arg("COUNT")
            .arg(DIRECTORY_PAGE)
            .query_async(conn)
            .await
            .map_err(|e| Error::redis(&directory, e))?;
        sets.extend(buckets.iter().map(|b| format!("{ids}:{b}")));
        Ok(((next != 0).then_some(next), sets))
    }

    /// How many ids the sets of `space` hold (a member in two of them,
    /// the one set and its bucket after a repair, counts twice).
    pub(crate) async fn count_id_sets(&self, desc: &EntityDesc, space: &Namespace) -> Result<u64> {
        let mut conn = self.reader();
        let (mut cursor, mut total) = (None, 0);
        loop {
            let (next, sets) = self.id_sets_page(&mut conn, desc, space, cursor).await?;
            if !sets.is_empty() {
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
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(total),
            }
        }
    }

    /// Deletes the sets of `space` and the directory of its buckets. The
    /// directory goes last, so that a delete cut short leaves the buckets
    /// it did not reach listed, for the next one.
    pub(crate) async fn delete_id_sets(&self, desc: &EntityDesc, space: &Namespace) -> Result<()> {
        // The directory is read where the sets are deleted (a replica may
        // not have a bucket made a moment ago).
        let mut conn = self.connection();
        let mut cursor = None;
        loop {
            let (next, sets) = self.id_sets_page(&mut conn, desc, space, cursor).await?;
            // One space's sets share its slot: one UNLINK per page.
            if !sets.is_empty() {
                let _: u64 = redis::cmd("UNLINK")
                    .arg(&sets)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| Error::redis(&sets[0], e))?;
            }
            match next {
                Some(next) => cursor = Some(next),
                None => break,
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
