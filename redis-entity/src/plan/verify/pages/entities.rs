//! The entity side of the checker: each `SCAN` page of entity keys read,
//! each stored entity's entries looked up where they must be, its relation
//! register, sets and timelines followed.

use super::*;

/// A relation set or timeline of a stored entity, from its register entry.
pub(super) struct Listing {
    /// The member of the owning entity.
    owner: String,
    /// The set or list.
    key: String,
    /// How to spell the entity key of a member it lists: head, tail, and
    /// the suffix of the key that shows the entity exists.
    head: String,
    tail: String,
    presence: String,
    /// For a relation set: the name of the set on the other side that
    /// lists the owner back.
    reverse: Option<String>,
}

impl Listing {
    /// Parses a register entry: `head \n tail \n name [\n presence]` for a
    /// relation set, `@list \n head \n tail \n presence` for a timeline;
    /// `None` for an entry that does not say (a timeline pushed by an older
    /// version).
    fn parse(owner: &str, key: String, entry: &str) -> Option<Listing> {
        let parts: Vec<&str> = entry.split('\n').collect();
        let (head, tail, presence, reverse) = match parts.as_slice() {
            [mark, head, tail, rest @ ..] if *mark == keyspace::TIMELINE_MARK => {
                (head, tail, rest.first().copied(), None)
            }
            [head, tail, name, rest @ ..] => {
                (head, tail, rest.first().copied(), Some(name.to_string()))
            }
            _ => return None,
        };
        Some(Listing {
            owner: owner.to_owned(),
            key,
            head: head.to_string(),
            tail: tail.to_string(),
            presence: presence.unwrap_or_default().to_owned(),
            reverse,
        })
    }

    /// The key of `member`'s entity that exists while it does.
    fn entity_of(&self, member: &str) -> String {
        let mut k = keyspace::key_from_entry(&self.head, member, &self.tail);
        k.push_str(&self.presence);
        k
    }
}

impl Verifier<'_> {
    /// A chunk of the relation sets (`SMEMBERS`) and timelines (`LRANGE`)
    /// of the page's entities.
    pub(super) fn request_listings(&self, pipe: &mut redis::Pipeline, offset: usize) {
        for l in chunk(&self.listings, offset) {
            match l.reverse {
                Some(_) => pipe.cmd("SMEMBERS").arg(&l.key),
                None => pipe.cmd("LRANGE").arg(&l.key).arg(0).arg(-1),
            };
        }
    }

    /// For a chunk of the members the listings name: EXISTS of the member's
    /// entity and, for a relation set, SISMEMBER of the owner in the other
    /// side's set (whether it lists the owner back).
    pub(super) fn request_references(&self, pipe: &mut redis::Pipeline, offset: usize) {
        for (at, m) in chunk(&self.references, offset) {
            let l = &self.listings[*at];
            pipe.cmd("EXISTS").arg(l.entity_of(m));
            if let Some(reverse) = &l.reverse {
                let theirs = keyspace::key_from_entry(&l.head, m, &l.tail);
                pipe.cmd("SISMEMBER")
                    .arg(keyspace::sub_key(&theirs, reverse))
                    .arg(&l.owner);
            }
        }
    }

    /// A SCAN page of the entity keys: groups them by member (a key whose
    /// member no pk of the type writes is foreign), to be read.
    pub(super) fn feed_entity_scan(&mut self, reply: Value) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let (cursor, keys) = scan_reply(reply);
        let mut page: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for k in keys {
            match keyspace::member_of_key(desc, ns, &k) {
                Some(m) if self.members_valid.is_none_or(|ok| ok(&m)) => {
                    page.entry(m).or_default().push(k);
                }
                Some(_) => self.found.unreadable(Violation::ForeignKey { key: k }),
                None => {}
            }
        }
        self.entity_cursor = cursor;
        self.page = page.into_iter().collect();
        if self.page.is_empty() {
            self.page_done()
        } else {
            Step::ReadEntities { offset: 0 }
        }
    }

    /// A chunk of the page's entities read: each stored entity's expected
    /// entries to probe, each gone one's leftover keys.
    pub(super) fn feed_entities(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let end = (offset + CHUNK).min(self.page.len());
        let mut it = replies.into_iter();
        for at in offset..end {
            let (m, scanned) = std::mem::take(&mut self.page[at]);
            let keys = EntityKeys::new(desc, ns, m.clone());
            let first = it.next().unwrap_or(Value::Nil);
            let checked_here = scanned
                .iter()
                .any(|k| Some(k.as_str()) == first_key(&keys, &first));
            let mut replies = std::iter::once(first).chain(&mut it);
            match crate::plan::read::decode_whole(desc, &keys, &mut replies) {
                Ok(Some(row)) => self.entity_stored(m, &keys, &row, scanned, checked_here),
                Ok(None) => self.entity_gone(&m, scanned),
                // One entity that cannot be read does not stop the
                // check of the others.
                Err(e) => self.found.unreadable(Violation::Unreadable {
                    key: keys.base.clone(),
                    detail: e.to_string(),
                    member: m,
                }),
            }
        }
        self.entities_read += end - offset;
        if end < self.page.len() {
            Step::ReadEntities { offset: end }
        } else {
            self.page.clear();
            self.probes_step()
        }
    }

    /// Stored entity `m`: in the page of its entity key, a row the Rust
    /// type cannot decode is reported and its index entries are probed;
    /// its register is read next.
    fn entity_stored(
        &mut self,
        m: String,
        keys: &EntityKeys,
        row: &Row,
        scanned: Vec<String>,
        checked_here: bool,
    ) {
        let desc = self.desc;
        if checked_here {
            self.entities += 1;
            if let Some((field, reason)) = self.decodes.and_then(|check| check(&m, row)) {
                self.found.unreadable(Violation::Undecodable {
                    key: keys.base.clone(),
                    field,
                    reason,
                });
            }
            for i in 0..desc.indexes.len() {
                for value in query::row_entries(desc, &m, row, i) {
                    self.probes.push(Entry {
                        index: Some(i),
                        value,
                        member: m.clone(),
                    });
                }
            }
            if !desc.indexes.is_empty() {
                self.probes.push(Entry {
                    index: None,
                    value: Vec::new(),
                    member: m.clone(),
                });
            }
        }
        self.live.push(Live {
            member: m,
            scanned,
            checked_here,
        });
    }

    /// Entity `m` is gone: what SCAN found under its key is left over.
    fn entity_gone(&mut self, m: &str, scanned: Vec<String>) {
        // Request records expire on their own.
        let keys: Vec<String> = scanned
            .into_iter()
            .filter(|k| !k.contains(keyspace::REQUEST_SUFFIX))
            .collect();
        if !keys.is_empty() {
            self.found.leftover(m, keys);
        }
    }

    fn probes_step(&mut self) -> Step {
        if self.probes.is_empty() {
            self.registers_step()
        } else {
            Step::ProbeEntries { offset: 0 }
        }
    }

    /// A chunk of probes: an entry that is not where it must be is missing;
    /// a unique key naming another entity is looked into (a duplicate, or
    /// a stale owner and a missing entry).
    pub(super) fn feed_probes(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.probes.len());
        for (at, v) in (offset..end).zip(replies) {
            let e = std::mem::take(&mut self.probes[at]);
            self.probed(e, v);
        }
        if end < self.probes.len() {
            return Step::ProbeEntries { offset: end };
        }
        self.probes.clear();
        let next = self.registers_step();
        self.checks_then(next)
    }

    /// The answer of one probe.
    fn probed(&mut self, e: Entry, v: Value) {
        let Some(index) = e.index else {
            // With buckets (`BUCKETED_ID_PROBE`): listed in its bucket or the
            // one set, and a bucket it is listed in listed in the directory
            // (else no walk of the ids finds it).
            let listed = match v {
                Value::Int(n)
                    if keyspace::bucketed_ids(self.desc)
                        && keyspace::ids_bucket(&e.member).is_some() =>
                {
                    n & 3 != 0 && (n & 1 == 0 || n & 4 != 0)
                }
                v => matches!(v, Value::Int(1)),
            };
            if !listed {
                self.found
                    .missing_ids
                    .push(Violation::MissingId { member: e.member });
            }
            return;
        };
        let value = || String::from_utf8_lossy(&e.value).into_owned();
        let missing_sorted = |e: &Entry| Violation::MissingSortedEntry {
            key: self.zsets[index].clone(),
            member: e.member.clone(),
            value: value(),
        };
        match self.desc.indexes[index].kind {
            IndexKind::Unique => match text(v) {
                Some(owner) if owner == e.member => {}
                Some(owner) => self.checks.push(Check {
                    entry: Entry {
                        index: Some(index),
                        value: e.value,
                        member: owner,
                    },
                    then: Then::Owner {
                        candidate: e.member,
                    },
                }),
                None => {
                    let key = self.entry_key(index, &e.value);
                    self.found.unique.entry(key).or_default().insert(e.member);
                }
            },
            IndexKind::Sorted => {
                let listed = score_of(v).map(crate::schema::codec::score_text);
                if listed.as_deref().map(str::as_bytes) != Some(&e.value[..]) {
                    let v = missing_sorted(&e);
                    self.found.missing.push(v);
                }
            }
            IndexKind::Prefix => {
                if score_of(v).is_none() {
                    let v = missing_sorted(&e);
                    self.found.missing.push(v);
                }
            }
            IndexKind::Equality | IndexKind::Tags => {
                if !matches!(v, Value::Int(1)) {
                    let key = self.entry_key(index, &e.value);
                    self.found.missing.push(Violation::MissingEntry {
                        key,
                        member: e.member,
                    });
                }
            }
        }
    }

    fn registers_step(&mut self) -> Step {
        if self.live.is_empty() {
            self.page_done()
        } else {
            Step::ReadRegisters { offset: 0 }
        }
    }

    /// A chunk of relation registers (HGETALL): the listings each names,
    /// and the scanned keys of the entity none accounts for.
    pub(super) fn feed_registers(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let (desc, ns) = (self.desc, self.ns);
        let end = (offset + CHUNK).min(self.live.len());
        for (at, v) in (offset..end).zip(replies) {
            let live = std::mem::take(&mut self.live[at]);
            let owner_key = keyspace::entity_key(desc, ns, &live.member);
            let register = keyspace::relation_register(&owner_key);
            if is_wrong_type(&v) {
                self.found.wrong_type(&register, "hash");
            }
            let flat: Vec<String> = list(v).into_iter().filter_map(text).collect();
            let listings: Vec<Listing> = flat
                .chunks(2)
                .filter_map(|pair| {
                    let key = keyspace::sub_key(&owner_key, &pair[0]);
                    let entry = pair.get(1).map(String::as_str).unwrap_or("");
                    Listing::parse(&live.member, key, entry)
                })
                .collect();
            self.report_unlisted(&live, &register, &listings);
            if live.checked_here {
                self.listings.extend(listings);
            }
        }
        if end < self.live.len() {
            Step::ReadRegisters { offset: end }
        } else {
            self.live.clear();
            self.listings_step()
        }
    }

    /// Reports the keys SCAN found under stored entity `live` that are none
    /// of its keys, its register, the listings its register names or a
    /// request record.
    fn report_unlisted(&mut self, live: &Live, register: &str, listings: &[Listing]) {
        let keys = EntityKeys::new(self.desc, self.ns, live.member.clone());
        for k in &live.scanned {
            let known = keys.all().any(|own| own == k)
                || k == register
                || k.contains(keyspace::REQUEST_SUFFIX)
                || listings.iter().any(|l| l.key == *k);
            if !known {
                self.found.unreadable.push(Violation::UnlistedKey {
                    key: k.clone(),
                    member: live.member.clone(),
                });
            }
        }
    }

    fn listings_step(&mut self) -> Step {
        if self.listings.is_empty() {
            self.page_done()
        } else {
            Step::ReadListings { offset: 0 }
        }
    }

    /// A chunk of relation sets and timelines: the members each lists.
    pub(super) fn feed_listings(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.listings.len());
        for (at, v) in (offset..end).zip(replies) {
            if is_wrong_type(&v) {
                let l = &self.listings[at];
                let wanted = if l.reverse.is_some() { "set" } else { "list" };
                let key = l.key.clone();
                self.found.wrong_type(&key, wanted);
            }
            let mut listed: Vec<String> = list(v).into_iter().filter_map(text).collect();
            // A timeline may list a member more than once.
            listed.sort();
            listed.dedup();
            self.references.extend(listed.into_iter().map(|m| (at, m)));
        }
        if end < self.listings.len() {
            Step::ReadListings { offset: end }
        } else if self.references.is_empty() {
            self.page_done()
        } else {
            Step::CheckReferences { offset: 0 }
        }
    }

    /// A chunk of reference checks: a listed member whose entity is gone
    /// dangles; one whose set does not list the owner back is one-sided.
    pub(super) fn feed_references(&mut self, offset: usize, replies: Vec<Value>) -> Step {
        let end = (offset + CHUNK).min(self.references.len());
        let mut it = replies.into_iter();
        for (at, m) in &self.references[offset..end] {
            let l = &self.listings[*at];
            let exists = matches!(it.next(), Some(Value::Int(1)));
            let back = l.reverse.as_ref().map(|_| it.next());
            if let (Some(reverse), Some(Some(v))) = (&l.reverse, &back) {
                if is_wrong_type(v) {
                    // The other side's set holds another type: that is
                    // the problem to report, not a one-sided pair.
                    let theirs = keyspace::key_from_entry(&l.head, m, &l.tail);
                    self.found
                        .wrong_type(&keyspace::sub_key(&theirs, reverse), "set");
                    continue;
                }
            }
            let listed_back = back.map(|v| matches!(v, Some(Value::Int(1))));
            if !exists {
                self.found.dangling.push(Violation::DanglingMember {
                    key: l.key.clone(),
                    member: m.clone(),
                    entity: l.entity_of(m),
                    owner: l.owner.clone(),
                });
            } else if listed_back == Some(false) {
                self.found.one_sided.push(Violation::OneSidedRelation {
                    key: l.key.clone(),
                    member: m.clone(),
                });
            }
        }
        if end < self.references.len() {
            Step::CheckReferences { offset: end }
        } else {
            self.page_done()
        }
    }

    /// The entity page is checked: the next one, or the indexes.
    fn page_done(&mut self) -> Step {
        self.listings.clear();
        self.references.clear();
        match self.entity_cursor {
            0 => self.index_step(0),
            cursor => Step::ScanEntities { cursor },
        }
    }
}

/// The first key of an entity that its read found (`first` is the reply of
/// its first command): the entity key, or in the `strings` layout the
/// first of the presence marker and the columns that is there. The page of
/// `SCAN` that holds it is where the entity is checked.
fn first_key<'k>(keys: &'k EntityKeys, first: &Value) -> Option<&'k str> {
    match first {
        Value::Array(items) if !keys.columns.is_empty() => {
            let at = items.iter().position(|v| *v != Value::Nil)?;
            keys.read_keys().nth(at)
        }
        _ => Some(&keys.base),
    }
}
