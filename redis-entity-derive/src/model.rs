//! The entity model: what the struct and its attributes mean, independent of
//! how they were written. Code generation reads only this.

use crate::attr::{self, Container, FieldAttrs, LayoutKind};
use crate::ctxt::Ctxt;
use crate::template::{self, Part};
use crate::types;
use proc_macro2::TokenStream;
use syn::{Data, DeriveInput, Fields, Ident, Type, Visibility};

pub struct Entity<'a> {
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    pub krate: syn::Path,
    pub prefix: String,
    pub layout: LayoutKind,
    pub ttl: Option<u64>,
    /// The key template; `Part::Field` names pk fields.
    pub template: Vec<Part>,
    /// The tokens of `key = "..."` when given, for error spans.
    pub template_tokens: Option<TokenStream>,
    pub container: Container,
    pub fields: Vec<Field<'a>>,
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    /// The name in Redis: the field name or its `rename`.
    pub name: String,
    pub role: Role,
    pub attrs: FieldAttrs,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Codec {
    Plain,
    Optional,
    Json,
    JsonOptional,
    /// A tag collection (`#[index]` on a `Vec` / set).
    TagList,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Pk,
    Column { codec: Codec, defaulted: bool },
    Map,
    Skip,
}

impl Field<'_> {
    pub fn is_option(&self) -> bool {
        types::option_inner(self.ty).is_some()
    }
}

impl Entity<'_> {
    pub fn pks(&self) -> impl Iterator<Item = &Field<'_>> {
        self.fields.iter().filter(|f| f.role == Role::Pk)
    }

    pub fn columns(&self) -> impl Iterator<Item = &Field<'_>> {
        self.fields
            .iter()
            .filter(|f| matches!(f.role, Role::Column { .. }))
    }

    pub fn maps(&self) -> impl Iterator<Item = &Field<'_>> {
        self.fields.iter().filter(|f| f.role == Role::Map)
    }
}

/// `UserProfile` → `user_profile`.
fn snake_case(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub fn build<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Entity<'a>> {
    let named = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(n) => Some(n),
            _ => None,
        },
        _ => None,
    };
    let Some(named) = named else {
        cx.error_spanned_by(
            &input.ident,
            "`RedisEntity` can only be derived for a struct with named fields",
        );
        return None;
    };
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "`RedisEntity` does not support generic structs: the key layout must be fixed",
        );
    }
    let container = attr::container(cx, &input.attrs);
    let layout = match (&container.layout, &container.hash) {
        (Some(l), _) => l.value,
        (None, _) => LayoutKind::Hash,
    };
    let prefix = container
        .prefix
        .as_ref()
        .map(|p| p.value.clone())
        .unwrap_or_else(|| snake_case(&input.ident.to_string()));

    let mut fields = Vec::new();
    for f in &named.named {
        let Some(ident) = f.ident.as_ref() else {
            continue;
        };
        let attrs = attr::field(cx, &f.attrs);
        let name = attrs
            .rename
            .as_ref()
            .map(|r| r.value.clone())
            .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());
        let option = types::option_inner(&f.ty).is_some();
        let role = if attrs.skip.is_some() {
            Role::Skip
        } else if attrs.pk.is_some() {
            Role::Pk
        } else if attrs.hash.is_some() {
            Role::Map
        } else {
            let json = attrs.json.is_some() || layout == LayoutKind::Json;
            let tags = attrs.index.is_some() && types::is_collection(&f.ty) && !json;
            let codec = match (tags, json, option) {
                (true, _, _) => Codec::TagList,
                (false, false, false) => Codec::Plain,
                (false, false, true) => Codec::Optional,
                (false, true, false) => Codec::Json,
                (false, true, true) => Codec::JsonOptional,
            };
            Role::Column {
                codec,
                defaulted: attrs.default.is_some() && !option,
            }
        };
        fields.push(Field {
            ident,
            ty: &f.ty,
            name,
            role,
            attrs,
        });
    }

    let (template, template_tokens) = match &container.key {
        Some(k) => match template::parse(&k.value) {
            Ok(t) => (t, Some(k.tokens.clone())),
            Err(msg) => {
                cx.error_spanned_by(&k.tokens, msg);
                (Vec::new(), Some(k.tokens.clone()))
            }
        },
        None => {
            // `<prefix>:{a}` or, for a composite key, `<prefix>:{a}:{b}`.
            let mut t = vec![Part::Lit(format!("{prefix}:"))];
            for (i, f) in fields.iter().filter(|f| f.role == Role::Pk).enumerate() {
                if i > 0 {
                    t.push(Part::Lit(":".into()));
                }
                t.push(Part::Field(f.name.clone()));
            }
            (t, None)
        }
    };

    let krate = container
        .krate
        .as_ref()
        .map(|k| k.value.clone())
        .unwrap_or_else(|| syn::parse_quote!(::redis_entity));
    Some(Entity {
        ident: &input.ident,
        vis: &input.vis,
        krate,
        prefix,
        layout,
        ttl: container.ttl.as_ref().map(|t| t.value),
        template,
        template_tokens,
        container,
        fields,
    })
}
