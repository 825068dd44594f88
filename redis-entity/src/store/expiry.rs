//! TTLs of one entity type as a handle, `store.expiry::<Session>()`: saves
//! that set or remove an entity's TTL, and the TTL calls on its keys. Every
//! key of an entity gets the same TTL, and its index entries follow it (see
//! docs/expiry-and-cache.md).

use super::{remaining, ttl_cmd, Store};
use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::schema::entity::Entity;
use crate::schema::pk::IntoPk;
use crate::script::write::WriteOp;
use redis::aio::{ConnectionLike, ConnectionManager};
use std::marker::PhantomData;
use std::time::Duration;

/// The TTLs of the entities of type `E`: `store.expiry::<Session>()`.
///
/// A plain [`Store::save`] keeps an existing entity's remaining TTL and
/// gives a new one the type's `#[redis(ttl = ..)]`; these calls change it.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store};
/// # use std::time::Duration;
/// # #[derive(RedisEntity)] struct Session { #[pk] id: String, user: u64 }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let sessions = store.expiry::<Session>();
/// let s = Session { id: "ab12".into(), user: 9 };
/// sessions.save_with_ttl(&s, Duration::from_secs(3600)).await?;
/// assert!(sessions.ttl("ab12").await?.is_some());
/// sessions.persist("ab12").await?; // lives until deleted
/// # Ok(()) }
/// ```
pub struct Expiry<'s, E, C = ConnectionManager> {
    store: &'s Store<C>,
    _e: PhantomData<fn() -> E>,
}

impl<E, C> Clone for Expiry<'_, E, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, C> Copy for Expiry<'_, E, C> {}

impl<E: Entity, C> std::fmt::Debug for Expiry<'_, E, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expiry({})", E::DESC.prefix)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The TTLs of the entities of type `E`: save with or without one,
    /// expire, persist, read.
    pub fn expiry<E: Entity>(&self) -> Expiry<'_, E, C> {
        Expiry {
            store: self,
            _e: PhantomData,
        }
    }
}

impl<E: Entity, C: ConnectionLike + Clone + Send + Sync> Expiry<'_, E, C> {
    /// Upserts `entity` (as [`Store::save`]) and gives all its keys a new
    /// TTL, in the same atomic write.
    pub async fn save_with_ttl(&self, entity: &E, ttl: Duration) -> Result<bool> {
        let store = self.store;
        store.expiring.insert(super::desc_id(E::DESC));
        store.save_as(entity, false, Some(ttl)).await
    }

    /// Upserts `entity` and removes its TTL, if it had one (it then lives
    /// until deleted; its index entries leave the expiry bookkeeping).
    pub async fn save_without_ttl(&self, entity: &E) -> Result<bool> {
        let store = self.store;
        let mut plan = store.save_plan(entity, false, None)?;
        plan.remove_ttl = true;
        store.write(&plan).await
    }

    /// Gives every key of the entity a TTL; `false` if there is no such entity.
    pub async fn expire(&self, pk: impl IntoPk<E::Pk>, ttl: Duration) -> Result<bool> {
        let pk = &pk.into_pk();
        self.store.expiring.insert(super::desc_id(E::DESC));
        self.store
            .lifecycle::<E>(pk, WriteOp::Expire, Some(ttl))
            .await
    }

    /// Removes the TTL of every key of the entity; `false` if there is no
    /// such entity.
    pub async fn persist(&self, pk: impl IntoPk<E::Pk>) -> Result<bool> {
        let pk = &pk.into_pk();
        self.store.lifecycle::<E>(pk, WriteOp::Persist, None).await
    }

    /// The remaining TTL of the entity: `None` when it has none or does not
    /// exist (one round trip).
    pub async fn ttl(&self, pk: impl IntoPk<E::Pk>) -> Result<Option<Duration>> {
        let store = self.store;
        let pk = &pk.into_pk();
        let keys = EntityKeys::of::<E>(&store.ns, pk);
        let ms: Vec<i64> = ttl_cmd(E::DESC, &keys)
            .query_async(&mut store.reader())
            .await
            .map_err(|e| Error::redis(&keys.base, e))?;
        Ok(remaining(&ms))
    }
}
