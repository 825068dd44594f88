//! Time-bucketed leaderboards (weekly boards): one sorted set per day or ISO
//! week, rotated by EXPIRE, as a first-class API.
//!
//! A [`Board`] scores entities of one type; `store.board(&WEEKLY).incr(..)` adds to an entity's
//! score in the current bucket (`ZINCRBY`) and gives the bucket its expiry in
//! the same round trip, so old buckets disappear by themselves after `keep`
//! further periods. Keys: `<ns><prefix>:board:<name>:<bucket>`, with buckets
//! named `2026-11-29` (daily) or `2026-W48` (weekly, ISO 8601 weeks).
//!
//! ```
//! use redis_entity::board::{Board, Period};
//! # #[derive(redis_entity::RedisEntity)] struct Player { #[pk] id: u64, name: String }
//! const WEEKLY: Board<Player> = Board::weekly("score", 1);
//! let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(20_786 * 86_400);
//! assert_eq!(WEEKLY.bucket(at), "2026-W48");
//! assert_eq!(Board::<Player>::daily("score", 7).bucket(at), "2026-11-29");
//! ```

use super::Store;
use crate::error::{Error, Result};
use crate::plan::query;
use crate::schema::entity::Entity;
use crate::schema::escape::Namespace;
use crate::schema::field::{Field, SortedIndex};
use crate::schema::pk::IntoPk;
use redis::aio::{ConnectionLike, ConnectionManager};
use std::marker::PhantomData;
use std::time::{SystemTime, UNIX_EPOCH};

const DAY_MS: u64 = 86_400_000;

/// How long one bucket of a board lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// One bucket per UTC day.
    Daily,
    /// One bucket per ISO 8601 week (Monday to Sunday, UTC).
    Weekly,
}

/// A time-bucketed leaderboard of entities of type `E`.
pub struct Board<E> {
    name: &'static str,
    period: Period,
    keep: u32,
    _e: PhantomData<fn() -> E>,
}

impl<E> Clone for Board<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Board<E> {}

impl<E> std::fmt::Debug for Board<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("name", &self.name)
            .field("period", &self.period)
            .field("keep", &self.keep)
            .finish()
    }
}

/// (year, month, day) of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = (z - era * 146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe as i64 + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = (y - era * 400) as u64;
    let mp = if m > 2 { m - 3 } else { m + 9 } as u64;
    let doy = (153 * mp + 2) / 5 + d as u64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe as i64 - 719_468
}

fn days_of(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_millis() / DAY_MS as u128) as i64,
        Err(e) => -((e.duration().as_millis().div_ceil(DAY_MS as u128)) as i64),
    }
}

impl<E> Board<E> {
    /// A board with one bucket per UTC day, each kept `keep` days after it ends.
    pub const fn daily(name: &'static str, keep: u32) -> Self {
        Board {
            name,
            period: Period::Daily,
            keep,
            _e: PhantomData,
        }
    }

    /// A board with one bucket per ISO week, each kept `keep` weeks after it ends.
    pub const fn weekly(name: &'static str, keep: u32) -> Self {
        Board {
            name,
            period: Period::Weekly,
            keep,
            _e: PhantomData,
        }
    }

    /// The board's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The bucket period.
    pub const fn period(&self) -> Period {
        self.period
    }

    /// The bucket that `at` falls into: `2026-11-29` or `2026-W48`.
    pub fn bucket(&self, at: SystemTime) -> String {
        let days = days_of(at);
        match self.period {
            Period::Daily => {
                let (y, m, d) = civil_from_days(days);
                format!("{y:04}-{m:02}-{d:02}")
            }
            Period::Weekly => {
                let weekday = (days + 3).rem_euclid(7); // 0 = Monday
                let thursday = days - weekday + 3;
                let (year, _, _) = civil_from_days(thursday);
                let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
                format!("{year:04}-W{week:02}")
            }
        }
    }

    /// When the bucket of `at` should expire: its end plus `keep` periods,
    /// in milliseconds since the epoch.
    pub fn expires_at_ms(&self, at: SystemTime) -> u64 {
        let days = days_of(at);
        let (end_day, period_days) = match self.period {
            Period::Daily => (days + 1, 1),
            Period::Weekly => (days - (days + 3).rem_euclid(7) + 7, 7),
        };
        let end = end_day.max(0) as u64 * DAY_MS;
        end + self.keep as u64 * period_days * DAY_MS
    }

    /// The bucket's key: `<ns><prefix>:board:<name>:<bucket>`.
    pub fn key(&self, ns: &Namespace, at: SystemTime) -> String
    where
        E: Entity,
    {
        crate::keyspace::board_key(E::DESC, ns, self.name, &self.bucket(at))
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// Adds `delta` to the entity's score on `board` in the current bucket
    /// (`ZINCRBY`) and sets the bucket's expiry, in one round trip; returns
    /// the new score.
    pub(crate) async fn board_incr<E: Entity>(
        &self,
        board: &Board<E>,
        pk: impl IntoPk<E::Pk>,
        delta: f64,
    ) -> Result<f64> {
        let pk = &pk.into_pk();
        self.board_incr_at(board, pk, delta, std::time::SystemTime::now())
            .await
    }

    /// Like `board_incr`, in the bucket of time `at`.
    pub(crate) async fn board_incr_at<E: Entity>(
        &self,
        board: &Board<E>,
        pk: impl IntoPk<E::Pk>,
        delta: f64,
        at: std::time::SystemTime,
    ) -> Result<f64> {
        self.mark_layout().await?;
        let pk = &pk.into_pk();
        let key = board.key(&self.ns, at);
        // A script rather than MULTI: a ZINCRBY refused inside MULTI would
        // still let the PEXPIREAT after it run on a key of the wrong type.
        let call = crate::script::args::BoardIncr {
            bucket: &key,
            delta,
            member: &E::member(pk),
            expires_at_ms: board.expires_at_ms(at),
        }
        .call();
        let score: String = crate::script::invoke(&mut self.conn.clone(), &self.sent, &call)
            .await
            .map_err(|e| Error::redis(&key, e))?;
        query::parse_score(&score).ok_or_else(|| Error::UnexpectedReply { key, detail: score })
    }

    /// The `n` best entities of the current bucket of `board`, with scores
    /// (two round trips).
    pub(crate) async fn board_top<E: Entity>(
        &self,
        board: &Board<E>,
        n: usize,
    ) -> Result<Vec<(E, f64)>> {
        self.board_top_at(board, std::time::SystemTime::now(), n)
            .await
    }

    /// The `n` best entities of the bucket of time `at`.
    pub(crate) async fn board_top_at<E: Entity>(
        &self,
        board: &Board<E>,
        at: std::time::SystemTime,
        n: usize,
    ) -> Result<Vec<(E, f64)>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let key = board.key(&self.ns, at);
        let flat: Vec<String> = redis::cmd("ZRANGE")
            .arg(&key)
            .arg(0)
            .arg(n - 1)
            .arg("REV")
            .arg("WITHSCORES")
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        // Entities deleted since are skipped; a board keeps its history.
        self.fetch_scored(&query::Answer::from_scored(flat), false)
            .await?
            .into_iter()
            .collect()
    }

    /// The entity's 0-based rank in the current bucket of `board`, best first.
    pub(crate) async fn board_rank<E: Entity>(
        &self,
        board: &Board<E>,
        pk: impl IntoPk<E::Pk>,
    ) -> Result<Option<u64>> {
        let pk = &pk.into_pk();
        let key = board.key(&self.ns, std::time::SystemTime::now());
        redis::cmd("ZREVRANK")
            .arg(&key)
            .arg(E::member(pk))
            .query_async(&mut self.reader())
            .await
            .map_err(|e| Error::redis(&key, e))
    }
}

/// A sorted index as a leaderboard: `store.board(Player::SCORE)`, the best
/// entities with their profiles and an entity's rank, skipping expired
/// entities.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// #[derive(RedisEntity)]
/// struct Player { #[pk] id: u64, name: String, #[index(sorted)] score: f64 }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let top: Vec<(Player, f64)> = store.board(Player::SCORE).top(10).await?;
/// let rank: Option<u64> = store.board(Player::SCORE).rank(&9).await?; // 0 = best
/// # Ok(()) }
/// ```
pub struct Leaderboard<'s, E, C = ConnectionManager> {
    store: &'s Store<C>,
    /// The sorted index's place in `E::DESC.indexes`.
    index: Option<usize>,
    _e: PhantomData<fn() -> E>,
}

impl<E, C> Clone for Leaderboard<'_, E, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, C> Copy for Leaderboard<'_, E, C> {}

impl<E: Entity, C> std::fmt::Debug for Leaderboard<'_, E, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let field = self.index.map(|i| E::DESC.indexes[i].field);
        write!(
            f,
            "Leaderboard({}.{})",
            E::DESC.prefix,
            field.unwrap_or("?")
        )
    }
}

/// The buckets of one rotating [`Board`] in a store: `store.board(&WEEKLY)`.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store, board::Board};
/// # #[derive(RedisEntity)] struct Player { #[pk] id: u64, name: String }
/// const WEEKLY: Board<Player> = Board::weekly("score", 1);
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// store.board(&WEEKLY).incr(&9, 10.0).await?;     // this week's bucket
/// let best = store.board(&WEEKLY).top(3).await?;
/// # Ok(()) }
/// ```
pub struct Rotating<'s, E, C = ConnectionManager> {
    store: &'s Store<C>,
    board: Board<E>,
}

impl<E, C> Clone for Rotating<'_, E, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, C> Copy for Rotating<'_, E, C> {}

impl<E, C> std::fmt::Debug for Rotating<'_, E, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rotating({:?})", self.board)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// A leaderboard: given a field with `#[index(sorted)]`, its sorted
    /// index ([`Leaderboard`]: `store.board(Player::SCORE).top(10)`); given
    /// a rotating [`Board`], its time buckets ([`Rotating`]:
    /// `store.board(&WEEKLY).incr(&9, 10.0)`). Anything else does not
    /// compile (see [`BoardSource`]).
    pub fn board<B: BoardSource>(&self, board: B) -> B::Handle<'_, C> {
        board.open(self)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What [`Store::board`] opens: a field with a sorted index (the handle is
/// a [`Leaderboard`]) or a rotating [`Board`] (the handle is a
/// [`Rotating`]). Implemented for those two only.
pub trait BoardSource: sealed::Sealed {
    /// The handle `store.board(..)` gives for this source.
    type Handle<'s, C: 's>;
    #[doc(hidden)]
    fn open<C>(self, store: &Store<C>) -> Self::Handle<'_, C>;
}

impl<E, T, Co, K: SortedIndex<N>, N> sealed::Sealed for Field<E, T, Co, K, N> {}
impl<E: Entity, T, Co, K: SortedIndex<N>, N> BoardSource for Field<E, T, Co, K, N> {
    type Handle<'s, C: 's> = Leaderboard<'s, E, C>;
    fn open<C>(self, store: &Store<C>) -> Leaderboard<'_, E, C> {
        Leaderboard {
            store,
            index: query::index_of(E::DESC, self.name()),
            _e: PhantomData,
        }
    }
}

impl<E> sealed::Sealed for &Board<E> {}
impl<E: Entity> BoardSource for &Board<E> {
    type Handle<'s, C: 's> = Rotating<'s, E, C>;
    fn open<C>(self, store: &Store<C>) -> Rotating<'_, E, C> {
        Rotating {
            store,
            board: *self,
        }
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Leaderboard<'_, E, C> {
    /// The `n` best entities, highest score first, with their scores (one
    /// round trip, or two when some may have expired; on a cluster one per
    /// index shard, merged). A record that does not decode fails the call:
    /// see [`top_each`](Self::top_each).
    pub async fn top(&self, n: usize) -> Result<Vec<(E, f64)>> {
        self.store
            .top_at::<E>(self.index, n)
            .await?
            .into_iter()
            .collect()
    }

    /// [`top`](Self::top) with a result per entity: a record that does not
    /// decode is an error in its place, naming its key and field, and the
    /// others are still returned.
    pub async fn top_each(&self, n: usize) -> Result<Vec<Result<(E, f64)>>> {
        self.store.top_at::<E>(self.index, n).await
    }

    /// The entity's 0-based rank, best first (`ZREVRANK`, expired entities
    /// not counted); `None` when it is not on the board.
    pub async fn rank(&self, pk: impl IntoPk<E::Pk>) -> Result<Option<u64>> {
        let pk = &pk.into_pk();
        self.store.rank_at::<E>(self.index, E::member(pk)).await
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Rotating<'_, E, C> {
    /// Adds `delta` to the entity's score in the current bucket (`ZINCRBY`)
    /// and sets the bucket's expiry, in one round trip; returns the new score.
    pub async fn incr(&self, pk: impl IntoPk<E::Pk>, delta: f64) -> Result<f64> {
        self.store.board_incr(&self.board, pk, delta).await
    }

    /// Like [`incr`](Self::incr), in the bucket of time `at`.
    pub async fn incr_at(&self, pk: impl IntoPk<E::Pk>, delta: f64, at: SystemTime) -> Result<f64> {
        self.store.board_incr_at(&self.board, pk, delta, at).await
    }

    /// The `n` best entities of the current bucket, with scores (two round
    /// trips); entities deleted since are skipped.
    pub async fn top(&self, n: usize) -> Result<Vec<(E, f64)>> {
        self.store.board_top(&self.board, n).await
    }

    /// The `n` best entities of the bucket of time `at`.
    pub async fn top_at(&self, at: SystemTime, n: usize) -> Result<Vec<(E, f64)>> {
        self.store.board_top_at(&self.board, at, n).await
    }

    /// The entity's 0-based rank in the current bucket, best first.
    pub async fn rank(&self, pk: impl IntoPk<E::Pk>) -> Result<Option<u64>> {
        self.store.board_rank(&self.board, pk).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct X;
    fn at(days: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(days * 86_400 + 3600)
    }

    #[test]
    fn buckets_follow_iso_weeks_and_civil_days() {
        let w: Board<X> = Board::weekly("s", 0);
        let d: Board<X> = Board::daily("s", 0);
        assert_eq!(w.bucket(at(20_786)), "2026-W48"); // Sunday 2026-11-29
        assert_eq!(w.bucket(at(18_630)), "2020-W53"); // 2021-01-03
        assert_eq!(w.bucket(at(18_627)), "2020-W53"); // 2020-12-31
        assert_eq!(w.bucket(at(20_087)), "2025-W01"); // 2024-12-30
        assert_eq!(w.bucket(at(0)), "1970-W01");
        assert_eq!(d.bucket(at(20_786)), "2026-11-29");
        assert_eq!(d.bucket(at(0)), "1970-01-01");
        for z in [-1000i64, 0, 59, 365, 10_000, 20_786] {
            let (y, m, dd) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, dd), z);
        }
    }

    #[test]
    fn buckets_expire_after_their_end_plus_keep() {
        let w: Board<X> = Board::weekly("s", 1);
        // Sunday 2026-11-29 -> week ends Monday 2026-11-30 00:00, kept one more week.
        assert_eq!(w.expires_at_ms(at(20_786)), (20_787 + 7) * DAY_MS);
        let d: Board<X> = Board::daily("s", 2);
        assert_eq!(d.expires_at_ms(at(20_786)), (20_787 + 2) * DAY_MS);
    }
}
