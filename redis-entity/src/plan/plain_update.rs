//! A plain update's straight-line call, built from its operations without a
//! [`WritePlan`](super::write::WritePlan).
//!
//! Most updates set or increment a few columns of a `hash`-layout entity
//! and need nothing else: no TTL, condition, expected version, claim or
//! request token. Their call is the type's straight-line function
//! (script/fast.rs) with one operation code and value per column. Building
//! a whole plan first (the keys with the index shadow, a value per index,
//! a data command per column) and then reading the call out of it cost
//! about as much client time again as the call itself (docs/benchmarks.md,
//! *The plain update's call*). [`command`] builds the same call straight
//! from the operations; the tests check, operation by operation, that it
//! is the command the plan sends, so the two cannot drift apart.

use crate::keyspace::{self, EntityKeys};
use crate::plan::write::{column_index_value, pk_index_value, IndexValue};
use crate::schema::entity::{EntityDesc, IndexSource};
use crate::schema::escape::Namespace;
use crate::schema::update_op::UpdateOp;
use crate::script::args::{FastWrite, IndexArg};
use crate::script::{self, fast, write::WriteOp};
use smallvec::{smallvec, SmallVec};

/// The straight-line call of the update `ops` of the entity with `keys`
/// (built by [`EntityKeys::for_record`]: the call sends no index shadow)
/// in namespace `ns`, and the function it calls; `None` when the type has
/// no straight-line update or the update needs more than one (a `#[hash]`
/// map's operation, a column named twice): the plan's call then.
///
/// A `#[version]` field is incremented by 1 unless the update sets it, as
/// [`crate::plan::write::update`] does.
pub(crate) fn command(
    desc: &'static EntityDesc,
    ns: &Namespace,
    keys: &EntityKeys,
    ops: &[UpdateOp],
) -> Option<(&'static script::Script, redis::Cmd)> {
    // A sharded type writes within its entity's shard, whose keys are
    // spelled as one server's: its functions are that layout's.
    let space = keyspace::entity_space(desc, ns, &keys.member);
    let function = script::write::fast_script(desc, space.layout(), WriteOp::Update, false)?;
    let n = desc.columns.len();
    // The sent indexes' values, which the call borrows as it borrows
    // `values`: declared first, so that they outlive it.
    let stored: SmallVec<[IndexValue; 4]>;
    let mut codes = smallvec![fast::OP_KEEP; n];
    let mut values: SmallVec<[Option<&[u8]>; 16]> = smallvec![None; n];
    for op in ops {
        let (col, code, value) = match op {
            UpdateOp::Set {
                col,
                value: Some(v),
            } => (*col, fast::OP_SET, Some(&v[..])),
            UpdateOp::Set { col, value: None } => (*col, fast::OP_DEL, None),
            UpdateOp::Incr { col, delta, float } => {
                let code = if *float {
                    fast::OP_INCR_FLOAT
                } else {
                    fast::OP_INCR
                };
                (*col, code, Some(&delta[..]))
            }
            UpdateOp::MapReplace { .. } | UpdateOp::MapSet { .. } | UpdateOp::MapDel { .. } => {
                return None
            }
        };
        if *codes.get(col)? != fast::OP_KEEP {
            return None;
        }
        codes[col] = code;
        values[col] = value;
    }
    if let Some(v) = desc.version.filter(|&v| codes[v] == fast::OP_KEEP) {
        codes[v] = fast::OP_INCR;
        values[v] = Some(b"1");
    }
    // The indexes whose value the call sends (an indexed pk field's, a
    // sorted index's score); the others' follow from their column's code.
    stored = desc
        .indexes
        .iter()
        .filter(|idx| fast::sends_value(idx))
        .map(|idx| match idx.source {
            IndexSource::Pk => pk_index_value(desc, idx, &keys.member),
            IndexSource::Column(c) => match codes[c] {
                fast::OP_KEEP => IndexValue::Unchanged,
                fast::OP_INCR | fast::OP_INCR_FLOAT => IndexValue::Unknown,
                _ => column_index_value(idx, values[c]),
            },
        })
        .collect();
    let sent: SmallVec<[IndexArg<'_>; 4]> = stored.iter().map(|v| v.arg(false)).collect();
    let call = FastWrite {
        keys,
        namespace: space.as_str(),
        member: &keys.member,
        sent,
        ops: codes,
        values,
        tail: Vec::new(),
    };
    Some((function, call.command(function)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::write;
    use crate::schema::escape::KeyLayout;
    use crate::schema::fixtures::*;

    fn set(col: usize, value: Option<&str>) -> UpdateOp {
        UpdateOp::Set {
            col,
            value: value.map(b),
        }
    }

    fn incr(col: usize, delta: &str, float: bool) -> UpdateOp {
        UpdateOp::Incr {
            col,
            delta: b(delta),
            float,
        }
    }

    /// The plain command of `ops`, and the command of the plan of the same
    /// update, packed as they are sent.
    fn both(
        desc: &'static EntityDesc,
        ns: &Namespace,
        member: &str,
        ops: Vec<UpdateOp>,
    ) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let keys = EntityKeys::for_record(desc, ns, member.to_owned());
        let plain = command(desc, ns, &keys, &ops).map(|(_, c)| c.get_packed_command());
        let full_keys = EntityKeys::new(desc, ns, member.to_owned());
        let plan = write::update(desc, ns, full_keys, ops, None, None);
        let planned = plan.fast_command().map(|(_, c)| c.get_packed_command());
        (plain, planned)
    }

    #[test]
    fn the_plain_call_is_the_plans_call_for_every_kind_of_column_operation() {
        let cases: Vec<(&'static EntityDesc, &str, Vec<UpdateOp>)> = vec![
            // An equality index's column set; the version goes up by one.
            (&USER, "7", vec![set(COUNTRY, Some("fr"))]),
            // A sorted column set (its score sent), one removed, a unique set.
            (
                &USER,
                "7",
                vec![
                    set(RATING, Some("4.5")),
                    set(EMAIL, None),
                    set(USERNAME, Some("ann")),
                ],
            ),
            // A sorted column whose text is no number: no entry.
            (&USER, "7", vec![set(RATING, Some("high"))]),
            // Increments: of a sorted column (its score read after), of
            // the version itself (not bumped again), a float one.
            (&USER, "7", vec![incr(RATING, "2", false)]),
            (&USER, "7", vec![incr(VERSION, "5", false)]),
            (&USER, "7", vec![incr(RATING, "0.5", true)]),
            (
                &USER,
                "7",
                vec![set(VERSION, Some("9")), set(TAGS, Some("a,b"))],
            ),
            // An indexed pk field: its value sent, parsed from the member.
            (&ORDER, "acme_12", vec![set(0, Some("paid"))]),
            (&ACCOUNT, "3", vec![set(0, Some("a@x")), set(1, Some("de"))]),
            // No operation at all: the version alone.
            (&USER, "7", vec![]),
        ];
        for ns in [Namespace::none(), Namespace::tenant(1)] {
            for (desc, member, ops) in &cases {
                let (plain, planned) = both(desc, &ns, member, ops.clone());
                assert!(plain.is_some(), "{} {ops:?}: a plain call", desc.type_name);
                let text = |c: Option<Vec<u8>>| c.map(|c| String::from_utf8_lossy(&c).into_owned());
                assert_eq!(
                    text(plain),
                    text(planned),
                    "{} {ops:?} in {:?}",
                    desc.type_name,
                    ns.as_str()
                );
            }
        }
    }

    #[test]
    fn a_sharded_type_s_plain_call_names_its_entity_s_shard() {
        let ns = Namespace::none().in_layout(KeyLayout::Cluster);
        for member in ["1", "2", "3", "40"] {
            let (plain, planned) = both(&USER, &ns, member, vec![set(COUNTRY, Some("fr"))]);
            assert!(plain.is_some());
            assert_eq!(plain, planned, "member {member}");
        }
    }

    #[test]
    fn an_update_the_straight_line_call_cannot_carry_has_no_plain_call() {
        let ns = Namespace::none();
        let keys = EntityKeys::for_record(&USER, &ns, "7".to_owned());
        // A map's operation, a column named twice.
        let map = UpdateOp::MapDel {
            map: 0,
            key: b("k"),
        };
        assert!(command(&USER, &ns, &keys, &[map]).is_none());
        let twice = [set(COUNTRY, Some("fr")), incr(COUNTRY, "1", false)];
        assert!(command(&USER, &ns, &keys, &twice).is_none());
        // A layout without a straight-line write.
        let keys = EntityKeys::for_record(&SESSION, &ns, "s".to_owned());
        assert!(command(&SESSION, &ns, &keys, &[set(0, Some("u"))]).is_none());
    }
}
