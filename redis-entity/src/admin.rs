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
//! (after an index was added: every stored entity is indexed again),
//! `sweep [--budget N] [TYPE...]`. Without a type, every registered type.

use crate::error::{Error, Result};
use crate::plan::verify::{Repaired, Report};
use crate::schema::entity::Entity;
use crate::schema::layout::Registry;
use crate::store::Store;
use redis::aio::ConnectionLike;
use std::future::Future;
use std::pin::Pin;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The operations of one registered type, erased over its Rust type.
struct Ops<C> {
    name: &'static str,
    verify: for<'a> fn(&'a Store<C>) -> BoxFuture<'a, Result<Report>>,
    repair: for<'a> fn(&'a Store<C>, &'a Report) -> BoxFuture<'a, Result<Repaired>>,
    reindex: for<'a> fn(&'a Store<C>) -> BoxFuture<'a, Result<usize>>,
    sweep: for<'a> fn(&'a Store<C>, usize) -> BoxFuture<'a, Result<usize>>,
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
            verify: |s| Box::pin(s.verify::<E>()),
            repair: |s, r| Box::pin(s.repair::<E>(r)),
            reindex: |s| Box::pin(s.reindex::<E>()),
            sweep: |s, budget| Box::pin(s.sweep::<E>(budget)),
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
        use std::fmt::Write;
        let mut out = String::new();
        let (command, rest) = match args.split_first() {
            Some((c, rest)) => (c.as_str(), rest),
            None => ("help", &[][..]),
        };
        let repair = rest.iter().any(|a| a == "--repair");
        let mut budget = 10_000;
        let mut names = Vec::new();
        let mut it = rest.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--repair" => {}
                "--budget" => budget = it.next().and_then(|b| b.parse().ok()).unwrap_or(budget),
                name => names.push(name),
            }
        }
        match command {
            "layouts" => {
                let _ = write!(out, "{}", self.registry);
            }
            "verify" => {
                for t in self.selected(&names)? {
                    let report = (t.verify)(&self.store).await?;
                    let _ = write!(out, "{}: {report}", t.name);
                    if repair && !report.is_clean() {
                        let repaired = (t.repair)(&self.store, &report).await?;
                        let _ = write!(out, "{}: repair: {repaired}", t.name);
                    }
                }
            }
            "reindex" => {
                for t in self.selected(&names)? {
                    let n = (t.reindex)(&self.store).await?;
                    let _ = writeln!(out, "{}: {n} entities indexed", t.name);
                }
            }
            "sweep" => {
                for t in self.selected(&names)? {
                    let n = (t.sweep)(&self.store, budget).await?;
                    let _ = writeln!(out, "{}: {n} expired entities unindexed", t.name);
                }
            }
            _ => {
                out.push_str(
                    "commands: layouts | verify [--repair] [TYPE...] | reindex [TYPE...] | sweep [--budget N] [TYPE...]\n",
                );
                let names: Vec<&str> = self.types.iter().map(|t| t.name).collect();
                let _ = writeln!(out, "types: {}", names.join(", "));
            }
        }
        Ok(out)
    }
}
