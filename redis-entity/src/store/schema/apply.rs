//! `schema apply`: the code's definition becomes the keyspace's, the keys
//! of dropped indexes go, and the stored entities are walked into the
//! indexes that are building, resumably.
//!
//! The walk is a SCAN of the entity keys of each space (each shard on a
//! cluster), a page at a time; each entity of a page is indexed again from
//! its stored value by one atomic write (`WriteOp::Reindex`), so a write of
//! the entity meanwhile is never overwritten by what the page read. After
//! each page the walk's cursors go to the schema record: an interrupted
//! apply resumes where it stopped, and a space whose server restarted since
//! (its run id changed, so its cursor means nothing) is walked again.
//!
//! The indexes become ready only if no process of a definition that keeps
//! other indexes wrote since the walk started: such a process announces
//! itself before writing (see the module above), so a walk it may have
//! missed is seen, and walked again once it is gone.

use super::record::{Record, Walk};
use super::{refusal, Adopt, IndexState, Schema};
use crate::error::{Error, Result};
use crate::keyspace;
use crate::plan::verify::Progress;
use crate::schema::definition::{fingerprint, fingerprint_text, kind_name};
use crate::schema::entity::{Entity, EntityDesc, IndexKind};
use crate::schema::escape::Namespace;
use crate::script::args::SchemaMode;
use crate::store::Store;
use redis::aio::ConnectionLike;
use std::collections::BTreeSet;
use std::time::Duration;

/// What [`Schema::apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// The indexes now ready that were building.
    pub built: Vec<String>,
    /// The indexes whose keys were deleted (dropped, or of an old kind).
    pub dropped: Vec<String>,
    /// The fields rewritten under their new names (`old -> new`).
    pub renamed: Vec<String>,
    /// Stored entities indexed by the walks.
    pub indexed: usize,
    /// Index keys deleted.
    pub deleted_keys: usize,
    /// Walks started (more than one when a process of an older definition
    /// wrote during one).
    pub walks: usize,
}

/// The (field, kind) of each index of a definition.
type IndexSet = BTreeSet<(String, &'static str)>;

fn index_set(desc: &EntityDesc) -> IndexSet {
    desc.indexes
        .iter()
        .map(|i| (i.field.to_owned(), kind_name(i.kind)))
        .collect()
}

/// The definitions the record met, other than `ours`, that keep other
/// indexes than it or write a field it renamed under the old name: their
/// writes would leave a build incomplete, write entries of a dropped index,
/// or a field a rewrite moved. With until when each may write.
fn conflicting(rec: &Record, ours: &str, desc: &EntityDesc) -> Vec<(String, u64)> {
    let want = index_set(desc);
    let aliases: Vec<&str> = desc.columns.iter().filter_map(|c| c.alias).collect();
    rec.definitions()
        .into_iter()
        .filter(|(fp, _, _)| fp != ours)
        .filter(|(fp, _, _)| {
            rec.definition(fp).is_none_or(|d| {
                let theirs: IndexSet = d
                    .indexes
                    .iter()
                    .map(|(f, k)| (f.clone(), kind_name(*k)))
                    .collect();
                theirs != want || d.columns.iter().any(|c| aliases.contains(&c.name.as_str()))
            })
        })
        .map(|(fp, _, seen)| (fp, seen))
        .collect()
}

/// What an apply has to do, as the record says.
struct Work {
    /// The indexes of the definition not ready.
    building: Vec<(&'static str, IndexKind)>,
    /// Indexes whose keys go: dropped ones, and the old kinds of indexes
    /// whose kind changed.
    deleting: Vec<(String, IndexKind)>,
    /// Fields to rewrite: (old name, new name).
    renames: Vec<(String, String)>,
}

impl Work {
    fn pending(rec: &Record, desc: &'static EntityDesc) -> Work {
        let building = desc
            .indexes
            .iter()
            .filter(|i| rec.state(i.field, i.kind) != Some(IndexState::Ready))
            .map(|i| (i.field, i.kind))
            .collect();
        let deleting = rec
            .indexes()
            .into_iter()
            .filter(|(_, _, s)| *s == IndexState::Dropping)
            .map(|(f, k, _)| (f, k))
            .chain(rec.stale_kinds())
            .collect();
        Work {
            building,
            deleting,
            renames: rec.renames(),
        }
    }

    fn is_empty(&self) -> bool {
        self.building.is_empty() && self.deleting.is_empty() && self.renames.is_empty()
    }
}

/// Waits (up to a second) while a process of a definition of `others` may
/// still write, as its last announcement said (it announces again before
/// writing on): true when it waited.
async fn wait_for_older(
    rec: &Record,
    others: &[(String, u64)],
    progress: &mut (impl FnMut(&Progress) + Send),
) -> bool {
    let last = others.iter().map(|&(_, seen)| seen).max().unwrap_or(0);
    if last < rec.now_ms {
        return false;
    }
    progress(&Progress {
        step: "waiting for processes of an older definition",
        done: 0,
        total: Some(others.iter().filter(|o| o.1 >= rec.now_ms).count()),
    });
    let wait = Duration::from_millis(last - rec.now_ms + 20);
    tokio::time::sleep(wait.min(Duration::from_secs(1))).await;
    true
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Schema<'_, C> {
    /// Makes `E`'s definition the keyspace's (unless it does not fit the
    /// stored data: [`Error::SchemaMismatch`]), deletes the keys of the
    /// indexes it dropped and builds those it added: see
    /// [`apply_with`](Self::apply_with).
    pub async fn apply<E: Entity>(&self) -> Result<Applied> {
        self.apply_with::<E>(|_| {}).await
    }

    /// [`apply`](Self::apply), calling `progress` after every round trip.
    ///
    /// It first waits for the processes of older definitions that keep
    /// other indexes to be gone (each announces itself for a heartbeat, 10 s
    /// by default), then walks every stored entity into the building
    /// indexes, and marks them ready if none of those processes wrote
    /// during the walk (else it waits and walks again). Interrupted, it
    /// resumes where the last page ended. Returns at once when nothing is
    /// to do.
    pub async fn apply_with<E: Entity>(
        &self,
        progress: impl FnMut(&Progress) + Send,
    ) -> Result<Applied> {
        self.apply_as::<E>(Adopt::Known, progress).await
    }

    /// [`apply_with`](Self::apply_with), the definition made the
    /// keyspace's as `how` says.
    pub(crate) async fn apply_as<E: Entity>(
        &self,
        how: Adopt,
        mut progress: impl FnMut(&Progress) + Send,
    ) -> Result<Applied> {
        let desc = E::DESC;
        let ours = fingerprint_text(fingerprint(desc));
        let mut applied = Applied::default();
        loop {
            let rec = self.adopted(desc, how, &ours).await?;
            let work = Work::pending(&rec, desc);
            if work.is_empty() {
                return Ok(applied);
            }
            let others = conflicting(&rec, &ours, desc);
            if wait_for_older(&rec, &others, &mut progress).await {
                continue;
            }
            let spaces = keyspace::spaces(desc, &self.store.ns);
            let mut walk = match rec.walk() {
                Some(w) if w.cursors.len() == spaces.len() => w,
                _ => {
                    applied.walks += 1;
                    Walk::new(rec.now_ms, spaces.len())
                }
            };
            if !walk.deleted
                && !self
                    .clear(desc, &spaces, &work, &mut walk, &mut applied, &mut progress)
                    .await?
            {
                continue;
            }
            if !self
                .walk::<E>(
                    &spaces,
                    &work.renames,
                    &mut walk,
                    &mut applied,
                    &mut progress,
                )
                .await?
            {
                continue;
            }
            if self.finish(desc, &walk, &work, others).await? {
                applied.built = work.building.iter().map(|(f, _)| (*f).to_owned()).collect();
                applied.dropped = work.deleting.into_iter().map(|(f, _)| f).collect();
                applied.renamed = work
                    .renames
                    .iter()
                    .map(|(o, n)| format!("{o} -> {n}"))
                    .collect();
                // Queries of this store see the new states at once.
                self.store.announce(desc, Adopt::New).await?;
                return Ok(applied);
            }
            progress(&Progress {
                step: "an older definition wrote during the walk: walking again",
                done: 0,
                total: None,
            });
        }
    }

    /// The record once `desc`'s definition is the keyspace's (adopted as
    /// `how` says), or why it cannot be.
    async fn adopted(&self, desc: &'static EntityDesc, how: Adopt, ours: &str) -> Result<Record> {
        let (rec, known) = self.store.announce(desc, how).await?;
        if let Some(words) = &known.refused {
            return Err(refusal(desc, words));
        }
        if rec.current() != Some(ours) {
            return Err(refusal(
                desc,
                &["another definition became the keyspace's while this one applied".into()],
            ));
        }
        Ok(rec)
    }

    /// The start of a walk: the keys of dropped indexes (and of old kinds)
    /// deleted, the indexes to build emptied (entries an older
    /// definition's delete left for a gone entity go; the walk writes every
    /// stored entity's), the ids set too when no index of the type is ready
    /// (a definition without indexes did not keep it), entities of a type
    /// that had no indexes moved into its shards on a cluster. False when
    /// another definition became the keyspace's meanwhile.
    async fn clear(
        &self,
        desc: &'static EntityDesc,
        spaces: &[Namespace],
        work: &Work,
        walk: &mut Walk,
        applied: &mut Applied,
        progress: &mut (impl FnMut(&Progress) + Send),
    ) -> Result<bool> {
        let store = self.store;
        for (field, kind) in &work.deleting {
            applied.deleted_keys += store.delete_index(desc, spaces, field, *kind).await?;
            progress(&Progress {
                step: "deleting the keys of dropped indexes",
                done: applied.deleted_keys,
                total: None,
            });
        }
        for (field, kind) in &work.building {
            store.delete_index(desc, spaces, field, *kind).await?;
        }
        if work.building.len() == desc.indexes.len() {
            store.delete_ids(desc, spaces).await?;
        }
        let unplaced = store.unplaced(desc).await?;
        if !unplaced.is_empty() {
            store.place(desc, &unplaced).await?;
        }
        walk.deleted = true;
        self.step(desc, walk).await
    }

    /// Marks the work done, unless a definition of `others` wrote since
    /// the walk started (or another definition was adopted): true when done.
    async fn finish(
        &self,
        desc: &EntityDesc,
        walk: &Walk,
        work: &Work,
        others: Vec<(String, u64)>,
    ) -> Result<bool> {
        let mut states: Vec<(String, String)> = work
            .building
            .iter()
            .map(|(f, k)| (format!("index:{f}"), format!("{} ready", kind_name(*k))))
            .collect();
        for (f, _) in &work.deleting {
            // A dropped index's state goes; one whose kind changed is
            // ready above. Either way no old kind's keys are left to delete.
            if desc.indexes.iter().all(|i| i.field != f) {
                states.push((format!("index:{f}"), String::new()));
            }
            states.push((format!("drop:{f}"), String::new()));
        }
        for (old, _) in &work.renames {
            states.push((format!("rename:{old}"), String::new()));
        }
        let finished = self
            .store
            .schema_step(
                desc,
                SchemaMode::Finish {
                    started_ms: walk.started_ms,
                    unless_seen: others.into_iter().map(|(fp, _)| fp).collect(),
                    states,
                },
            )
            .await?;
        Ok(finished.status == "done")
    }

    /// Records the walk's progress; false when another definition became
    /// the keyspace's meanwhile (the apply starts over).
    async fn step(&self, desc: &EntityDesc, walk: &Walk) -> Result<bool> {
        let text = walk.text();
        let rec = self
            .store
            .schema_step(desc, SchemaMode::Step { walk: &text })
            .await?;
        Ok(rec.status == "stepped")
    }

    /// Walks every space from the walk's cursors, a SCAN page at a time,
    /// indexing each entity found; false when interrupted by another
    /// definition.
    async fn walk<E: Entity>(
        &self,
        spaces: &[Namespace],
        renames: &[(String, String)],
        walk: &mut Walk,
        applied: &mut Applied,
        progress: &mut (impl FnMut(&Progress) + Send),
    ) -> Result<bool> {
        let store = self.store;
        let desc = E::DESC;
        let total = store.count_ids(desc).await?;
        for (s, space) in spaces.iter().enumerate() {
            while let (Some(cursor), run) = walk.cursors[s].clone() {
                let (next, keys, now_run) = store.entity_page(desc, space, cursor, true).await?;
                let now_run = now_run.unwrap_or_default();
                if cursor != 0 && !run.is_empty() && run != now_run {
                    // The server restarted since this cursor was read: its
                    // table is another, so the space is walked again.
                    walk.cursors[s] = (Some(0), now_run);
                    continue;
                }
                let members = crate::store::maintenance::entities_on_page::<E>(space, &keys);
                if !renames.is_empty() && !members.is_empty() {
                    store.rename_fields(desc, &members, renames).await?;
                }
                applied.indexed += store.reindex_members(desc, &members).await?;
                walk.walked += members.len() as u64;
                walk.cursors[s] = ((next != 0).then_some(next), now_run);
                if !self.step(desc, walk).await? {
                    return Ok(false);
                }
                progress(&Progress {
                    step: "indexing stored entities",
                    done: walk.walked as usize,
                    total: total.map(|t| t as usize),
                });
            }
        }
        Ok(true)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Store<C> {
    /// Rewrites the renamed fields of `members` under their new names: one
    /// call per entity, pipelined per slot (one round trip on one server,
    /// one per slot at once on a cluster).
    async fn rename_fields(
        &self,
        desc: &EntityDesc,
        members: &[String],
        renames: &[(String, String)],
    ) -> Result<()> {
        let keys: Vec<[String; 1]> = members
            .iter()
            .map(|m| [keyspace::entity_key(desc, &self.ns, m)])
            .collect();
        let calls = keys
            .iter()
            .map(|k| crate::script::args::RenameFields { keys: k, renames }.call())
            .collect();
        for reply in self.invoke_per_slot(calls).await? {
            if let redis::Value::ServerError(e) = reply {
                return Err(Error::redis(desc.key_head, e.into()));
            }
        }
        Ok(())
    }

    /// Deletes the id sets of each space (`id_sets`).
    async fn delete_ids(&self, desc: &EntityDesc, spaces: &[Namespace]) -> Result<()> {
        for space in spaces {
            self.delete_id_sets(desc, space).await?;
        }
        Ok(())
    }

    /// Deletes every key of index `field` of `kind` in each space (a SCAN
    /// of its family for set and string indexes, the one sorted set
    /// otherwise): how many keys went.
    async fn delete_index(
        &self,
        desc: &EntityDesc,
        spaces: &[Namespace],
        field: &str,
        kind: IndexKind,
    ) -> Result<usize> {
        let mut deleted = 0;
        for space in spaces {
            if matches!(kind, IndexKind::Sorted | IndexKind::Prefix) {
                let key = keyspace::index_zset(desc, space, field);
                let n: usize = redis::cmd("UNLINK")
                    .arg(&key)
                    .query_async(&mut self.connection())
                    .await
                    .map_err(|e| Error::redis(&key, e))?;
                deleted += n;
                continue;
            }
            let hint = keyspace::ids_key(desc, space);
            let pattern = keyspace::index_scan_pattern(desc, space, field);
            let mut cursor = 0;
            loop {
                let mut pipe = redis::pipe();
                keyspace::nodes::scan_page(&mut pipe, cursor, &pattern);
                keyspace::nodes::route_to(
                    &mut pipe,
                    keyspace::sharded(desc, &self.ns).then_some(hint.as_str()),
                );
                let ((next, keys),): ((u64, Vec<String>),) = pipe
                    .query_async(&mut self.connection())
                    .await
                    .map_err(|e| Error::redis(&pattern, e))?;
                if !keys.is_empty() {
                    // One space's keys share its slot: one UNLINK.
                    let n: usize = redis::cmd("UNLINK")
                        .arg(&keys)
                        .query_async(&mut self.connection())
                        .await
                        .map_err(|e| Error::redis(&keys[0], e))?;
                    deleted += n;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }
}
