//! `schema plan|apply|status [TYPE...]`: schema evolution from the command
//! line (see [`Schema`](crate::evolution::Schema)).

use super::{json_line, Admin, Bar, BoxFuture, Flags, OnProgress};
use crate::error::{Error, Result};
use crate::schema::entity::Entity;
use crate::store::schema::{Applied, SchemaPlan, SchemaStatus};
use crate::store::Store;
use redis::aio::ConnectionLike;
use std::fmt::Write;

/// One type's schema calls, erased over its Rust type.
pub(super) struct Ops<C> {
    plan: for<'a> fn(&'a Store<C>) -> BoxFuture<'a, Result<SchemaPlan>>,
    apply: for<'a> fn(&'a Store<C>, OnProgress<'a>) -> BoxFuture<'a, Result<Applied>>,
    status: for<'a> fn(&'a Store<C>) -> BoxFuture<'a, Result<SchemaStatus>>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Ops<C> {
    pub(super) fn of<E: Entity>() -> Self {
        Ops {
            plan: |s| Box::pin(async move { s.schema().plan::<E>().await }),
            apply: |s, p| Box::pin(async move { s.schema().apply_with::<E>(p).await }),
            status: |s| Box::pin(async move { s.schema().status::<E>().await }),
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Admin<C> {
    /// `schema plan|apply|status [TYPE...]`.
    pub(super) async fn schema_types(&self, flags: &Flags<'_>, out: &mut String) -> Result<()> {
        let (step, names) = match flags.names.split_first() {
            Some((step, names)) => (*step, names),
            None => ("", &[][..]),
        };
        let types = self.selected(names)?;
        match step {
            "plan" => {
                for t in types {
                    let plan = (t.schema.plan)(&self.store).await?;
                    print_plan(&plan, flags.json, out);
                }
            }
            "apply" => {
                for t in types {
                    let bar = Bar::new(t.name, "schema apply");
                    let applied = (t.schema.apply)(&self.store, &mut |p| bar.update(p)).await;
                    bar.finish();
                    print_applied(t.name, &applied?, flags.json, out);
                }
            }
            "status" => {
                for t in types {
                    let status = (t.schema.status)(&self.store).await?;
                    print_status(&status, flags.json, out);
                }
            }
            other => {
                return Err(Error::InvalidKey {
                    segment: other.to_owned(),
                    reason: "schema needs plan, apply or status",
                })
            }
        }
        Ok(())
    }
}

fn print_plan(plan: &SchemaPlan, json: bool, out: &mut String) {
    if !json {
        let _ = write!(out, "{plan}");
        return;
    }
    json_line(
        out,
        serde_json::json!({
            "type": plan.type_name,
            "code": plan.code,
            "recorded": plan.recorded,
            "differences": plan.differences.iter().map(|d| serde_json::json!({
                "change": d.change.label(),
                "what": d.what,
            })).collect::<Vec<_>>(),
            "build": plan.build,
            "drop": plan.drop,
            "entities": plan.entities,
        }),
    );
}

fn print_applied(name: &str, a: &Applied, json: bool, out: &mut String) {
    if json {
        json_line(
            out,
            serde_json::json!({
                "type": name,
                "built": a.built,
                "dropped": a.dropped,
                "renamed": a.renamed,
                "indexed": a.indexed,
                "deleted_keys": a.deleted_keys,
                "walks": a.walks,
            }),
        );
        return;
    }
    if a.built.is_empty() && a.dropped.is_empty() && a.renamed.is_empty() {
        let _ = writeln!(out, "{name}: nothing to apply");
        return;
    }
    let mut parts = Vec::new();
    if !a.built.is_empty() {
        parts.push(format!("built {}", a.built.join(", ")));
    }
    if !a.dropped.is_empty() {
        parts.push(format!(
            "dropped {} ({} keys deleted)",
            a.dropped.join(", "),
            a.deleted_keys
        ));
    }
    if !a.renamed.is_empty() {
        parts.push(format!("renamed {}", a.renamed.join(", ")));
    }
    let walks = if a.walks == 1 { "walk" } else { "walks" };
    let _ = writeln!(
        out,
        "{name}: {}; {} entities indexed in {} {walks}",
        parts.join("; "),
        a.indexed,
        a.walks
    );
}

fn print_status(s: &SchemaStatus, json: bool, out: &mut String) {
    if !json {
        let _ = write!(out, "{s}");
        return;
    }
    json_line(
        out,
        serde_json::json!({
            "type": s.type_name,
            "current": s.current,
            "definitions": s.definitions.iter().map(|(fp, writing)| serde_json::json!({
                "fingerprint": fp,
                "writing": writing,
            })).collect::<Vec<_>>(),
            "indexes": s.indexes.iter().map(|(field, kind, state)| serde_json::json!({
                "field": field,
                "kind": kind,
                "state": state.name(),
            })).collect::<Vec<_>>(),
            "walked": s.walked,
        }),
    );
}
