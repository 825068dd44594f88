//! `store.update::<E>(&pk).set(..).incr(..).exec()`: in-place changes without
//! reading the entity (`HSET` / `HINCRBY` in the `hash` layout).

use crate::codec::{to_bytes, MapField};
use crate::entity::Entity;
use crate::error::Error;
use crate::field::{AllowsIncr, Assign, Field, HashField, Incrementable};
use crate::plan::UpdateOp;
use std::marker::PhantomData;
use std::time::Duration;

/// An update being built; `exec()` sends it as one atomic write. `S` is the
/// store it runs on ([`crate::Store`] or [`crate::blocking::Store`]).
#[must_use = "an update does nothing until `exec()` is called"]
pub struct Update<'s, E: Entity, S> {
    pub(crate) store: &'s S,
    pub(crate) member: String,
    pub(crate) ops: Vec<UpdateOp>,
    pub(crate) ttl: Option<Duration>,
    /// `if_version`: the stored `#[version]` the update requires.
    pub(crate) version: Option<String>,
    /// The first encoding error; reported by `exec()` so the chain stays fluent.
    pub(crate) error: Option<Error>,
    _e: PhantomData<fn() -> E>,
}

impl<'s, E: Entity, S> Update<'s, E, S> {
    pub(crate) fn new(store: &'s S, pk: &E::Pk) -> Self {
        Update {
            store,
            member: E::member(pk),
            ops: Vec::new(),
            ttl: None,
            version: None,
            error: None,
            _e: PhantomData,
        }
    }

    /// The same update on another store (the blocking store runs the async one).
    pub(crate) fn rebind<'t, T>(self, store: &'t T) -> Update<'t, E, T> {
        Update {
            store,
            member: self.member,
            ops: self.ops,
            ttl: self.ttl,
            version: self.version,
            error: self.error,
            _e: PhantomData,
        }
    }

    fn push(mut self, op: crate::Result<UpdateOp>) -> Self {
        match op {
            Ok(op) => self.ops.push(op),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Stores `value` in `field` (`None` removes an optional field; on a
    /// `#[hash]` field the whole map is replaced).
    pub fn set<F: Assign<E>>(self, field: F, value: impl Into<F::Value>) -> Self {
        let op = field.assign(&value.into());
        self.push(op)
    }

    /// Adds `delta` to a numeric field in place (`HINCRBY` / `HINCRBYFLOAT`).
    pub fn incr<T: Incrementable, C, K: AllowsIncr>(
        self,
        field: Field<E, T, C, K>,
        delta: T::Delta,
    ) -> Self {
        let op = field.incr_op(delta);
        self.push(Ok(op))
    }

    /// Sets one entry of a `#[hash]` field (`HSET <key>:<field> k v`).
    pub fn hset<M: MapField>(
        self,
        field: HashField<E, M>,
        key: impl Into<M::Key>,
        value: impl Into<M::Value>,
    ) -> Self {
        let op = UpdateOp::MapSet {
            map: field.map(),
            key: to_bytes(&key.into()),
            value: to_bytes(&value.into()),
        };
        self.push(Ok(op))
    }

    /// Removes one entry of a `#[hash]` field.
    pub fn hdel<M: MapField>(self, field: HashField<E, M>, key: impl Into<M::Key>) -> Self {
        let op = UpdateOp::MapDel {
            map: field.map(),
            key: to_bytes(&key.into()),
        };
        self.push(Ok(op))
    }

    /// Applies the update only if the stored `#[version]` is `version`
    /// (otherwise [`crate::Error::VersionConflict`], nothing written). Every
    /// update of a versioned entity adds 1 to its version.
    pub fn if_version(mut self, version: impl std::fmt::Display) -> Self {
        self.version = Some(version.to_string());
        self
    }

    /// Gives the entity a new TTL with this write (otherwise the remaining one is kept).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}
