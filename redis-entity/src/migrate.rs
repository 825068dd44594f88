//! Moving legacy data into entities (seed 001: `User_*_Profile` JSON strings
//! become profile hashes), with SCAN (never KEYS), batches, a resumable
//! cursor, a dry run and progress reports.
//!
//! One batch is one `SCAN` step, one pipelined read of the keys it returned,
//! one pipelined write of the converted entities (each atomic, indexes
//! included), and, if asked, one pipelined delete of the sources whose entity
//! was written. The cursor of each batch is reported, so an interrupted
//! migration resumes where it stopped; converting again is harmless (saves
//! are upserts), so a batch cut short is simply redone.

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
pub struct Progress {
    /// The SCAN cursor to resume from (0 with `done`: finished).
    pub cursor: u64,
    /// True once SCAN has gone all the way round.
    pub done: bool,
    /// Keys read.
    pub scanned: u64,
    /// Entities written (or, in a dry run, that would be).
    pub migrated: u64,
    /// Keys the converter declined (`Ok(None)`) or that hold no string.
    pub skipped: u64,
    /// Legacy keys deleted.
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
