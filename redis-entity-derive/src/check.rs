//! Layout rules, checked once the whole entity is known. Every rule records
//! its error and the next rule still runs.

use crate::attr::{IndexKind, LayoutKind};
use crate::ctxt::Ctxt;
use crate::model::{Entity, Role};
use crate::template::Part;
use crate::types;
use std::collections::BTreeMap;

pub fn check(cx: &Ctxt, e: &Entity) {
    container(cx, e);
    for f in &e.fields {
        field(cx, e, f);
    }
    pk_and_template(cx, e);
    stored_names(cx, e);
    versions(cx, e);
}

fn container(cx: &Ctxt, e: &Entity) {
    let c = &e.container;
    if let (Some(h), Some(l)) = (&c.hash, &c.layout) {
        if l.value != LayoutKind::Hash {
            cx.error_spanned_by(&h.tokens, "`#[hash]` on the struct means `layout = \"hash\"`, which contradicts the `layout` given");
        }
    }
    if let Some(t) = &c.ttl {
        if t.value == 0 {
            cx.error_spanned_by(&t.tokens, "`ttl` must be at least 1 second");
        }
    }
    if let Some(p) = &c.prefix {
        if p.value.is_empty() {
            cx.error_spanned_by(&p.tokens, "`prefix` may not be empty");
        } else if let Some(ch) = p.value.chars().find(|ch| "{}*?[]\\%".contains(*ch)) {
            cx.error_spanned_by(
                &p.tokens,
                format!("`prefix` may not contain `{ch}`: braces are hash tags, `*?[]\\` are SCAN glob syntax, `%` escapes values"),
            );
        } else if p.value.split(':').any(str::is_empty) {
            cx.error_spanned_by(&p.tokens, "`prefix` may not have an empty `:` segment");
        }
    }
}

fn field(cx: &Ctxt, e: &Entity, f: &crate::model::Field) {
    let a = &f.attrs;
    if let Some(skip) = &a.skip {
        let others = a.pk.is_some()
            || a.hash.is_some()
            || a.index.is_some()
            || a.version.is_some()
            || a.rename.is_some()
            || a.json.is_some()
            || a.ttl.is_some()
            || a.default.is_some();
        if others {
            cx.error_spanned_by(
                &skip.tokens,
                "`skip` cannot be combined with other attributes: a skipped field is not stored",
            );
        }
        return;
    }
    if let Some(pk) = &a.pk {
        if let Some(i) = &a.index {
            if i.value != IndexKind::Equality {
                cx.error_spanned_by(&i.tokens, "a `#[pk]` field can only have a plain `#[index]`: a pk is unique by itself and never changes");
            }
        }
        let bad = [
            (a.hash.as_ref().map(|s| &s.tokens), "#[hash]"),
            (a.version.as_ref().map(|s| &s.tokens), "#[version]"),
            (a.rename.as_ref().map(|s| &s.tokens), "rename"),
            (a.json.as_ref().map(|s| &s.tokens), "json"),
            (a.ttl.as_ref().map(|s| &s.tokens), "ttl"),
            (a.default.as_ref().map(|s| &s.tokens), "default"),
        ];
        for (tokens, name) in bad {
            if let Some(t) = tokens {
                cx.error_spanned_by(t, format!("`{name}` cannot be used on a `#[pk]` field: the pk is part of the key, not a stored column"));
            }
        }
        if let Some(p) = &a.pad {
            if !types::is_integer(f.ty) {
                cx.error_spanned_by(
                    &p.tokens,
                    "`pad` zero-pads an integer pk; this field is not an integer",
                );
            } else if p.value == 0 || p.value > 39 {
                cx.error_spanned_by(&p.tokens, "`pad` must be between 1 and 39 digits");
            }
        }
        if f.is_option() {
            cx.error_spanned_by(
                f.ty,
                "a `#[pk]` field cannot be an `Option`: every entity needs its key",
            );
        } else if types::is_float(f.ty) {
            cx.error_spanned_by(f.ty, "a `#[pk]` field cannot be a float: two spellings of one number would name two keys");
        }
        let _ = pk;
        return;
    }
    if let Some(h) = &a.hash {
        if !types::is_map(f.ty) {
            cx.error_spanned_by(f.ty, "`#[hash]` needs a map field (`BTreeMap<K, V>` or `HashMap<K, V>`): each entry becomes a field of its own Redis hash");
        }
        if let Some(j) = &a.json {
            cx.error_spanned_by(&j.tokens, "`json` cannot be combined with `#[hash]`: a `#[hash]` field is stored entry by entry");
        }
        if let Some(t) = &a.ttl {
            cx.error_spanned_by(&t.tokens, "`ttl` cannot be used on a `#[hash]` field");
        }
        if let Some(i) = &a.index {
            cx.error_spanned_by(&i.tokens, "a `#[hash]` field cannot be indexed");
        }
        let _ = h;
    } else if types::is_map(f.ty) && a.json.is_none() && e.layout != LayoutKind::Json {
        cx.error_spanned_by(
            f.ty,
            "a map field needs `#[hash]` (its own Redis hash) or `#[redis(json)]` (one JSON value)",
        );
    } else if types::is_collection(f.ty)
        && a.json.is_none()
        && a.index.is_none()
        && e.layout != LayoutKind::Json
    {
        cx.error_spanned_by(f.ty, "a collection field needs `#[redis(json)]` to be stored as one JSON value, or `#[index]` to become a tag relation");
    }
    if let Some(p) = &a.pad {
        cx.error_spanned_by(&p.tokens, "`pad` applies to integer `#[pk]` fields only");
    }
    if let Some(t) = &a.ttl {
        if e.layout != LayoutKind::Strings {
            cx.error_spanned_by(&t.tokens, "a `ttl` per field needs `layout = \"strings\"`: only there does each column have its own key");
        } else if !f.is_option() {
            cx.error_spanned_by(f.ty, "a column with its own `ttl` can disappear while the entity lives; make it an `Option<_>`");
        }
        if t.value == 0 {
            cx.error_spanned_by(&t.tokens, "`ttl` must be at least 1 second");
        }
    }
    if let Some(r) = &a.rename {
        if r.value.is_empty() {
            cx.error_spanned_by(&r.tokens, "`rename` may not be empty");
        } else if let Some(ch) = r.value.chars().find(|ch| ":{}*?[]\\%".contains(*ch)) {
            cx.error_spanned_by(&r.tokens, format!("`rename` may not contain `{ch}`: in the strings layout and for `#[hash]` fields the name is part of a key"));
        }
    }
    if let Some(idx) = &a.index {
        let inner = types::option_inner(f.ty).unwrap_or(f.ty);
        let wrong = match idx.value {
            IndexKind::Sorted if !(types::is_integer(inner) || types::is_float(inner) || types::is_timestamp(inner)) => {
                Some("`#[index(sorted)]` needs a number or a timestamp: a sorted set scores members by a number")
            }
            IndexKind::Prefix if !types::is_text(inner) => {
                Some("`#[index(prefix)]` needs a `String`: prefix search compares text")
            }
            IndexKind::Unique if types::is_collection(inner) => {
                Some("`#[index(unique)]` cannot be used on a collection; use `#[index]` for a tag relation")
            }
            IndexKind::Unique | IndexKind::Equality if types::is_float(inner) => {
                Some("an equality index on a float would split one number across spellings; use `#[index(sorted)]`")
            }
            _ => None,
        };
        match wrong {
            Some(msg) => cx.error_spanned_by(f.ty, msg),

            None if e.layout == LayoutKind::Json => cx.error_spanned_by(
                &idx.tokens,
                "indexes need `layout = \"hash\"` or `\"strings\"`: the write script reads indexed values from Redis, and a JSON document would round large numbers",
            ),
            None if a.json.is_some() => cx.error_spanned_by(
                &idx.tokens,
                "an indexed field cannot be `json`: its stored text is what the index compares",
            ),
            None if types::option_inner(f.ty).is_some_and(types::is_collection) => cx.error_spanned_by(
                f.ty,
                "a tag relation is a collection, not an `Option` of one: an empty collection already means no tags",
            ),
            None => {}
        }
    }
    if let Some(v) = &a.version {
        if !types::is_integer(f.ty) {
            cx.error_spanned_by(f.ty, "`#[version]` needs an integer field");
        } else if e.layout == LayoutKind::Json {
            cx.error_spanned_by(
                &v.tokens,
                "`#[version]` needs `layout = \"hash\"` or `\"strings\"`: the write script compares the stored version",
            );
        }
        let others = [
            (a.json.as_ref().map(|s| &s.tokens), "json"),
            (a.default.as_ref().map(|s| &s.tokens), "default"),
            (a.ttl.as_ref().map(|s| &s.tokens), "ttl"),
        ];
        for (t, name) in others {
            if let Some(t) = t {
                cx.error_spanned_by(
                    t,
                    format!("`{name}` cannot be used on a `#[version]` field"),
                );
            }
        }
        if a.index.is_some() {
            cx.error_spanned_by(&v.tokens, "a `#[version]` field cannot be indexed");
        }
    }
}

fn pk_and_template(cx: &Ctxt, e: &Entity) {
    let pks: Vec<&str> = e.pks().map(|f| f.name.as_str()).collect();
    if pks.is_empty() {
        cx.error_spanned_by(
            e.ident,
            "an entity needs a primary key: mark one or more fields with `#[pk]`",
        );
        return;
    }
    let Some(tokens) = &e.template_tokens else {
        return;
    };
    if e.template.is_empty() {
        return; // the template did not parse; that error is already recorded
    }
    let mut seen = Vec::new();
    for p in &e.template {
        if let Part::Field(name) = p {
            if !pks.contains(&name.as_str()) {
                cx.error_spanned_by(
                    tokens,
                    format!("`{{{name}}}` in the key template is not a `#[pk]` field"),
                );
            } else if seen.contains(&name) {
                cx.error_spanned_by(
                    tokens,
                    format!("`{{{name}}}` appears twice in the key template"),
                );
            }
            seen.push(name);
        }
    }
    for pk in &pks {
        if !seen.iter().any(|s| s == pk) {
            cx.error_spanned_by(tokens, format!("the key template leaves out the `#[pk]` field `{pk}`: two entities would share a key"));
        }
    }
}

/// Two stored names that are equal would write one hash field or one key
/// for two fields (in the `strings` layout columns and `#[hash]` fields share
/// the `<entity key>:<name>` key family).
fn stored_names(cx: &Ctxt, e: &Entity) {
    let mut names: BTreeMap<&str, &crate::model::Field> = BTreeMap::new();
    for f in e
        .fields
        .iter()
        .filter(|f| matches!(f.role, Role::Column { .. } | Role::Map))
    {
        if let Some(first) = names.insert(&f.name, f) {
            let at = f.attrs.rename.as_ref().map(|r| r.tokens.clone());
            let msg = format!(
                "fields `{}` and `{}` are both stored as `{}`: their keys would collide",
                first.ident, f.ident, f.name
            );
            match at {
                Some(t) => cx.error_spanned_by(t, msg),
                None => cx.error_spanned_by(f.ident, msg),
            }
        }
    }
}

fn versions(cx: &Ctxt, e: &Entity) {
    let versions: Vec<_> = e
        .fields
        .iter()
        .filter_map(|f| f.attrs.version.as_ref())
        .collect();
    for v in versions.iter().skip(1) {
        cx.error_spanned_by(&v.tokens, "an entity has at most one `#[version]` field");
    }
}
