//! Admin operations over the entity types of an application, as a library
//! API and as a small command line an application embeds with its own types:
//!
//! ```no_run
//! # use redis_entity::{admin::Admin, RedisEntity, Store};
//! # #[derive(RedisEntity)] struct User { #[pk] id: u64, #[index] country: String }
//! # #[derive(RedisEntity)] struct Book { #[pk] id: u64, title: String }
//! # async fn run() -> redis_entity::Result<()> {
//! let store = Store::connect("redis://127.0.0.1/").await?;
//! let admin = Admin::new(store).register::<User>()?.register::<Book>()?;
//! // e.g. `myapp-admin verify --repair User`
//! let args: Vec<String> = std::env::args().skip(1).collect();
//! let out = admin.run(&args).await?;
//! print!("{out}");
//! # Ok(()) }
//! ```
//!
//! Commands: `layouts`, `verify [--repair] [TYPE...]`, `reindex [TYPE...]`
//! (every stored entity is indexed again), `schema plan|apply|status
//! [TYPE...]` (see [`Schema`](crate::evolution::Schema): what applying the
//! code's definitions would do, doing it, the state of each index),
//! `sweep [--budget N] [TYPE...]`, `relayout --to URL[,URL...] [TYPE...]`
//! (every stored entity copied into the keyspace at `URL`, one server, or
//! the Redis Cluster of the node URLs given, in that keyspace's key
//! layout; see [`Maintenance::relayout`](crate::maintenance::Maintenance::relayout): one pass, then the compare, which says
//! whether the destination holds every entity as the source does). Without
//! a type, every registered type.
//! `--json` prints one JSON object per type instead of text, for scripts.
//! While an operation runs, a progress bar with its rate and time left is
//! drawn on stderr when stderr is a terminal (feature `progress`, on by
//! default).

use crate::any::AnyConnection;
use crate::error::{Error, Result};
use crate::keyspace::layout::Registry;
use crate::plan::verify::{Progress, Repaired, Report};
use crate::schema::entity::Entity;
use crate::store::migrate::Progress as MoveProgress;
use crate::store::relayout::RelayoutReport;
use crate::store::Store;
use redis::aio::ConnectionLike;
use std::future::Future;
use std::pin::Pin;

mod schema;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A progress callback, erased.
type OnProgress<'a> = &'a mut (dyn FnMut(&Progress) + Send);

/// A relayout's progress callback, erased.
type OnMove<'a> = &'a mut (dyn FnMut(&MoveProgress) + Send);

/// A type's relayout into another keyspace, erased.
type Relayout<C> = for<'a> fn(
    &'a Store<C>,
    &'a Store<AnyConnection>,
    OnMove<'a>,
) -> BoxFuture<'a, Result<MoveProgress>>;

/// A type's relayout compare with another keyspace, erased.
type Compare<C> =
    for<'a> fn(&'a Store<C>, &'a Store<AnyConnection>) -> BoxFuture<'a, Result<RelayoutReport>>;

/// The operations of one registered type, erased over its Rust type.
struct Ops<C> {
    name: &'static str,
    verify: for<'a> fn(&'a Store<C>, OnProgress<'a>) -> BoxFuture<'a, Result<Report>>,
    repair: for<'a> fn(&'a Store<C>, &'a Report, OnProgress<'a>) -> BoxFuture<'a, Result<Repaired>>,
    reindex: for<'a> fn(&'a Store<C>, OnProgress<'a>) -> BoxFuture<'a, Result<usize>>,
    sweep: for<'a> fn(&'a Store<C>, usize) -> BoxFuture<'a, Result<usize>>,
    relayout: Relayout<C>,
    compare: Compare<C>,
    schema: schema::Ops<C>,
}

/// Draws a progress bar for one operation of one type on stderr (nothing
/// when stderr is not a terminal, or without the `progress` feature).
struct Bar {
    #[cfg(feature = "progress")]
    bar: indicatif::ProgressBar,
}

impl Bar {
    fn new(name: &str, operation: &str) -> Bar {
        #[cfg(feature = "progress")]
        {
            let bar =
                indicatif::ProgressBar::no_length().with_prefix(format!("{name} {operation}"));
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix}: {msg} {wide_bar} {pos}/{len} ({per_sec}, {eta} left)",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Bar { bar }
        }
        #[cfg(not(feature = "progress"))]
        {
            let _ = (name, operation);
            Bar {}
        }
    }

    fn update(&self, p: &Progress) {
        #[cfg(feature = "progress")]
        {
            if self.bar.message() != p.step {
                // A new step: its own count.
                self.bar.set_message(p.step);
                self.bar.reset();
            }
            match p.total {
                Some(t) => self.bar.set_length(t as u64),
                None => self.bar.unset_length(),
            }
            self.bar.set_position(p.done as u64);
        }
        #[cfg(not(feature = "progress"))]
        let _ = p;
    }

    fn finish(self) {
        #[cfg(feature = "progress")]
        self.bar.finish_and_clear();
    }
}

/// The admin of a set of entity types; see the module docs.
pub struct Admin<C: ConnectionLike + Clone + Send + Sync + 'static> {
    store: Store<C>,
    registry: Registry,
    types: Vec<Ops<C>>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Admin<C> {
    /// An admin with no types yet.
    pub fn new(store: Store<C>) -> Self {
        Admin {
            store,
            registry: Registry::new(),
            types: Vec::new(),
        }
    }

    /// Adds `E`; refused if its keys could collide with a registered type's.
    pub fn register<E: Entity>(mut self) -> Result<Self> {
        self.registry = self.registry.register::<E>()?;
        self.types.push(Ops {
            name: E::DESC.type_name,
            verify: |s, p| Box::pin(s.verify_with::<E>(p)),
            repair: |s, r, p| Box::pin(s.repair_with::<E>(r, p)),
            reindex: |s, p| Box::pin(s.reindex_with::<E>(p)),
            sweep: |s, budget| Box::pin(s.sweep::<E>(budget)),
            relayout: |s, to, p| Box::pin(s.relayout::<E, AnyConnection>(to, 0, 500, p)),
            compare: |s, to| Box::pin(s.relayout_compare::<E, AnyConnection>(to, 500)),
            schema: schema::Ops::of::<E>(),
        });
        Ok(self)
    }

    /// The registered layouts.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    fn selected(&self, names: &[&str]) -> Result<Vec<&Ops<C>>> {
        if names.is_empty() {
            return Ok(self.types.iter().collect());
        }
        names
            .iter()
            .map(|n| {
                self.types
                    .iter()
                    .find(|t| t.name == *n)
                    .ok_or_else(|| Error::InvalidKey {
                        segment: (*n).to_owned(),
                        reason: "no registered entity type has this name",
                    })
            })
            .collect()
    }

    /// Runs one command line (without the program name) and returns what to
    /// print. See the module docs for the commands.
    pub async fn run(&self, args: &[String]) -> Result<String> {
        let mut out = String::new();
        let (command, rest) = match args.split_first() {
            Some((c, rest)) => (c.as_str(), rest),
            None => ("help", &[][..]),
        };
        let flags = Flags::parse(rest);
        match Self::commands().iter().find(|(name, _)| *name == command) {
            Some((_, run)) => run(self, &flags, &mut out).await?,
            None => self.help(&mut out),
        }
        Ok(out)
    }

    /// The commands by name; any other prints the help.
    fn commands() -> [(&'static str, Command<C>); 6] {
        [
            ("layouts", |a, f, out| {
                a.layouts(f.json, out);
                Box::pin(std::future::ready(Ok(())))
            }),
            ("verify", |a, f, out| Box::pin(a.verify_types(f, out))),
            ("reindex", |a, f, out| Box::pin(a.reindex_types(f, out))),
            ("sweep", |a, f, out| Box::pin(a.sweep_types(f, out))),
            ("relayout", |a, f, out| Box::pin(a.relayout_types(f, out))),
            ("schema", |a, f, out| Box::pin(a.schema_types(f, out))),
        ]
    }

    /// `layouts`: every key family of every registered type.
    fn layouts(&self, json: bool, out: &mut String) {
        use std::fmt::Write;
        if !json {
            let _ = write!(out, "{}", self.registry);
            return;
        }
        for e in self.registry.layouts() {
            json_line(
                out,
                serde_json::json!({
                    "type": e.entity,
                    "layout": format!("{:?}", e.layout).to_lowercase(),
                    "keys": e.keys.iter().map(|k| serde_json::json!({
                        "pattern": k.pattern,
                        "redis_type": format!("{:?}", k.redis_type),
                        "holds": k.holds,
                    })).collect::<Vec<_>>(),
                }),
            );
        }
    }

    /// `verify [--repair]`: each type's report, and with `--repair` (when
    /// it found something) what the repair fixed and left.
    async fn verify_types(&self, flags: &Flags<'_>, out: &mut String) -> Result<()> {
        for t in self.selected(&flags.names)? {
            let bar = Bar::new(t.name, "verify");
            let report = (t.verify)(&self.store, &mut |p| bar.update(p)).await;
            bar.finish();
            let report = report?;
            let repaired = if flags.repair && !report.is_clean() {
                let bar = Bar::new(t.name, "repair");
                let r = (t.repair)(&self.store, &report, &mut |p| bar.update(p)).await;
                bar.finish();
                Some(r?)
            } else {
                None
            };
            print_verified(t.name, &report, repaired, flags.json, out);
        }
        Ok(())
    }

    /// `reindex`: how many entities of each type were indexed again.
    async fn reindex_types(&self, flags: &Flags<'_>, out: &mut String) -> Result<()> {
        use std::fmt::Write;
        for t in self.selected(&flags.names)? {
            let bar = Bar::new(t.name, "reindex");
            let n = (t.reindex)(&self.store, &mut |p| bar.update(p)).await;
            bar.finish();
            let n = n?;
            if flags.json {
                json_line(out, serde_json::json!({"type": t.name, "indexed": n}));
            } else {
                let _ = writeln!(out, "{}: {n} entities indexed", t.name);
            }
        }
        Ok(())
    }

    /// `sweep [--budget N]`: how many expired entities of each type were
    /// taken out of the indexes.
    async fn sweep_types(&self, flags: &Flags<'_>, out: &mut String) -> Result<()> {
        use std::fmt::Write;
        for t in self.selected(&flags.names)? {
            let n = (t.sweep)(&self.store, flags.budget).await?;
            if flags.json {
                json_line(out, serde_json::json!({"type": t.name, "swept": n}));
            } else {
                let _ = writeln!(out, "{}: {n} expired entities unindexed", t.name);
            }
        }
        Ok(())
    }

    /// `relayout --to URL[,URL...]`: each type copied into the keyspace
    /// there, then compared.
    async fn relayout_types(&self, flags: &Flags<'_>, out: &mut String) -> Result<()> {
        let Some(target) = flags.to else {
            return Err(Error::InvalidKey {
                segment: "relayout".into(),
                reason: "relayout needs --to <url, or the cluster's node urls separated by commas>",
            });
        };
        let dest = Store::builder().connect_any(target).await?;
        for t in self.selected(&flags.names)? {
            self.relayout_one(t, &dest, flags.json, out).await?;
        }
        Ok(())
    }

    /// Any other command: the commands and the registered types.
    fn help(&self, out: &mut String) {
        use std::fmt::Write;
        out.push_str(
            "commands: layouts | verify [--repair] [TYPE...] | reindex [TYPE...] | schema plan|apply|status [TYPE...] | sweep [--budget N] [TYPE...] | relayout --to URL[,URL...] [TYPE...]; add --json for JSON lines\n",
        );
        let names: Vec<&str> = self.types.iter().map(|t| t.name).collect();
        let _ = writeln!(out, "types: {}", names.join(", "));
    }

    /// `relayout --to`: one pass of a type into `dest` (prune, then copy),
    /// then the compare that says whether `dest` may replace the source.
    async fn relayout_one(
        &self,
        t: &Ops<C>,
        dest: &Store<AnyConnection>,
        json: bool,
        out: &mut String,
    ) -> Result<()> {
        use std::fmt::Write;
        let bar = Bar::new(t.name, "relayout");
        let done = (t.relayout)(&self.store, dest, &mut |p| {
            bar.update(&Progress {
                step: "copying",
                done: p.migrated as usize,
                total: None,
            })
        })
        .await;
        bar.finish();
        let done = done?;
        let report = (t.compare)(&self.store, dest).await?;
        let failed = |f: &[(String, String)]| {
            f.iter()
                .map(|(k, why)| serde_json::json!({"key": k, "reason": why}))
                .collect::<Vec<_>>()
        };
        if json {
            let v = serde_json::json!({
                "type": t.name,
                "copied": done.migrated,
                "unchanged": done.skipped,
                "deleted": done.deleted,
                "failed": failed(&done.failed),
                "compare": {
                    "source": report.source,
                    "destination": report.destination,
                    "missing": report.missing,
                    "extra": report.extra,
                    "differing": report.differing,
                    "examples": report.examples,
                    "failed": failed(&report.failed),
                    "clean": report.is_clean(),
                },
            });
            let _ = writeln!(out, "{v}");
            return Ok(());
        }
        let _ = writeln!(
            out,
            "{}: {} entities copied to the {} layout, {} failed ({} already there, {} deleted there)",
            t.name,
            done.migrated,
            dest.keys().layout().name(),
            done.failed.len(),
            done.skipped,
            done.deleted,
        );
        for (k, why) in &done.failed {
            let _ = writeln!(out, "  {k}: {why}");
        }
        let verdict = if report.is_clean() {
            "the same: the source may go once nothing writes to it"
        } else {
            "not the same yet: stop the writers and run relayout again"
        };
        let _ = writeln!(out, "{}: compared: {report}; {verdict}", t.name);
        Ok(())
    }
}

/// The options of a command line, after its command; any other word is a
/// type name.
struct Flags<'s> {
    repair: bool,
    json: bool,
    budget: usize,
    to: Option<&'s str>,
    names: Vec<&'s str>,
}

impl<'s> Flags<'s> {
    fn parse(rest: &'s [String]) -> Self {
        let mut flags = Flags {
            repair: false,
            json: false,
            budget: 10_000,
            to: None,
            names: Vec::new(),
        };
        let mut it = rest.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--repair" => flags.repair = true,
                "--json" => flags.json = true,
                "--budget" => {
                    flags.budget = it
                        .next()
                        .and_then(|b| b.parse().ok())
                        .unwrap_or(flags.budget)
                }
                "--to" => flags.to = it.next().map(String::as_str),
                name => flags.names.push(name),
            }
        }
        flags
    }
}

/// One command of the table in `Admin::commands`: writes what to print
/// into the string.
type Command<C> =
    for<'a> fn(&'a Admin<C>, &'a Flags<'a>, &'a mut String) -> BoxFuture<'a, Result<()>>;

/// Writes `v` as one line of JSON.
fn json_line(out: &mut String, v: serde_json::Value) {
    use std::fmt::Write;
    let _ = writeln!(out, "{v}");
}

/// What `verify` prints of type `name`: its report, then what the repair
/// fixed and left (when it ran).
fn print_verified(
    name: &str,
    report: &Report,
    repaired: Option<Repaired>,
    json: bool,
    out: &mut String,
) {
    use std::fmt::Write;
    if !json {
        let _ = write!(out, "{name}: {report}");
        if let Some(r) = repaired {
            let _ = write!(out, "{name}: repair: {r}");
        }
        return;
    }
    json_line(
        out,
        serde_json::json!({
            "type": name,
            "entities": report.entities,
            "index_entries": report.index_entries,
            "memory_policy": report.memory_policy,
            "violations": report.violations.iter().map(|v| serde_json::json!({
                "kind": v.kind(),
                "text": v.to_string(),
            })).collect::<Vec<_>>(),
            "repaired": repaired.as_ref().map(|r| serde_json::json!({
                "fixed": r.fixed,
                "left": r.left.iter().map(|u| serde_json::json!({
                    "kind": u.violation.kind(),
                    "text": u.violation.to_string(),
                    "reason": u.reason,
                })).collect::<Vec<_>>(),
            })),
        }),
    );
}
