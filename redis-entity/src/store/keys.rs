//! The keys a store writes, as a handle, `store.keys()`: its key layout and
//! the namespace's layout marker, the keys of one entity, and a SCAN of the
//! keyspace for looking at what was written.

use super::key_scan::KeyScan;
use super::Store;
use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::plan::explain::Explain;
use crate::schema::entity::Entity;
use crate::schema::escape::{KeyLayout, Namespace};
use crate::schema::pk::IntoPk;
use redis::aio::{ConnectionLike, ConnectionManager};

/// The keys of a store: `store.keys()`: its layout and namespace, the keys
/// of one entity and what a save of it sends, a SCAN of what was written.
///
/// ```no_run
/// # use redis_entity::{RedisEntity, Store, KeyLayout};
/// # #[derive(RedisEntity)] #[redis(prefix = "user")] struct User { #[pk] id: u64, name: String }
/// # async fn run(store: Store) -> redis_entity::Result<()> {
/// let keys = store.keys();
/// assert_eq!(keys.layout(), KeyLayout::Standalone);
/// keys.check_layout().await?;                       // GET <ns>@redis-entity:layout
/// assert_eq!(keys.of::<User>(&9).base, "user:9");
/// let written: Vec<String> = keys.scan("user:*").await?; // SCAN .. MATCH user:*
/// # Ok(()) }
/// ```
pub struct Keys<'s, C = ConnectionManager> {
    store: &'s Store<C>,
}

impl<C> Clone for Keys<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Keys<'_, C> {}

impl<C> std::fmt::Debug for Keys<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("namespace", &self.store.ns)
            .finish()
    }
}

impl<C: ConnectionLike + Clone + Send + Sync> Store<C> {
    /// The keys this store writes: its layout, the keys of one entity, a
    /// SCAN of what was written.
    pub fn keys(&self) -> Keys<'_, C> {
        Keys { store: self }
    }
}

impl<'s, C: ConnectionLike + Clone + Send + Sync> Keys<'s, C> {
    /// The key layout this store writes.
    pub fn layout(&self) -> KeyLayout {
        self.store.ns.layout()
    }

    /// The key families this store writes apart from any entity type's
    /// (whose families `E::layout()` lists, with [`EntityLayout::of_layout`]
    /// for the cluster layout): the namespace's layout marker, and the
    /// read-through caches' entries and loader locks. Spelled in this
    /// store's namespace.
    ///
    /// ```no_run
    /// # async fn run(store: redis_entity::Store) {
    /// let families = store.keys().families();
    /// assert_eq!(families[0].pattern, "@redis-entity:layout");
    /// # }
    /// ```
    ///
    /// [`EntityLayout::of_layout`]: crate::EntityLayout::of_layout
    pub fn families(&self) -> Vec<crate::keyspace::layout::KeyPattern> {
        crate::keyspace::layout::store_keys(&self.store.ns)
    }

    /// The namespace in front of every key this store writes.
    pub fn namespace(&self) -> &'s Namespace {
        &self.store.ns
    }

    /// Checks the layout marker of this store's namespace
    /// (`<namespace>@redis-entity:layout`) against this store's layout,
    /// writing nothing (one `GET`). A namespace written in the other layout
    /// is refused with [`Error::LayoutMismatch`]: reading it would find
    /// nothing and writing it would mix two layouts. A namespace no store
    /// wrote yet has no marker, and passes.
    ///
    /// Connecting writes nothing: a store made by [`Store::connect`] or
    /// [`Store::builder`] records the marker with
    /// its first write (a script: `GET`, then `SET` if there was none;
    /// once per store and namespace),
    /// where it makes the same check; a store that never writes never
    /// creates it. Call this to check before reading.
    pub async fn check_layout(&self) -> Result<()> {
        let store = self.store;
        let key = crate::keyspace::layout_marker(&store.ns);
        let found: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut store.conn.clone())
            .await
            .map_err(|e| Error::redis(&key, e))?;
        store.layout_matches(found)
    }

    /// What `save(entity)` would send, without sending it: one function
    /// call, the keys it names and its arguments.
    ///
    /// ```
    /// # use redis_entity::{RedisEntity, Store};
    /// # #[derive(RedisEntity)] #[redis(prefix = "user")] struct User { #[pk] id: u64, #[index] country: String }
    /// # fn show(store: &Store) -> redis_entity::Result<()> {
    /// let plan = store.keys().explain_save(&User { id: 9, country: "DE".into() })?;
    /// assert_eq!(plan.round_trips.len(), 1);
    /// assert!(plan.round_trips[0][0].starts_with("FCALL redis_entity_"));
    /// assert_eq!(plan.keys[0], "user:9");
    /// # Ok(()) }
    /// ```
    pub fn explain_save<E: Entity>(&self, entity: &E) -> Result<Explain> {
        Ok(crate::plan::explain::write(
            &self.store.save_plan(entity, false, None)?,
        ))
    }

    /// Every key of the entity with `pk`, namespaced (what `save` writes).
    pub fn of<E: Entity>(&self, pk: impl IntoPk<E::Pk>) -> EntityKeys {
        let pk = &pk.into_pk();
        EntityKeys::of::<E>(&self.store.ns, pk)
    }

    /// The keys matching a SCAN `pattern` (glob syntax), sorted: for
    /// looking at what the store wrote (`store.keys().scan("user:*")`).
    /// SCAN, never KEYS: it does not block the server, and costs one round
    /// trip per 1,000 keys looked at; on a cluster, every master's keys.
    /// It collects every key it meets: for a keyspace of any size, walk it
    /// a page at a time with [`scan_pages`](Self::scan_pages).
    pub async fn scan(&self, pattern: &str) -> Result<Vec<String>> {
        let mut keys = std::collections::BTreeSet::new();
        self.store
            .each_page(
                pattern,
                |page| async move { Ok(page) },
                |page| keys.extend(page),
            )
            .await?;
        Ok(keys.into_iter().collect())
    }

    /// The keys matching a SCAN `pattern`, a page at a time (one `SCAN`
    /// round trip each, on every master of a cluster in turn): the walk
    /// holds one page, whatever the number of keys.
    ///
    /// ```no_run
    /// # async fn run(store: redis_entity::Store) -> redis_entity::Result<()> {
    /// let mut pages = store.keys().scan_pages("user:*");
    /// while let Some(keys) = pages.next_page().await? {
    ///     println!("{} keys", keys.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn scan_pages(&self, pattern: &str) -> KeyScan<'s, C> {
        KeyScan::new(self.store, pattern)
    }
}
