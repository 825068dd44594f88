//! Layout rules, checked once the whole entity is known. One function per
//! rule; every rule records its error and the next rule still runs, so the
//! user sees every problem of an entity in one compile.
//!
//! Rules judge the model's decisions (a field's role, its index kind) and
//! point at the attribute or type the decision came from. The order is the
//! order the errors are shown in: the struct's attributes, then each field
//! top to bottom, then rules across fields.

use crate::attr::IndexArg;
use crate::ctxt::Ctxt;
use crate::model::{Entity, Field, Layout, Role};
use crate::template::Part;
use crate::types;
use std::collections::BTreeMap;

type EntityRule = fn(&Entity, &Ctxt);
type FieldRule = fn(&Entity, &Field, &Ctxt);

const CONTAINER_RULES: &[EntityRule] = &[
    not_generic,
    hash_marker_agrees_with_layout,
    entity_ttl_is_positive,
    prefix_is_a_key_segment,
    group_is_one_shard,
];

const FIELD_RULES: &[FieldRule] = &[
    skip_stands_alone,
    pk_index_is_plain,
    pk_is_not_a_column,
    pk_pad_fits,
    pk_names_one_key,
    hash_field_is_a_map,
    hash_field_is_stored_entry_by_entry,
    map_or_collection_says_how_it_is_stored,
    pad_only_on_pk,
    column_ttl_needs_strings_layout,
    rename_is_a_key_segment,
    alias_is_an_old_hash_field,
    index_name_is_not_reserved,
    index_fits_type_and_layout,
    version_is_an_integer_column,
];

const CROSS_FIELD_RULES: &[EntityRule] = &[
    has_pk,
    key_template_names_each_pk_once,
    stored_names_are_distinct,
    at_most_one_version,
];

pub fn check(e: &Entity, cx: &Ctxt) {
    for rule in CONTAINER_RULES {
        rule(e, cx);
    }
    for f in &e.fields {
        for rule in FIELD_RULES {
            rule(e, f, cx);
        }
    }
    for rule in CROSS_FIELD_RULES {
        rule(e, cx);
    }
}

// ---- The struct's attributes ----

fn not_generic(e: &Entity, cx: &Ctxt) {
    if !e.generics.params.is_empty() {
        cx.error_spanned_by(
            e.generics,
            "`RedisEntity` does not support generic structs: the key layout must be fixed",
        );
    }
}

fn hash_marker_agrees_with_layout(e: &Entity, cx: &Ctxt) {
    if let (Some(h), Some(l)) = (&e.attrs.hash, &e.attrs.layout) {
        if l.value != Layout::Hash {
            cx.error_spanned_by(&h.tokens, "`#[hash]` on the struct means `layout = \"hash\"`, which contradicts the `layout` given");
        }
    }
}

fn entity_ttl_is_positive(e: &Entity, cx: &Ctxt) {
    if let Some(t) = &e.attrs.ttl {
        if t.value == 0 {
            cx.error_spanned_by(&t.tokens, "`ttl` must be at least 1 second");
        }
    }
}

/// A group is one slot on a cluster: its types have one shard.
fn group_is_one_shard(e: &Entity, cx: &Ctxt) {
    if let (Some(_), Some(s)) = (&e.attrs.group, &e.attrs.shards) {
        if s.value != 1 {
            cx.error_spanned_by(&s.tokens, "a type in a `group` lives in the group's one slot: `shards` must be 1 (or left out)");
        }
    }
}

fn prefix_is_a_key_segment(e: &Entity, cx: &Ctxt) {
    let Some(p) = &e.attrs.prefix else {
        return;
    };
    if p.value.is_empty() {
        cx.error_spanned_by(&p.tokens, "`prefix` may not be empty");
    } else if let Some(ch) = p.value.chars().find(|ch| "{}*?[]\\%@".contains(*ch)) {
        cx.error_spanned_by(
            &p.tokens,
            format!("`prefix` may not contain `{ch}`: braces are hash tags, `*?[]\\` are SCAN glob syntax, `%` escapes values, `@` marks the runtime's own keys"),
        );
    } else if p.value.split(':').any(str::is_empty) {
        cx.error_spanned_by(&p.tokens, "`prefix` may not have an empty `:` segment");
    }
}

// ---- Each field ----

fn skip_stands_alone(_: &Entity, f: &Field, cx: &Ctxt) {
    let a = &f.attrs;
    let Some(skip) = &a.skip else {
        return;
    };
    let others = a.pk.is_some()
        || a.hash.is_some()
        || a.index.is_some()
        || a.version.is_some()
        || a.rename.is_some()
        || a.alias.is_some()
        || a.json.is_some()
        || a.ttl.is_some()
        || a.default.is_some();
    if others {
        cx.error_spanned_by(
            &skip.tokens,
            "`skip` cannot be combined with other attributes: a skipped field is not stored",
        );
    }
}

fn pk_index_is_plain(_: &Entity, f: &Field, cx: &Ctxt) {
    if !matches!(f.role, Role::Pk(_)) {
        return;
    }
    if let Some(i) = &f.attrs.index {
        if i.value != IndexArg::Equality {
            cx.error_spanned_by(&i.tokens, "a `#[pk]` field can only have a plain `#[index]`: a pk is unique by itself and never changes");
        }
    }
}

fn pk_is_not_a_column(_: &Entity, f: &Field, cx: &Ctxt) {
    if !matches!(f.role, Role::Pk(_)) {
        return;
    }
    let a = &f.attrs;
    let column_attrs = [
        (a.hash.as_ref().map(|s| &s.tokens), "#[hash]"),
        (a.version.as_ref().map(|s| &s.tokens), "#[version]"),
        (a.rename.as_ref().map(|s| &s.tokens), "rename"),
        (a.alias.as_ref().map(|s| &s.tokens), "alias"),
        (a.json.as_ref().map(|s| &s.tokens), "json"),
        (a.ttl.as_ref().map(|s| &s.tokens), "ttl"),
        (a.default.as_ref().map(|s| &s.tokens), "default"),
    ];
    for (tokens, name) in column_attrs {
        if let Some(t) = tokens {
            cx.error_spanned_by(t, format!("`{name}` cannot be used on a `#[pk]` field: the pk is part of the key, not a stored column"));
        }
    }
}

fn pk_pad_fits(_: &Entity, f: &Field, cx: &Ctxt) {
    if !matches!(f.role, Role::Pk(_)) {
        return;
    }
    let Some(p) = &f.attrs.pad else {
        return;
    };
    if !types::is_integer(f.ty) {
        cx.error_spanned_by(
            &p.tokens,
            "`pad` zero-pads an integer pk; this field is not an integer",
        );
    } else if p.value == 0 || p.value > 39 {
        cx.error_spanned_by(&p.tokens, "`pad` must be between 1 and 39 digits");
    }
}

fn pk_names_one_key(_: &Entity, f: &Field, cx: &Ctxt) {
    if !matches!(f.role, Role::Pk(_)) {
        return;
    }
    if f.is_option() {
        cx.error_spanned_by(
            f.ty,
            "a `#[pk]` field cannot be an `Option`: every entity needs its key",
        );
    } else if types::is_float(f.ty) {
        cx.error_spanned_by(
            f.ty,
            "a `#[pk]` field cannot be a float: two spellings of one number would name two keys",
        );
    }
}

fn hash_field_is_a_map(_: &Entity, f: &Field, cx: &Ctxt) {
    if matches!(f.role, Role::Map) && !types::is_map(f.ty) {
        cx.error_spanned_by(f.ty, "`#[hash]` needs a map field (`BTreeMap<K, V>` or `HashMap<K, V>`): each entry becomes a field of its own Redis hash");
    }
}

fn hash_field_is_stored_entry_by_entry(_: &Entity, f: &Field, cx: &Ctxt) {
    if !matches!(f.role, Role::Map) {
        return;
    }
    let a = &f.attrs;
    if let Some(j) = &a.json {
        cx.error_spanned_by(
            &j.tokens,
            "`json` cannot be combined with `#[hash]`: a `#[hash]` field is stored entry by entry",
        );
    }
    if let Some(t) = &a.ttl {
        cx.error_spanned_by(&t.tokens, "`ttl` cannot be used on a `#[hash]` field");
    }
    if let Some(i) = &a.index {
        cx.error_spanned_by(&i.tokens, "a `#[hash]` field cannot be indexed");
    }
}

fn map_or_collection_says_how_it_is_stored(e: &Entity, f: &Field, cx: &Ctxt) {
    let Role::Column(_) = f.role else {
        return;
    };
    let a = &f.attrs;
    if let Some(t) = &a.tags {
        if !types::is_collection(f.ty) || types::option_inner(f.ty).is_some() {
            cx.error_spanned_by(
                &t.tokens,
                "`tags` stores a collection (`Vec`, a set) as a tag list",
            );
        } else if a.json.is_some() || e.layout == Layout::Json {
            cx.error_spanned_by(
                &t.tokens,
                "`tags` cannot be combined with `json`: a tag list is not a JSON value",
            );
        }
    }
    if a.json.is_some() || e.layout == Layout::Json {
        return;
    }
    if types::is_map(f.ty) {
        cx.error_spanned_by(
            f.ty,
            "a map field needs `#[hash]` (its own Redis hash) or `#[redis(json)]` (one JSON value)",
        );
    } else if types::is_collection(f.ty) && a.index.is_none() && a.tags.is_none() {
        cx.error_spanned_by(f.ty, "a collection field needs `#[redis(json)]` to be stored as one JSON value, `#[index]` to become a tag relation, or `#[redis(tags)]` to be stored as a tag list without an index (yet)");
    }
}

fn pad_only_on_pk(_: &Entity, f: &Field, cx: &Ctxt) {
    if !f.is_stored() {
        return;
    }
    if let Some(p) = &f.attrs.pad {
        cx.error_spanned_by(&p.tokens, "`pad` applies to integer `#[pk]` fields only");
    }
}

fn column_ttl_needs_strings_layout(e: &Entity, f: &Field, cx: &Ctxt) {
    if !f.is_stored() {
        return;
    }
    let Some(t) = &f.attrs.ttl else {
        return;
    };
    if e.layout != Layout::Strings {
        cx.error_spanned_by(&t.tokens, "a `ttl` per field needs `layout = \"strings\"`: only there does each column have its own key");
    } else if !f.is_option() {
        cx.error_spanned_by(
            f.ty,
            "a column with its own `ttl` can disappear while the entity lives; make it an `Option<_>`",
        );
    }
    if t.value == 0 {
        cx.error_spanned_by(&t.tokens, "`ttl` must be at least 1 second");
    }
}

/// `alias` names the field's stored name of before: a column of the hash
/// layout only (the other layouts spell it in keys or in JSON, where serde's
/// own `alias` reads it), and a name no other field is stored as.
fn alias_is_an_old_hash_field(e: &Entity, f: &Field, cx: &Ctxt) {
    let Some(a) = &f.attrs.alias else {
        return;
    };
    if matches!(f.role, Role::Pk(_)) {
        // `pk_is_not_a_column` says it.
        return;
    }
    if !matches!(f.role, Role::Column(_)) {
        cx.error_spanned_by(&a.tokens, "`alias` names a stored field's old name: use it on a stored field (not a `#[pk]`, `#[hash]` or skipped one)");
    } else if e.layout != Layout::Hash {
        cx.error_spanned_by(&a.tokens, "`alias` is for the hash layout: in the strings layout a field's name is part of its key (move the keys with `migrate`), and the json layout reads through serde (`#[serde(alias = ...)]`)");
    } else if a.value.is_empty() || a.value.starts_with('@') || a.value == f.name {
        cx.error_spanned_by(&a.tokens, "`alias` must be another name the field was stored as: not empty, not starting with `@`, not its current name");
    } else if let Some(other) = e.fields.iter().find(|o| o.is_stored() && o.name == a.value) {
        cx.error_spanned_by(
            &a.tokens,
            format!(
                "`alias` names `{}`, which field `{}` is stored as",
                a.value, other.ident
            ),
        );
    }
}

fn rename_is_a_key_segment(_: &Entity, f: &Field, cx: &Ctxt) {
    if !f.is_stored() {
        return;
    }
    let Some(r) = &f.attrs.rename else {
        return;
    };
    if r.value.is_empty() {
        cx.error_spanned_by(&r.tokens, "`rename` may not be empty");
    } else if let Some(ch) = r.value.chars().find(|ch| ":{}*?[]\\%".contains(*ch)) {
        cx.error_spanned_by(&r.tokens, format!("`rename` may not contain `{ch}`: in the strings layout and for `#[hash]` fields the name is part of a key"));
    } else if r.value.starts_with('@') {
        cx.error_spanned_by(&r.tokens, "`rename` may not start with `@`: names under an entity key that start with `@` are the runtime's (`@shadow`, `@rel`)");
    }
}

/// The index families of a type are `<prefix>:@<field>...` beside
/// `<prefix>:@ids` and `<prefix>:@expiry`: an index may not be named so.
fn index_name_is_not_reserved(_: &Entity, f: &Field, cx: &Ctxt) {
    let (Some(idx), true) = (&f.attrs.index, f.is_stored()) else {
        return;
    };
    let name = f
        .attrs
        .rename
        .as_ref()
        .map_or(f.name.as_str(), |r| r.value.as_str());
    if matches!(name, "ids" | "expiry") {
        cx.error_spanned_by(
            &idx.tokens,
            format!("an index on a field stored as `{name}` would share its key with the type's `@{name}` set: rename the field (`#[redis(rename = \"...\")]`)"),
        );
    }
}

/// The index kind must suit the value's type; only when it does is the
/// layout judged, so one wrong index gives one error.
fn index_fits_type_and_layout(e: &Entity, f: &Field, cx: &Ctxt) {
    if !f.is_stored() {
        return;
    }
    let Some(idx) = &f.attrs.index else {
        return;
    };
    if let Some(msg) = index_type_mismatch(idx.value, f.ty) {
        cx.error_spanned_by(f.ty, msg);
    } else if e.layout == Layout::Json {
        cx.error_spanned_by(
            &idx.tokens,
            "indexes need `layout = \"hash\"` or `\"strings\"`: the write script reads indexed values from Redis, and a JSON document would round large numbers",
        );
    } else if f.attrs.json.is_some() {
        cx.error_spanned_by(
            &idx.tokens,
            "an indexed field cannot be `json`: its stored text is what the index compares",
        );
    } else if types::option_inner(f.ty).is_some_and(types::is_collection) {
        cx.error_spanned_by(
            f.ty,
            "a tag relation is a collection, not an `Option` of one: an empty collection already means no tags",
        );
    }
}

fn index_type_mismatch(arg: IndexArg, ty: &syn::Type) -> Option<&'static str> {
    let inner = types::option_inner(ty).unwrap_or(ty);
    match arg {
        IndexArg::Sorted
            if !(types::is_integer(inner)
                || types::is_float(inner)
                || types::is_timestamp(inner)) =>
        {
            Some("`#[index(sorted)]` needs a number or a timestamp: a sorted set scores members by a number")
        }
        IndexArg::Prefix if !types::is_text(inner) => {
            Some("`#[index(prefix)]` needs a `String`: prefix search compares text")
        }
        IndexArg::Unique if types::is_collection(inner) => Some(
            "`#[index(unique)]` cannot be used on a collection; use `#[index]` for a tag relation",
        ),
        IndexArg::Unique | IndexArg::Equality if types::is_float(inner) => {
            Some("an equality index on a float would split one number across spellings; use `#[index(sorted)]`")
        }
        _ => None,
    }
}

fn version_is_an_integer_column(e: &Entity, f: &Field, cx: &Ctxt) {
    if !f.is_stored() {
        return;
    }
    let a = &f.attrs;
    let Some(v) = &a.version else {
        return;
    };
    if !types::is_integer(f.ty) {
        cx.error_spanned_by(f.ty, "`#[version]` needs an integer field");
    } else if e.layout == Layout::Json {
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

// ---- Across fields ----

fn has_pk(e: &Entity, cx: &Ctxt) {
    if e.pks().next().is_none() {
        cx.error_spanned_by(
            e.ident,
            "an entity needs a primary key: mark one or more fields with `#[pk]`",
        );
    }
}

/// A written template names every pk field exactly once and nothing else.
/// Without a pk, `has_pk` has said all there is to say.
fn key_template_names_each_pk_once(e: &Entity, cx: &Ctxt) {
    let pks: Vec<&str> = e.pks().map(|(f, _)| f.name.as_str()).collect();
    let Some(tokens) = &e.key.written else {
        return;
    };
    // An empty template did not parse; that error is already recorded.
    if pks.is_empty() || e.key.template.is_empty() {
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    for p in &e.key.template {
        let Part::Field(name) = p else {
            continue;
        };
        if !pks.contains(&name.as_str()) {
            cx.error_spanned_by(
                tokens,
                format!("`{{{name}}}` in the key template is not a `#[pk]` field"),
            );
        } else if seen.contains(&name.as_str()) {
            cx.error_spanned_by(
                tokens,
                format!("`{{{name}}}` appears twice in the key template"),
            );
        }
        seen.push(name);
    }
    for pk in &pks {
        if !seen.contains(pk) {
            cx.error_spanned_by(tokens, format!("the key template leaves out the `#[pk]` field `{pk}`: two entities would share a key"));
        }
    }
}

/// Two stored names that are equal would write one hash field or one key
/// for two fields (in the `strings` layout columns and `#[hash]` fields share
/// the `<entity key>:<name>` key family).
fn stored_names_are_distinct(e: &Entity, cx: &Ctxt) {
    let mut names: BTreeMap<&str, &Field> = BTreeMap::new();
    for f in e.fields.iter().filter(|f| f.is_stored()) {
        let Some(first) = names.insert(&f.name, f) else {
            continue;
        };
        let msg = format!(
            "fields `{}` and `{}` are both stored as `{}`: their keys would collide",
            first.ident, f.ident, f.name
        );
        match &f.attrs.rename {
            Some(r) => cx.error_spanned_by(&r.tokens, msg),
            None => cx.error_spanned_by(f.ident, msg),
        }
    }
}

fn at_most_one_version(e: &Entity, cx: &Ctxt) {
    let versions = e.fields.iter().filter_map(|f| f.attrs.version.as_ref());
    for v in versions.skip(1) {
        cx.error_spanned_by(&v.tokens, "an entity has at most one `#[version]` field");
    }
}
