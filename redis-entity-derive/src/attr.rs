//! Attribute parsing: `#[redis(...)]`, `#[pk]`, `#[index(...)]`, `#[hash]`,
//! `#[version]` into plain values that remember the tokens they came from,
//! so later checks can point at them. No cross-attribute rules here.

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitInt, LitStr, Meta};

/// How an entity is laid out in Redis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Layout {
    /// One hash per entity (the default).
    Hash,
    /// One string key per column.
    Strings,
    /// One JSON document per entity.
    Json,
}

/// A parsed attribute value and the tokens to point at.
pub struct Spanned<T> {
    pub value: T,
    pub tokens: TokenStream,
}

/// Stores `value` into `slot`, or records "duplicate" pointing at the second.
fn set_once<T>(
    cx: &Ctxt,
    slot: &mut Option<Spanned<T>>,
    value: T,
    tokens: TokenStream,
    name: &str,
) {
    if slot.is_some() {
        cx.error_spanned_by(tokens, format!("duplicate `{name}`"));
    } else {
        *slot = Some(Spanned { value, tokens });
    }
}

#[derive(Default)]
pub struct Container {
    pub prefix: Option<Spanned<String>>,
    pub key: Option<Spanned<String>>,
    pub layout: Option<Spanned<Layout>>,
    pub ttl: Option<Spanned<u64>>,
    /// `shards = N`: the index shards of the cluster layout.
    pub shards: Option<Spanned<u64>>,
    /// `group = "name"`: the cluster slot group the type shares.
    pub group: Option<Spanned<String>>,
    pub krate: Option<Spanned<syn::Path>>,
    /// `validate = path`: the check every write of a whole entity runs first.
    pub validate: Option<Spanned<syn::Path>>,
    /// `#[hash]` on the struct: another spelling of `layout = "hash"`.
    pub hash: Option<Spanned<()>>,
}

/// The argument of `#[index(...)]` as written. The model decides the index
/// kind from it and the field's type (`#[index]` on a collection is a tag
/// relation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexArg {
    Equality,
    Unique,
    Sorted,
    Prefix,
}

#[derive(Default)]
pub struct FieldAttrs {
    pub pk: Option<Spanned<()>>,
    pub hash: Option<Spanned<()>>,
    pub index: Option<Spanned<IndexArg>>,
    pub version: Option<Spanned<()>>,
    pub rename: Option<Spanned<String>>,
    /// `alias = "old"`: a stored name the field had before, read when the
    /// current one is absent (and rewritten by `schema apply`).
    pub alias: Option<Spanned<String>>,
    pub skip: Option<Spanned<()>>,
    pub default: Option<Spanned<()>>,
    pub json: Option<Spanned<()>>,
    pub tags: Option<Spanned<()>>,
    pub ttl: Option<Spanned<u64>>,
    pub pad: Option<Spanned<u64>>,
}

fn lit_str(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    meta.value()?.parse::<LitStr>()
}

fn lit_u64(meta: &ParseNestedMeta) -> syn::Result<(u64, LitInt)> {
    let lit: LitInt = meta.value()?.parse()?;
    let v = lit.base10_parse::<u64>()?;
    Ok((v, lit))
}

/// Consumes the value of an unknown attribute (`= ...` or `(...)`), so that
/// one typo is reported once and the attributes after it are still read.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

fn name_of(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(|i| i.to_string())
        .unwrap_or_else(|| meta.path.to_token_stream().to_string())
}

/// A marker attribute such as `#[pk]`: arguments are an error.
fn marker(cx: &Ctxt, attr: &Attribute, name: &str) -> bool {
    match &attr.meta {
        Meta::Path(_) => true,
        _ => {
            cx.error_spanned_by(attr, format!("`#[{name}]` takes no arguments"));
            false
        }
    }
}

pub fn container(cx: &Ctxt, attrs: &[Attribute]) -> Container {
    let mut c = Container::default();
    for attr in attrs {
        if attr.path().is_ident("hash") {
            if marker(cx, attr, "hash") {
                set_once(cx, &mut c.hash, (), attr.to_token_stream(), "#[hash]");
            }
        } else if attr.path().is_ident("redis") {
            let r = attr.parse_nested_meta(|meta| container_redis(cx, &mut c, &meta));
            if let Err(e) = r {
                cx.syn_error(e);
            }
        }
    }
    c
}

/// One item of `#[redis(...)]` on the struct.
fn container_redis(cx: &Ctxt, c: &mut Container, meta: &ParseNestedMeta) -> syn::Result<()> {
    match name_of(meta).as_str() {
        "prefix" => {
            let s = lit_str(meta)?;
            set_once(cx, &mut c.prefix, s.value(), s.to_token_stream(), "prefix");
        }
        "key" => {
            let s = lit_str(meta)?;
            set_once(cx, &mut c.key, s.value(), s.to_token_stream(), "key");
        }
        "layout" => {
            let s = lit_str(meta)?;
            if let Some(layout) = layout(cx, &s) {
                set_once(cx, &mut c.layout, layout, s.to_token_stream(), "layout");
            }
        }
        "ttl" => {
            let (v, lit) = lit_u64(meta)?;
            set_once(cx, &mut c.ttl, v, lit.to_token_stream(), "ttl");
        }
        "group" => {
            let s = lit_str(meta)?;
            let v = s.value();
            if v.is_empty()
                || !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                cx.error_spanned_by(&s, "`group` must be a name of letters, digits, `_` or `-`");
            }
            set_once(cx, &mut c.group, v, s.to_token_stream(), "group");
        }
        "shards" => {
            let (v, lit) = lit_u64(meta)?;
            if !(1..=1024).contains(&v) {
                cx.error_spanned_by(&lit, "`shards` must be between 1 and 1024");
            }
            set_once(cx, &mut c.shards, v, lit.to_token_stream(), "shards");
        }
        "validate" => {
            // A path, as written or in a string (as serde's `with`).
            let value = meta.value()?;
            let path = if value.peek(LitStr) {
                value.parse::<LitStr>()?.parse::<syn::Path>()?
            } else {
                value.parse::<syn::Path>()?
            };
            let tokens = path.to_token_stream();
            set_once(cx, &mut c.validate, path, tokens, "validate");
        }
        "crate" => {
            let s = lit_str(meta)?;
            match s.parse::<syn::Path>() {
                Ok(p) => set_once(cx, &mut c.krate, p, s.to_token_stream(), "crate"),
                Err(_) => {
                    cx.error_spanned_by(&s, "`crate` must be a path such as \"::redis_entity\"")
                }
            }
        }
        other => {
            cx.error_spanned_by(
                &meta.path,
                format!("unknown attribute `{other}` in `#[redis(...)]` on a struct: expected prefix, key, layout, ttl, shards, group, validate or crate"),
            );
            skip_value(meta)?;
        }
    }
    Ok(())
}

fn layout(cx: &Ctxt, s: &LitStr) -> Option<Layout> {
    match s.value().as_str() {
        "hash" => Some(Layout::Hash),
        "strings" => Some(Layout::Strings),
        "json" => Some(Layout::Json),
        other => {
            cx.error_spanned_by(
                s,
                format!("unknown layout `{other}`: expected \"hash\", \"strings\" or \"json\""),
            );
            None
        }
    }
}

pub fn field(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut f = FieldAttrs::default();
    for attr in attrs {
        let path = attr.path();
        let tokens = attr.to_token_stream();
        if path.is_ident("pk") {
            if marker(cx, attr, "pk") {
                set_once(cx, &mut f.pk, (), tokens, "#[pk]");
            }
        } else if path.is_ident("hash") {
            if marker(cx, attr, "hash") {
                set_once(cx, &mut f.hash, (), tokens, "#[hash]");
            }
        } else if path.is_ident("version") {
            if marker(cx, attr, "version") {
                set_once(cx, &mut f.version, (), tokens, "#[version]");
            }
        } else if path.is_ident("index") {
            if let Some(arg) = index(cx, attr) {
                set_once(cx, &mut f.index, arg, tokens, "#[index]");
            }
        } else if path.is_ident("redis") {
            let r = attr.parse_nested_meta(|meta| field_redis(cx, &mut f, &meta));
            if let Err(e) = r {
                cx.syn_error(e);
            }
        }
    }
    f
}

/// `#[index]` or `#[index(kind)]`; `None` when the kind is not understood
/// (recorded).
fn index(cx: &Ctxt, attr: &Attribute) -> Option<IndexArg> {
    match &attr.meta {
        Meta::Path(_) => Some(IndexArg::Equality),
        Meta::List(_) => {
            let mut arg = None;
            let r = attr.parse_nested_meta(|meta| index_kind(cx, &mut arg, &meta));
            if let Err(e) = r {
                cx.syn_error(e);
            }
            arg
        }
        Meta::NameValue(_) => {
            cx.error_spanned_by(attr, "expected `#[index]` or `#[index(kind)]`");
            None
        }
    }
}

/// One item of `#[index(...)]`: the kind, given once.
fn index_kind(cx: &Ctxt, arg: &mut Option<IndexArg>, meta: &ParseNestedMeta) -> syn::Result<()> {
    let kind = match name_of(meta).as_str() {
        "unique" => IndexArg::Unique,
        "sorted" => IndexArg::Sorted,
        "prefix" => IndexArg::Prefix,
        other => {
            skip_value(meta)?;
            cx.error_spanned_by(
                &meta.path,
                format!("unknown index kind `{other}`: expected `#[index]`, `#[index(unique)]`, `#[index(sorted)]` or `#[index(prefix)]`"),
            );
            return Ok(());
        }
    };
    if arg.is_some() {
        cx.error_spanned_by(
            &meta.path,
            "an index has one kind: give one of unique, sorted, prefix",
        );
    } else {
        *arg = Some(kind);
    }
    Ok(())
}

/// One item of `#[redis(...)]` on a field.
fn field_redis(cx: &Ctxt, f: &mut FieldAttrs, meta: &ParseNestedMeta) -> syn::Result<()> {
    let tokens = meta.path.to_token_stream();
    match name_of(meta).as_str() {
        "rename" => {
            let s = lit_str(meta)?;
            set_once(cx, &mut f.rename, s.value(), s.to_token_stream(), "rename");
        }
        "alias" => {
            let s = lit_str(meta)?;
            set_once(cx, &mut f.alias, s.value(), s.to_token_stream(), "alias");
        }
        "skip" => set_once(cx, &mut f.skip, (), tokens, "skip"),
        "default" => set_once(cx, &mut f.default, (), tokens, "default"),
        "json" => set_once(cx, &mut f.json, (), tokens, "json"),
        "tags" => set_once(cx, &mut f.tags, (), tokens, "tags"),
        "ttl" => {
            let (v, lit) = lit_u64(meta)?;
            set_once(cx, &mut f.ttl, v, lit.to_token_stream(), "ttl");
        }
        "pad" => {
            let (v, lit) = lit_u64(meta)?;
            set_once(cx, &mut f.pad, v, lit.to_token_stream(), "pad");
        }
        other => {
            cx.error_spanned_by(
                tokens,
                format!("unknown attribute `{other}` in `#[redis(...)]` on a field: expected rename, alias, skip, default, json, tags, ttl or pad"),
            );
            skip_value(meta)?;
        }
    }
    Ok(())
}
