//! The index side of the checker: each index walked in pages, and each
//! member it lists asked of its entity (`checks`, also used by the entity
//! side for a unique key that names another entity).

use super::*;

impl Verifier<'_> {
    /// Reads what decides whether the entity of `e.member` holds the entry:
    /// in the hash layout the indexed field alone (`HMGET`, with its old
    /// name) or, for the set of all ids or an index of a pk field, whether
    /// it exists; in the other layouts the whole entity.
    pub(super) fn request_holder(&self, pipe: &mut redis::Pipeline, e: &Entry) {
        let desc = self.desc;
        let keys = EntityKeys::new(desc, self.ns, e.member.clone());
        if desc.layout != Layout::Hash {
            crate::plan::read::read(desc, &keys, pipe);
            return;
        }
        match e.index.map(|i| desc.indexes[i].source) {
            Some(IndexSource::Column(c)) => {
                let col = &desc.columns[c];
                pipe.cmd("HMGET")
                    .arg(&keys.base)
                    .arg(col.name)
                    .arg(col.alias);
            }
            None | Some(IndexSource::Pk) => {
                pipe.cmd("EXISTS").arg(&keys.base);
            }
        }
    }

    /// Decodes the replies of [`request_holder`](Self::request_holder):
    /// whether the entity holds the entry (`None`: it cannot be read, which
    /// the entity walk reports).
    fn holds(&self, e: &Entry, replies: &mut impl Iterator<Item = Value>) -> Option<bool> {
        let desc = self.desc;
        let row = if desc.layout != Layout::Hash {
            let keys = EntityKeys::new(desc, self.ns, e.member.clone());
            match crate::plan::read::decode_read(desc, &keys, replies) {
                Ok(Some(row)) => row,
                Ok(None) => return Some(false),
                Err(_) => return None,
            }
        } else {
            let v = replies.next().unwrap_or(Value::Nil);
            match (e.index.map(|i| desc.indexes[i].source), v) {
                (_, Value::ServerError(_)) => return None,
                (Some(IndexSource::Column(c)), v) => {
                    let mut columns = vec![None; desc.columns.len()];
                    columns[c] = list(v).into_iter().find_map(crate::plan::read::bytes);
                    Row {
                        columns,
                        maps: Vec::new(),
                    }
                }
                (_, Value::Int(1)) => Row {
                    columns: vec![None; desc.columns.len()],
                    maps: Vec::new(),
                },
                _ => return Some(false),
            }
        };
        Some(match e.index {
            None => true,
            Some(i) => query::row_entries(desc, &e.member, &row, i).contains(&e.value),
        })
    }

    // --- Reading listed members' entities.

    /// The entity reads of `checks` first, if any, then `next`.
    pub(super) fn checks_then(&mut self, next: Step) -> Step {
        if self.checks.is_empty() {
            next
        } else {
            self.resume = Some(next);
            Step::ReadChecks { offset: 0 }
        }
    }

    /// A chunk of listed members' entities read: whether each holds the
    /// entry that lists it.
    pub(super) fn feed_checks(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.checks.len());
        let mut it = replies.into_iter();
        for at in offset..end {
            let holds = self.holds(&self.checks[at].entry, &mut it);
            let c = std::mem::take(&mut self.checks[at]);
            self.checked(c, holds);
        }
        if end < self.checks.len() {
            return Step::ReadChecks { offset: end };
        }
        self.checks.clear();
        self.resume.take().unwrap_or(Step::Done)
    }

    /// What a check found: `holds` is whether the entity holds the entry
    /// (`None`: it cannot be read, its own violation).
    fn checked(&mut self, c: Check, holds: Option<bool>) {
        let e = c.entry;
        match c.then {
            Then::Owner { candidate } => {
                let key = self.entry_key(e.index.unwrap_or_default(), &e.value);
                let holders = self.found.unique.entry(key).or_default();
                holders.insert(candidate);
                if holds == Some(true) {
                    holders.insert(e.member);
                }
            }
            Then::Stale if holds != Some(false) => {}
            Then::Stale => {
                let Some(i) = e.index else {
                    let v = Violation::StaleId { member: e.member };
                    return self.found.stale_ids.push(v);
                };
                let v = match self.desc.indexes[i].kind {
                    IndexKind::Sorted | IndexKind::Prefix => Violation::StaleSortedEntry {
                        key: self.zsets[i].clone(),
                        member: e.member,
                        value: String::from_utf8_lossy(&e.value).into_owned(),
                    },
                    _ => Violation::StaleEntry {
                        key: self.entry_key(i, &e.value),
                        member: e.member,
                    },
                };
                self.found.stale.push(v);
            }
        }
    }

    // --- Indexes to entities.

    /// The step that reads index `from`; past the last index, the set of
    /// all members (kept only for a type with indexes), else the end.
    pub(super) fn index_step(&self, from: usize) -> Step {
        if from < self.desc.indexes.len() {
            Step::ScanIndex {
                index: from,
                cursor: 0,
            }
        } else if self.desc.indexes.is_empty() {
            Step::Done
        } else {
            Step::ReadIds { cursor: 0 }
        }
    }

    /// Index `index`'s next page, or the next index once `cursor` is 0.
    fn next_page(&self, index: usize, cursor: u64) -> Step {
        match cursor {
            0 => self.index_step(index + 1),
            cursor => Step::ScanIndex { index, cursor },
        }
    }

    /// Adds an entry found listed, to be checked against its entity.
    fn listed(&mut self, index: usize, value: Vec<u8>, member: String) {
        self.index_entries += 1;
        self.checks.push(Check {
            entry: Entry {
                index: Some(index),
                value,
                member,
            },
            then: Then::Stale,
        });
    }

    /// A `ZSCAN` page of a sorted index (members and scores) or of a prefix
    /// index (`<value>:<member>`): its entries, checked; then the next page.
    pub(super) fn feed_zset_page(&mut self, index: usize, reply: Value) -> Step {
        let sorted = self.desc.indexes[index].kind == IndexKind::Sorted;
        let (cursor, flat) = cursor_reply(reply);
        let mut it = flat.into_iter();
        while let (Some(entry), Some(score)) = (it.next(), it.next()) {
            let Some(entry) = crate::plan::read::bytes(entry) else {
                continue;
            };
            if sorted {
                // An unreadable score lists no value.
                let Some(score) = score_of(score) else {
                    continue;
                };
                let member = String::from_utf8_lossy(&entry).into_owned();
                let value = crate::schema::codec::score_text(score).into_bytes();
                self.listed(index, value, member);
            } else if let Some(sep) = entry.iter().position(|&b| b == b':') {
                let member = String::from_utf8_lossy(&entry[sep + 1..]).into_owned();
                self.listed(index, entry[..sep].to_vec(), member);
            }
        }
        let next = self.next_page(index, cursor);
        self.checks_then(next)
    }

    /// A SCAN page of an index's key family: the keys found are read.
    pub(super) fn feed_index_scan(&mut self, index: usize, reply: Value) -> Step {
        let (cursor, keys) = scan_reply(reply);
        self.index_keys = keys;
        if self.index_keys.is_empty() {
            self.next_page(index, cursor)
        } else {
            Step::ReadIndex {
                index,
                cursor,
                offset: 0,
            }
        }
    }

    /// The value an index key is the entry of.
    fn key_value(&self, index: usize, at: usize) -> Vec<u8> {
        let key = &self.index_keys[at];
        key.strip_prefix(self.prefixes[index].as_str())
            .unwrap_or(key)
            .as_bytes()
            .to_vec()
    }

    /// A chunk of index keys read: a unique key's owner (GET) or the first
    /// page of the members a set lists (SSCAN), to be checked; sets with
    /// more pages are read on after the chunks.
    pub(super) fn feed_index_keys(
        &mut self,
        index: usize,
        cursor: u64,
        offset: usize,
        replies: Vec<Value>,
    ) -> Step {
        let end = (offset + KEYS_PER_TRIP).min(self.index_keys.len());
        let unique = self.desc.indexes[index].kind == IndexKind::Unique;
        for (at, v) in (offset..end).zip(replies) {
            let (more, listed) = if unique {
                (0, text(v).into_iter().collect())
            } else {
                scan_reply(v)
            };
            self.add_listed(index, at, listed);
            if more != 0 {
                self.index_more.push((at, more));
            }
        }
        let next = if end < self.index_keys.len() {
            Step::ReadIndex {
                index,
                cursor,
                offset: end,
            }
        } else {
            self.after_index_keys(index, cursor)
        };
        self.checks_then(next)
    }

    /// The next pages of sets that had more; those with more still go to
    /// the back of the line.
    pub(super) fn feed_index_more(
        &mut self,
        index: usize,
        cursor: u64,
        replies: Vec<Value>,
    ) -> Step {
        let n = KEYS_PER_TRIP.min(self.index_more.len());
        let read: Vec<(usize, u64)> = self.index_more.drain(..n).collect();
        for ((at, _), v) in read.into_iter().zip(replies) {
            let (more, listed) = scan_reply(v);
            self.add_listed(index, at, listed);
            if more != 0 {
                self.index_more.push((at, more));
            }
        }
        let next = self.after_index_keys(index, cursor);
        self.checks_then(next)
    }

    /// Adds the members index key `at` lists, to be checked.
    fn add_listed(&mut self, index: usize, at: usize, listed: Vec<String>) {
        let value = self.key_value(index, at);
        for m in listed {
            self.listed(index, value.clone(), m);
        }
    }

    /// Once every key of an index SCAN page had its first page: the sets
    /// with more pages, then the next SCAN page.
    fn after_index_keys(&mut self, index: usize, cursor: u64) -> Step {
        if !self.index_more.is_empty() {
            return Step::ReadIndexMore { index, cursor };
        }
        self.index_keys.clear();
        self.next_page(index, cursor)
    }

    /// A page of the set of all ids: each member's entity must exist.
    pub(super) fn feed_ids(&mut self, at: u64, reply: Value) -> Step {
        let (cursor, found) = scan_reply(reply);
        if at & IDS_BUCKETS != 0 {
            // A directory page: its buckets next, then its next page.
            let cursor = if cursor == 0 { 0 } else { cursor | IDS_BUCKETS };
            return match (found.is_empty(), cursor) {
                (false, _) => Step::ReadBuckets {
                    cursor,
                    buckets: found,
                },
                (true, 0) => Step::Done,
                (true, cursor) => Step::ReadIds { cursor },
            };
        }
        self.check_ids(found);
        // After the one set, a type with buckets walks their directory.
        let next = match cursor {
            0 if keyspace::bucketed_ids(self.desc) => Step::ReadIds {
                cursor: IDS_BUCKETS,
            },
            0 => Step::Done,
            cursor => Step::ReadIds { cursor },
        };
        self.checks_then(next)
    }

    /// The ids of the buckets a directory page named; one its bucket
    /// should not hold is misplaced.
    pub(super) fn feed_buckets(
        &mut self,
        cursor: u64,
        buckets: &[String],
        replies: Vec<Value>,
    ) -> Step {
        let head = keyspace::ids_key(self.desc, self.ns);
        let mut ids = Vec::new();
        for (bucket, v) in buckets.iter().zip(replies) {
            for member in list(v).into_iter().filter_map(text) {
                if keyspace::ids_bucket(&member).as_deref() != Some(bucket.as_str()) {
                    self.found.stale.push(Violation::MisplacedId {
                        key: format!("{head}:{bucket}"),
                        member: member.clone(),
                    });
                }
                ids.push(member);
            }
        }
        self.check_ids(ids);
        let next = match cursor {
            0 => Step::Done,
            cursor => Step::ReadIds { cursor },
        };
        self.checks_then(next)
    }

    /// Each listed id's entity is looked for: a missing one is stale.
    fn check_ids(&mut self, ids: Vec<String>) {
        self.ids_seen += ids.len();
        self.checks.extend(ids.into_iter().map(|member| Check {
            entry: Entry {
                member,
                ..Entry::default()
            },
            then: Then::Stale,
        }));
    }
}
