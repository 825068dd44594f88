//! What a store tells an application about its work: counters it can
//! export ([`Store::metrics`]), and with the `tracing` feature a span per
//! operation (entity type, operation, keys, round trips, outcome) at debug
//! level, for whatever subscriber the application installs.

use super::Store;
use crate::error::Result;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

/// Counters of a store (and its clones) since it was made; see
/// [`Store::metrics`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Entity writes sent (save, insert, update, delete, expire...; one per
    /// entity in a batch).
    pub writes: u64,
    /// Writes that failed (a typed error: nothing was written), outcome
    /// unknown excepted.
    pub write_errors: u64,
    /// Writes whose outcome is unknown (connection lost, timeout).
    pub unknown_outcomes: u64,
    /// Writes sent again by `StoreBuilder::write_retries`.
    pub retries: u64,
    /// Entity records asked for (get, get_many, query and `top` fetches),
    /// from Redis or the near cache; a unique lookup counts its owner's
    /// record, once, when an entity holds the value.
    pub records_read: u64,
    /// Queries run (their index part).
    pub queries: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    writes: AtomicU64,
    write_errors: AtomicU64,
    unknown_outcomes: AtomicU64,
    retries: AtomicU64,
    records_read: AtomicU64,
    queries: AtomicU64,
}

impl Counters {
    pub fn retried(&self) {
        self.retries.fetch_add(1, Relaxed);
    }

    /// Writes of a batch that failed on their own.
    pub fn failed(&self, n: usize) {
        self.write_errors.fetch_add(n as u64, Relaxed);
    }

    /// Records read outside an [`Op::Read`] (a unique lookup's owner).
    pub fn read(&self, n: usize) {
        self.records_read.fetch_add(n as u64, Relaxed);
    }

    fn snapshot(&self) -> Metrics {
        Metrics {
            writes: self.writes.load(Relaxed),
            write_errors: self.write_errors.load(Relaxed),
            unknown_outcomes: self.unknown_outcomes.load(Relaxed),
            retries: self.retries.load(Relaxed),
            records_read: self.records_read.load(Relaxed),
            queries: self.queries.load(Relaxed),
        }
    }
}

/// One operation of a store: counted, and traced with the `tracing`
/// feature (which alone reads the names).
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) enum Op<'a> {
    /// Writes of `n` entities of one type (one round trip); `key` is the
    /// (first) entity's.
    Write {
        entity: &'a str,
        operation: crate::script::write::WriteOp,
        key: &'a str,
        n: usize,
    },
    /// A unit of work of `n` operations (one round trip); `key` is its
    /// first operation's.
    Unit { key: &'a str, n: usize },
    /// Reads of `n` records (0 or 1 round trip: the near cache may answer).
    Read { entity: &'a str, n: usize },
    /// A unique lookup's one call (find_unique.lua): a read of one record,
    /// counted by the caller only when the reply names an owner
    /// (`Counters::read`), as the two-step lookup counts its record read
    /// only once it has an owner; a call that falls back to the two reads
    /// (refused, or a key of another type) is counted by them alone.
    Lookup { entity: &'a str },
    /// The index part of a query (one round trip).
    Query { entity: &'a str },
}

/// The span of an operation (nothing without the `tracing` feature).
#[cfg(feature = "tracing")]
type OpSpan = tracing::Span;
#[cfg(not(feature = "tracing"))]
type OpSpan = ();

/// The work of an operation, inside its span with the `tracing` feature.
#[cfg(feature = "tracing")]
type InSpan<W> = tracing::instrument::Instrumented<W>;
#[cfg(not(feature = "tracing"))]
type InSpan<W> = W;

impl<'a> Op<'a> {
    /// Runs `work` as this operation. The future polls `work` where it
    /// lies: an `async fn` taking `work` would hold it twice (the argument,
    /// then the future it awaits), and a store's futures are kilobytes that
    /// every call would copy and carry.
    pub fn run<'c, W>(self, counters: &'c Counters, work: W) -> Observed<'a, 'c, InSpan<W>> {
        #[cfg(feature = "tracing")]
        let (work, span) = {
            let span = self.span();
            (tracing::Instrument::instrument(work, span.clone()), span)
        };
        #[cfg(not(feature = "tracing"))]
        let span = ();
        Observed {
            op: self,
            counters,
            span,
            work,
        }
    }

    #[cfg(feature = "tracing")]
    fn span(&self) -> tracing::Span {
        match self {
            Op::Write {
                entity,
                operation,
                key,
                n,
            } => tracing::debug_span!(
                "redis_entity.write",
                entity = %entity,
                operation = ?operation,
                key = %key,
                entities = n,
                round_trips = 1,
                outcome = tracing::field::Empty,
            ),
            Op::Unit { key, n } => tracing::debug_span!(
                "redis_entity.transaction",
                key = %key,
                operations = n,
                round_trips = 1,
                outcome = tracing::field::Empty,
            ),
            Op::Read { entity, n } => tracing::debug_span!(
                "redis_entity.read",
                entity = %entity,
                records = n,
                outcome = tracing::field::Empty,
            ),
            Op::Lookup { entity } => tracing::debug_span!(
                "redis_entity.read",
                entity = %entity,
                records = 1,
                outcome = tracing::field::Empty,
            ),
            Op::Query { entity } => tracing::debug_span!(
                "redis_entity.query",
                entity = %entity,
                round_trips = 1,
                outcome = tracing::field::Empty,
            ),
        }
    }

    /// Counts the operation's outcome.
    fn count<T>(&self, counters: &Counters, result: &Result<T>) {
        match self {
            Op::Write { n, .. } | Op::Unit { n, .. } => {
                counters.writes.fetch_add(*n as u64, Relaxed);
                match result {
                    Err(e) if e.is_connection() => {
                        counters.unknown_outcomes.fetch_add(1, Relaxed);
                    }
                    Err(_) => {
                        counters.write_errors.fetch_add(1, Relaxed);
                    }
                    Ok(_) => {}
                }
            }
            Op::Read { n, .. } => {
                counters.records_read.fetch_add(*n as u64, Relaxed);
            }
            Op::Query { .. } => {
                counters.queries.fetch_add(1, Relaxed);
            }
            Op::Lookup { .. } => {}
        }
    }
}

pin_project_lite::pin_project! {
    /// An operation under way (see [`Op::run`]): its work, then its count
    /// and, with the `tracing` feature, its span's outcome.
    #[must_use = "an operation does nothing unless awaited"]
    pub(crate) struct Observed<'a, 'c, W> {
        op: Op<'a>,
        counters: &'c Counters,
        span: OpSpan,
        #[pin]
        work: W,
    }
}

impl<T, W: Future<Output = Result<T>>> Future for Observed<'_, '_, W> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.project();
        let result = std::task::ready!(this.work.poll(cx));
        this.op.count(this.counters, &result);
        #[cfg(feature = "tracing")]
        this.span.record(
            "outcome",
            match &result {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.to_string(),
            }
            .as_str(),
        );
        Poll::Ready(result)
    }
}

impl<C> Store<C> {
    /// What this store (and its clones) has done so far: writes, failed
    /// writes, writes of unknown outcome, retries, records read, queries.
    /// Cheap: read them as often as a metrics exporter wants.
    ///
    /// ```no_run
    /// # async fn run(store: redis_entity::Store) {
    /// let m = store.metrics();
    /// println!("writes {} (failed {}, unknown {})", m.writes, m.write_errors, m.unknown_outcomes);
    /// # }
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.counters.snapshot()
    }
}
