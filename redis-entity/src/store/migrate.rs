//! Moving legacy data into entities (legacy `User_*_Profile` JSON strings
//! become profile hashes), with SCAN (never KEYS), batches, a resumable
//! cursor, a dry run and progress reports.
//!
//! One batch is one `SCAN` step, one pipelined read of the keys it returned,
//! one pipelined write of the converted entities (each atomic, indexes
//! included), and, if asked, one pipelined delete of the sources whose entity
//! was written. The cursor of each batch is reported, so an interrupted
//! migration resumes where it stopped; converting again is harmless (saves
//! are upserts), so a batch cut short is simply redone.

use super::{checked_row, Store};
use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::plan::write;
use crate::schema::entity::Entity;
use redis::aio::ConnectionLike;
use redis::Value;

/// What to migrate and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// SCAN pattern of the legacy keys, e.g. `User_*_Profile`.
    pub pattern: String,
    /// Keys per SCAN step (the `COUNT` hint).
    pub batch: usize,
    /// Convert and count, write nothing.
    pub dry_run: bool,
    /// Delete each legacy key once its entity is written.
    pub delete_source: bool,
}

impl Migration {
    /// A migration of the keys matching `pattern`, 500 per batch, keeping
    /// the sources.
    pub fn new(pattern: impl Into<String>) -> Self {
        Migration {
            pattern: pattern.into(),
            batch: 500,
            dry_run: false,
            delete_source: false,
        }
    }
}

/// Where a migration stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// The SCAN cursor to resume from (0 with `done`: finished).
    pub cursor: u64,
    /// True once SCAN has gone all the way round.
    pub done: bool,
    /// Keys read.
    pub scanned: u64,
    /// Entities written (or, in a dry run, that would be); in a relayout,
    /// entities copied.
    pub migrated: u64,
    /// Keys the converter declined (`Ok(None)`) or that hold no string; in
    /// a relayout, entities the destination already held the same.
    pub skipped: u64,
    /// Legacy keys deleted; in a relayout, entities deleted in the
    /// destination (gone from the source, or renamed there: see
    /// [`Maintenance::relayout_prune_batch`](crate::maintenance::Maintenance::relayout_prune_batch)).
    pub deleted: u64,
    /// Keys that failed, with the reason; their sources are kept.
    pub failed: Vec<(String, String)>,
}

impl Progress {
    /// Adds the counts of one batch.
    pub(crate) fn add(&mut self, batch: Progress) {
        self.cursor = batch.cursor;
        self.done = batch.done;
        self.scanned += batch.scanned;
        self.migrated += batch.migrated;
        self.skipped += batch.skipped;
        self.deleted += batch.deleted;
        self.failed.extend(batch.failed);
    }
}

/// Where a cluster-wide walk's cursor keeps the master.
const NODE_SHIFT: u32 = 48;

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Runs one batch of `migration` from `cursor`: SCAN, read, convert,
    /// save (each entity atomic), and delete the sources if asked. `convert`
    /// gets each legacy key and its value; `Ok(None)` skips the key.
    pub(crate) async fn migrate_batch<E, F>(
        &self,
        migration: &Migration,
        cursor: u64,
        mut convert: F,
    ) -> Result<Progress>
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
    {
        // On a cluster the walk goes master after master: the cursor keeps
        // the master above bit 48 (see `nodes`).
        let hints = self.node_hints().await?;
        let node = (cursor >> NODE_SHIFT) as usize;
        let Some(hint) = hints.get(node) else {
            return Ok(Progress {
                done: true,
                ..Progress::default()
            });
        };
        let mut pipe = redis::pipe();
        pipe.cmd("SCAN")
            .arg(cursor & ((1 << NODE_SHIFT) - 1))
            .arg("MATCH")
            .arg(&migration.pattern)
            .arg("COUNT")
            .arg(migration.batch.max(1));
        crate::keyspace::nodes::route_to(&mut pipe, hint.as_deref());
        let ((next, keys),): ((u64, Vec<String>),) = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(|e| Error::redis(&migration.pattern, e))?;
        let next = match next {
            0 if node + 1 < hints.len() => ((node + 1) as u64) << NODE_SHIFT,
            0 => 0,
            n => ((node as u64) << NODE_SHIFT) | n,
        };
        let mut progress = Progress {
            cursor: next,
            done: next == 0,
            scanned: keys.len() as u64,
            ..Progress::default()
        };
        if keys.is_empty() {
            return Ok(progress);
        }
        let values = self.legacy_values(&keys).await?;
        let (sources, plans) = self.converted_saves(keys, values, &mut convert, &mut progress);
        if migration.dry_run {
            progress.migrated = plans.len() as u64;
            return Ok(progress);
        }
        let results = self.write_many(&plans).await?;
        let mut written = Vec::new();
        for (k, r) in sources.into_iter().zip(results) {
            match r {
                Ok(_) => written.push(k),
                Err(e) => progress.failed.push((k, e.to_string())),
            }
        }
        progress.migrated = written.len() as u64;
        if migration.delete_source && !written.is_empty() {
            progress.deleted = self.delete_legacy(&written).await?;
        }
        Ok(progress)
    }

    /// The values of the legacy keys (GET; an error or a key of another
    /// type answers in its place), one pipeline per slot on a cluster.
    async fn legacy_values(&self, keys: &[String]) -> Result<Vec<Value>> {
        self.per_slot(keys, String::as_str, |group| async move {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for k in &group {
                pipe.cmd("GET").arg(k);
            }
            pipe.query_async(&mut self.conn.clone())
                .await
                .map_err(|e| Error::redis(&group[0], e))
        })
        .await
    }

    /// Converts each legacy key's value: the keys whose entity is to be
    /// saved and the saves, in step; `progress` counts the skipped and
    /// failed ones.
    fn converted_saves<E, F>(
        &self,
        keys: Vec<String>,
        values: Vec<Value>,
        convert: &mut F,
        progress: &mut Progress,
    ) -> (Vec<String>, Vec<write::WritePlan>)
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
    {
        let mut sources = Vec::new();
        let mut plans = Vec::new();
        for (k, v) in keys.into_iter().zip(values) {
            let Value::BulkString(raw) = v else {
                progress.skipped += 1; // gone since the scan, or not a string
                continue;
            };
            match convert(&k, &raw) {
                Ok(Some(e)) => {
                    let row = match checked_row(&e) {
                        Ok(r) => r,
                        Err(err) => {
                            progress.failed.push((k, err.to_string()));
                            continue;
                        }
                    };
                    let keys = EntityKeys::of_entity(&self.ns, &e);
                    plans.push(write::save(E::DESC, &self.ns, keys, row, false, None));
                    sources.push(k);
                }
                Ok(None) => progress.skipped += 1,
                Err(reason) => progress.failed.push((k, reason)),
            }
        }
        (sources, plans)
    }

    /// Deletes the legacy keys whose entity was written: how many were
    /// there (one DEL per slot on a cluster, each answering per key).
    async fn delete_legacy(&self, written: &[String]) -> Result<u64> {
        let gone: Vec<bool> = self
            .per_slot(written, String::as_str, |group| async move {
                let mut pipe = redis::pipe();
                for k in &group {
                    pipe.cmd("DEL").arg(k);
                }
                pipe.query_async(&mut self.conn.clone())
                    .await
                    .map_err(|e| Error::redis(&group[0], e))
            })
            .await?;
        Ok(gone.into_iter().filter(|&d| d).count() as u64)
    }

    /// Runs `migration` from `cursor` to the end, batch after batch,
    /// reporting progress after each (persist `progress.cursor` to resume
    /// after an interruption).
    pub(crate) async fn migrate<E, F, P>(
        &self,
        migration: &Migration,
        cursor: u64,
        mut convert: F,
        mut on_progress: P,
    ) -> Result<Progress>
    where
        E: Entity,
        F: FnMut(&str, &[u8]) -> std::result::Result<Option<E>, String>,
        P: FnMut(&Progress),
    {
        let mut total = Progress {
            cursor,
            ..Progress::default()
        };
        loop {
            let batch = self
                .migrate_batch(migration, total.cursor, &mut convert)
                .await?;
            total.add(batch);
            on_progress(&total);
            if total.done {
                return Ok(total);
            }
        }
    }
}
