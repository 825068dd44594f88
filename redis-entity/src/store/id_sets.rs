//! The sets that hold a type's ids in one space (`keyspace::bucketed_ids`):
//! the buckets its directory lists and the one set, for the readers that
//! count or delete them whole (`schema`). Walks in pages (`Scan`, `verify`)
//! read the directory page by page instead.

use super::Store;
use crate::error::{Error, Result};
use crate::keyspace;
use crate::schema::entity::EntityDesc;
use crate::schema::escape::Namespace;
use redis::aio::ConnectionLike;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Every set of `desc`'s ids in `space`: the one set first, then each
    /// bucket the directory lists (a type with a text pk has none).
    pub(crate) async fn id_sets(
        &self,
        desc: &EntityDesc,
        space: &Namespace,
    ) -> Result<Vec<String>> {
        let ids = keyspace::ids_key(desc, space);
        let mut sets = vec![ids.clone()];
        if keyspace::bucketed_ids(desc) {
            let directory = keyspace::ids_directory(&ids);
            let buckets: Vec<String> = self
                .read_cmd(redis::cmd("SMEMBERS").arg(&directory), &directory)
                .await?;
            sets.extend(buckets.iter().map(|b| format!("{ids}:{b}")));
        }
        Ok(sets)
    }

    /// How many ids the sets of `space` hold (a member in two of them,
    /// the one set and its bucket after a repair, counts twice).
    pub(crate) async fn count_id_sets(&self, desc: &EntityDesc, space: &Namespace) -> Result<u64> {
        let sets = self.id_sets(desc, space).await?;
        let mut pipe = redis::pipe();
        for set in &sets {
            pipe.cmd("SCARD").arg(set);
        }
        let counts: Vec<u64> = pipe
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&sets[0], e))?;
        Ok(counts.iter().sum())
    }

    /// Deletes the sets of `space` and the directory of its buckets.
    pub(crate) async fn delete_id_sets(&self, desc: &EntityDesc, space: &Namespace) -> Result<()> {
        let mut sets = self.id_sets(desc, space).await?;
        if keyspace::bucketed_ids(desc) {
            sets.push(keyspace::ids_directory(&sets[0]));
        }
        // One space's sets share its slot: UNLINKs of up to 1,000 keys.
        for chunk in sets.chunks(1000) {
            let _: u64 = redis::cmd("UNLINK")
                .arg(chunk)
                .query_async(&mut self.connection())
                .await
                .map_err(|e| Error::redis(&chunk[0], e))?;
        }
        Ok(())
    }
}
