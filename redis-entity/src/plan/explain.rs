//! `explain()`: what a query or a write will send, without running it, as
//! a SQL user reads a plan: the round trips in order, the commands or
//! script call of each, and the keys they touch.

use crate::keyspace::{self, EntityKeys};
use crate::plan::query::{self, Spec};
use crate::plan::write::WritePlan;
use crate::schema::entity::EntityDesc;
use crate::schema::escape::Namespace;
use std::fmt;

/// The plan of a call: see [`crate::Query::explain`],
/// [`crate::Keys::explain_save`] and [`crate::Update::explain`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Explain {
    /// What is explained, in words.
    pub what: String,
    /// The round trips in order; each is the commands it pipelines.
    pub round_trips: Vec<Vec<String>>,
    /// The keys read or written, as far as they are known before running
    /// (the records a query fetches depend on its answer).
    pub keys: Vec<String>,
    /// What is decided at run time (another path, a round trip that may
    /// not be needed).
    pub notes: Vec<String>,
}

impl fmt::Display for Explain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {} round trip(s)", self.what, self.round_trips.len())?;
        for (i, trip) in self.round_trips.iter().enumerate() {
            writeln!(f, "  round trip {}:", i + 1)?;
            for c in trip {
                writeln!(f, "    {c}")?;
            }
        }
        writeln!(f, "  keys: {}", self.keys.join(", "))?;
        for n in &self.notes {
            writeln!(f, "  note: {n}")?;
        }
        Ok(())
    }
}

/// The plan of a query that fetches its records.
pub(crate) fn query(desc: &'static EntityDesc, ns: &Namespace, spec: &Spec) -> Explain {
    let mut notes = Vec::new();
    // A sharded type on a cluster asks every shard in the first round trip.
    let spaces = keyspace::spaces(desc, ns);
    let asked = if spaces.len() > 1 {
        query::shard_spec(spec)
    } else {
        spec.clone()
    };
    let (mut first, mut keys) = (Vec::new(), Vec::new());
    for space in &spaces {
        let (trip, named, note) = first_trip(desc, space, &asked);
        first.extend(trip);
        keys.extend(named);
        if notes.is_empty() {
            notes.push(note.to_owned());
        }
    }
    if spaces.len() > 1 {
        notes.push(format!(
            "on the cluster, the first round trip reads every index shard ({}): one \
             pipeline per master serving them, sent together (one per shard where the \
             connection cannot route a pipeline to a node); the answers are merged (sums, \
             unions, ordered pages by score) and the records read one pipeline per master",
            spaces.len()
        ));
    }
    // The reads of one record, for a placeholder id (in a placeholder
    // shard: the id's own shard is not known here).
    let mut pipe = redis::pipe();
    let (record_ns, placeholder) = if spaces.len() > 1 {
        let shard0 = crate::keyspace::shard_space(desc, ns, 0);
        (
            shard0,
            Some(format!("{{{}:0}}", desc.group.unwrap_or(desc.prefix))),
        )
    } else {
        (ns.clone(), None)
    };
    crate::plan::read::read(
        desc,
        &EntityKeys::new(desc, &record_ns, "<id>".into()),
        &mut pipe,
    );
    let shard_of_id = format!("{{{}:<shard of id>}}", desc.group.unwrap_or(desc.prefix));
    let fetch: Vec<String> = pipe
        .cmd_iter()
        .map(|c| {
            let text = words(c);
            let text = match &placeholder {
                Some(p) => text.replace(p.as_str(), &shard_of_id),
                None => text,
            };
            format!("{text} (per matching entity, pipelined)")
        })
        .collect();
    notes.push(
        "with a near cache, records it holds are not read (the second round trip may \
         not be needed)"
            .into(),
    );
    Explain {
        what: format!("query of {}", desc.type_name),
        round_trips: vec![first, fetch],
        keys,
        notes,
    }
}

/// The first round trip of a query in one space, the keys it names, and
/// what may change at run time.
fn first_trip(
    desc: &'static EntityDesc,
    ns: &Namespace,
    spec: &Spec,
) -> (Vec<String>, Vec<String>, &'static str) {
    match query::native_set_command(desc, ns, spec) {
        Some(native) => {
            let expiry = keyspace::expiry_key(desc, ns);
            let text = words(&native);
            let named: Vec<String> = text.split(' ').skip(1).map(str::to_owned).collect();
            let ids = keyspace::ids_key(desc, ns);
            let directory = keyspace::ids_directory(&ids);
            let keys: Vec<String> = [expiry.clone(), directory.clone(), ids.clone()]
                .into_iter()
                .chain(named)
                .collect();
            (
                vec![
                    format!("ZCARD {expiry}"),
                    format!("SCARD {directory}"),
                    format!("SCARD {ids}"),
                    text,
                ],
                keys,
                "when entities of the type can have expired (a TTL), or the type holds more \
                 entities than a native command may read in one call (then its query is \
                 paged), the read-only query script runs instead",
            )
        }
        None => {
            let call = query::script_call(desc, ns, spec, false, false);
            let keys = call
                .keys()
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            (
                vec![call.describe()],
                keys,
                "expired entities the script meets are skipped; their index entries are \
                 removed in one more round trip",
            )
        }
    }
}

/// A command as text.
fn words(c: &redis::Cmd) -> String {
    crate::script::command_text(c, None)
}

/// The plan of one write.
pub(crate) fn write(plan: &WritePlan) -> Explain {
    let call = plan.call();
    let keys: Vec<String> = plan.keys.all().cloned().collect();
    Explain {
        what: format!(
            "{:?} of {} {}",
            plan.op, plan.desc.type_name, plan.keys.base
        ),
        round_trips: vec![vec![call.describe()]],
        keys,
        notes: vec![
            "one atomic function call: it checks every key it will write and the unique \
             values before its first write, and reads the stored values it needs"
                .into(),
            format!(
                "the index keys it writes are named in the type's function (under {}), \
                 from the values stored and given",
                keyspace::index_prefix(plan.desc, &plan.ns, "<field>")
            ),
        ],
    }
}
