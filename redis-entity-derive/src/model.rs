//! The entity model: what the struct and its attributes mean, independent of
//! how they were written. Every decision (a field's role, codec and index
//! kind, the key's shape) is taken here, once; checks judge these decisions
//! and code generation reads only them.
//!
//! Each part keeps the attributes it came from (`attrs`) so that checks can
//! point at the offending token; expansion never reads them.

pub use crate::attr::Layout;
use crate::attr::{self, Container, FieldAttrs, IndexArg};
use crate::ctxt::Ctxt;
use crate::template::{self, Part};
use crate::types;
use proc_macro2::TokenStream;
use syn::{Data, DeriveInput, Fields, Generics, Ident, Type, Visibility};

pub struct Entity<'a> {
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    /// An entity may not be generic (checked); kept to point at.
    pub generics: &'a Generics,
    /// The runtime crate (`crate = "..."`, by default `::redis_entity`).
    pub krate: syn::Path,
    /// The key prefix: `prefix = "..."` or the snake-cased type name.
    pub prefix: String,
    pub layout: Layout,
    /// Expiry of a newly created entity, in seconds.
    pub ttl: Option<u64>,
    /// `shards = N` (the runtime's default otherwise).
    pub shards: Option<u16>,
    /// `group = "name"`: on a cluster, the type lives in the group's one slot.
    pub group: Option<String>,
    pub key: Key,
    /// True for a single integer pk: members then sort numerically.
    pub numeric_pk: bool,
    pub fields: Vec<Field<'a>>,
    /// The struct's attributes as written, for error spans.
    pub attrs: Container,
}

/// The entity key: `<head>{<tag>}<tail>`, the hash tag holding the pk fields
/// so that every key of one entity lands in one cluster slot.
pub struct Key {
    /// The template as written or defaulted; `Part::Field` names pk fields.
    /// Empty when a written template did not parse (that error is recorded).
    pub template: Vec<Part>,
    /// The tokens of `key = "..."` when given, for error spans.
    pub written: Option<TokenStream>,
    /// Literal text before the hash tag (`user:userid:`).
    pub head: String,
    /// Literal text after the hash tag (usually empty).
    pub tail: String,
    /// What the hash tag holds: pk fields and the separators between them.
    pub tag: Vec<TagPart>,
    /// Every separator character in the tag: values escape them, so a
    /// composite member reads back one way only.
    pub separators: String,
    /// `user:userid:{<id>}`, for docs and layout listings.
    pub pattern: String,
}

/// One piece of the key's hash tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TagPart {
    /// The pk field at this position among the pk fields.
    Pk(usize),
    Sep(String),
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    /// The name in Redis: the field name or its `rename`.
    pub name: String,
    pub role: Role<'a>,
    /// The field's attributes as written, for error spans.
    pub attrs: FieldAttrs,
}

/// What a struct field is in Redis.
pub enum Role<'a> {
    /// Part of the key (`#[pk]`).
    Pk(Pk<'a>),
    /// A stored value: a hash field, a string key or a JSON member.
    Column(Column<'a>),
    /// A `#[hash]` map, kept in its own hash at `<entity key>:<name>`.
    Map,
    /// Not stored (`#[redis(skip)]`); rebuilt with `Default`.
    Skip,
}

pub struct Pk<'a> {
    /// Zero-padding width of an integer pk (`pad = n`).
    pub pad: Option<usize>,
    /// An indexed pk field: always an equality index, since a pk never changes.
    pub index: Option<Index<'a>>,
}

pub struct Column<'a> {
    pub codec: Codec,
    /// `#[redis(default)]` on a non-`Option`: absence decodes as `Default`.
    pub defaulted: bool,
    /// Absence in Redis is allowed (`Option`, or defaulted).
    pub optional: bool,
    /// Per-column expiry in seconds (`strings` layout).
    pub ttl: Option<u64>,
    /// The `#[version]` column.
    pub version: bool,
    pub index: Option<Index<'a>>,
}

/// How a column's value is encoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Codec {
    Plain,
    Optional,
    Json,
    JsonOptional,
    /// A tag collection (`#[index]` on a `Vec` / set).
    TagList,
}

/// An index on a field, its kind decided once from `#[index(...)]` and the
/// field's type.
pub struct Index<'a> {
    pub kind: IndexKind,
    /// What one index entry holds: the field's type without `Option`, or
    /// the element type of a tag collection.
    pub value_ty: &'a Type,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexKind {
    Equality,
    Unique,
    /// `#[index]` on a collection: one set per element.
    Tags,
    Prefix,
    Sorted,
}

impl Field<'_> {
    pub fn is_option(&self) -> bool {
        types::option_inner(self.ty).is_some()
    }

    /// Columns and `#[hash]` maps: the fields stored under their own name.
    pub fn is_stored(&self) -> bool {
        matches!(self.role, Role::Column(_) | Role::Map)
    }
}

impl<'a> Entity<'a> {
    pub fn pks(&self) -> impl Iterator<Item = (&Field<'a>, &Pk<'a>)> {
        self.fields.iter().filter_map(|f| match &f.role {
            Role::Pk(pk) => Some((f, pk)),
            _ => None,
        })
    }

    pub fn columns(&self) -> impl Iterator<Item = (&Field<'a>, &Column<'a>)> {
        self.fields.iter().filter_map(|f| match &f.role {
            Role::Column(c) => Some((f, c)),
            _ => None,
        })
    }

    pub fn maps(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields.iter().filter(|f| matches!(f.role, Role::Map))
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

/// Builds the model, recording attribute errors in `cx`. `None` when the
/// input is not a struct with named fields (also recorded).
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
    let attrs = attr::container(cx, &input.attrs);
    let layout = attrs.layout.as_ref().map_or(Layout::Hash, |l| l.value);
    let prefix = attrs
        .prefix
        .as_ref()
        .map(|p| p.value.clone())
        .unwrap_or_else(|| snake_case(&input.ident.to_string()));
    let fields: Vec<Field> = named
        .named
        .iter()
        .filter_map(|f| field(cx, f, layout))
        .collect();
    let key = key(cx, &attrs, &prefix, &fields);
    let krate = attrs
        .krate
        .as_ref()
        .map(|k| k.value.clone())
        .unwrap_or_else(|| syn::parse_quote!(::redis_entity));
    let numeric_pk = {
        let mut pks = fields.iter().filter(|f| matches!(f.role, Role::Pk(_)));
        match (pks.next(), pks.next()) {
            (Some(pk), None) => types::is_integer(pk.ty),
            _ => false,
        }
    };
    Some(Entity {
        ident: &input.ident,
        vis: &input.vis,
        generics: &input.generics,
        krate,
        prefix,
        layout,
        ttl: attrs.ttl.as_ref().map(|t| t.value),
        shards: attrs.shards.as_ref().map(|s| s.value as u16),
        group: attrs.group.as_ref().map(|g| g.value.clone()),
        key,
        numeric_pk,
        fields,
        attrs,
    })
}

fn field<'a>(cx: &Ctxt, f: &'a syn::Field, layout: Layout) -> Option<Field<'a>> {
    let ident = f.ident.as_ref()?;
    let attrs = attr::field(cx, &f.attrs);
    let name = attrs
        .rename
        .as_ref()
        .map(|r| r.value.clone())
        .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());
    let role = role(&attrs, &f.ty, layout);
    Some(Field {
        ident,
        ty: &f.ty,
        name,
        role,
        attrs,
    })
}

/// The role, by precedence: a skipped field is nothing else, a pk is never a
/// column, a `#[hash]` map is never a column. Conflicting attributes are
/// errors the checks report; the role is still decided so that the stub
/// emitted on error has every field handle.
fn role<'a>(attrs: &FieldAttrs, ty: &'a Type, layout: Layout) -> Role<'a> {
    if attrs.skip.is_some() {
        Role::Skip
    } else if attrs.pk.is_some() {
        Role::Pk(Pk {
            pad: attrs.pad.as_ref().map(|p| p.value as usize),
            index: attrs.index.as_ref().map(|_| Index {
                kind: IndexKind::Equality,
                value_ty: ty,
            }),
        })
    } else if attrs.hash.is_some() {
        Role::Map
    } else {
        Role::Column(column(attrs, ty, layout))
    }
}

fn column<'a>(attrs: &FieldAttrs, ty: &'a Type, layout: Layout) -> Column<'a> {
    let option = types::option_inner(ty).is_some();
    let json = attrs.json.is_some() || layout == Layout::Json;
    // An index on a collection stored as text is a tag relation: the
    // collection is stored as a tag list and indexed element by element.
    // `#[redis(tags)]` stores it so without an index, which one can then
    // be added to without changing what is stored.
    let tags = (attrs.index.is_some() || attrs.tags.is_some()) && types::is_collection(ty) && !json;
    let codec = match (tags, json, option) {
        (true, _, _) => Codec::TagList,
        (false, false, false) => Codec::Plain,
        (false, false, true) => Codec::Optional,
        (false, true, false) => Codec::Json,
        (false, true, true) => Codec::JsonOptional,
    };
    let defaulted = attrs.default.is_some() && !option;
    Column {
        codec,
        defaulted,
        optional: matches!(codec, Codec::Optional | Codec::JsonOptional) || defaulted,
        ttl: attrs.ttl.as_ref().map(|t| t.value),
        version: attrs.version.is_some(),
        index: attrs.index.as_ref().map(|i| index(i.value, ty, tags)),
    }
}

fn index(arg: IndexArg, ty: &Type, tags: bool) -> Index<'_> {
    let inner = types::option_inner(ty).unwrap_or(ty);
    if tags {
        return Index {
            kind: IndexKind::Tags,
            value_ty: types::element(ty).unwrap_or(ty),
        };
    }
    let kind = match arg {
        IndexArg::Equality => IndexKind::Equality,
        IndexArg::Unique => IndexKind::Unique,
        IndexArg::Sorted => IndexKind::Sorted,
        IndexArg::Prefix => IndexKind::Prefix,
    };
    Index {
        kind,
        value_ty: inner,
    }
}

fn key(cx: &Ctxt, attrs: &Container, prefix: &str, fields: &[Field]) -> Key {
    let pk_names: Vec<&str> = fields
        .iter()
        .filter(|f| matches!(f.role, Role::Pk(_)))
        .map(|f| f.name.as_str())
        .collect();
    let (template, written) = match &attrs.key {
        Some(k) => match template::parse(&k.value) {
            Ok(t) => (t, Some(k.tokens.clone())),
            Err(msg) => {
                cx.error_spanned_by(&k.tokens, msg);
                (Vec::new(), Some(k.tokens.clone()))
            }
        },
        None => (default_template(prefix, &pk_names), None),
    };
    shape_key(template, written, &pk_names)
}

/// `<prefix>:{a}` or, for a composite key, `<prefix>:{a}:{b}`.
fn default_template(prefix: &str, pk_names: &[&str]) -> Vec<Part> {
    let mut t = vec![Part::Lit(format!("{prefix}:"))];
    for (i, name) in pk_names.iter().enumerate() {
        if i > 0 {
            t.push(Part::Lit(":".into()));
        }
        t.push(Part::Field((*name).to_owned()));
    }
    t
}

/// Splits the template into head, hash tag and tail: the tag spans from the
/// first placeholder to the last.
fn shape_key(template: Vec<Part>, written: Option<TokenStream>, pk_names: &[&str]) -> Key {
    let first = template.iter().position(|p| matches!(p, Part::Field(_)));
    let last = template.iter().rposition(|p| matches!(p, Part::Field(_)));
    let (Some(first), Some(last)) = (first, last) else {
        return Key {
            template,
            written,
            head: String::new(),
            tail: String::new(),
            tag: Vec::new(),
            separators: String::new(),
            pattern: String::new(),
        };
    };
    let head = lit_text(&template[..first]);
    let tail = lit_text(&template[last + 1..]);
    let inner = &template[first..=last];
    let mut separators = String::new();
    for c in lit_text(inner).chars() {
        if !separators.contains(c) {
            separators.push(c);
        }
    }
    // A name that is not a pk field is a recorded error; it has no place in
    // the tag.
    let tag: Vec<TagPart> = inner
        .iter()
        .filter_map(|p| match p {
            Part::Lit(sep) => Some(TagPart::Sep(sep.clone())),
            Part::Field(name) => pk_names.iter().position(|n| n == name).map(TagPart::Pk),
        })
        .collect();
    let mut pattern = format!("{head}{{");
    for p in inner {
        match p {
            Part::Lit(sep) => pattern.push_str(sep),
            Part::Field(name) => pattern.push_str(&format!("<{name}>")),
        }
    }
    pattern.push('}');
    pattern.push_str(&tail);
    Key {
        template,
        written,
        head,
        tail,
        tag,
        separators,
        pattern,
    }
}

fn lit_text(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Lit(s) => s.as_str(),
            Part::Field(_) => "",
        })
        .collect()
}
