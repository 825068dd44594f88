//! Code generation from the entity model, one function per generated item.
//! Generated code names only paths under `<crate>::__private` (by default
//! `::redis_entity::__private`), so a user needs the one dependency.

use crate::model::{self, Codec, Column, Entity, Field, IndexKind, Layout, TagPart};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitStr};

/// The runtime's private paths: `::redis_entity::__private`.
pub fn private(e: &Entity) -> TokenStream {
    let krate = &e.krate;
    quote!(#krate::__private)
}

pub fn expand(e: &Entity) -> TokenStream {
    let re = &private(e);
    let pk_index_value = pk_index_value_fn(e, re);
    let impl_entity = impl_entity(e, re);
    let inherent = inherent_impl(e, re);
    quote! {
        const _: () = {
            #pk_index_value

            #impl_entity
        };

        #inherent
    }
}

fn lit(s: &str) -> LitStr {
    LitStr::new(s, Span::call_site())
}

fn option(re: &TokenStream, value: Option<impl quote::ToTokens>) -> TokenStream {
    match value {
        Some(v) => quote!(#re::core::option::Option::Some(#v)),
        None => quote!(#re::core::option::Option::None),
    }
}

/// `__p0, __p1, ...`: the pk fields bound by reference.
fn pk_vars(e: &Entity) -> Vec<Ident> {
    (0..e.pks().count())
        .map(|i| format_ident!("__p{}", i))
        .collect()
}

/// `T` for one pk field, `(A, B)` for a composite key.
pub fn pk_type(e: &Entity) -> TokenStream {
    let types: Vec<&syn::Type> = e.pks().map(|(f, _)| f.ty).collect();
    match types.as_slice() {
        [one] => quote!(#one),
        many => quote!((#(#many),*)),
    }
}

/// Binds `__p0..` to the parts of `pk: &Self::Pk`.
fn bind_pk(e: &Entity) -> TokenStream {
    let vars = pk_vars(e);
    match vars.as_slice() {
        [one] => quote!(let #one = pk;),
        many => quote!(let (#(#many),*) = pk;),
    }
}

// ---- Inside `const _`: the `Entity` impl and its helper ----

/// `EntityDesc::pk_index_value`: the stored form of an indexed pk field,
/// read back from a member.
fn pk_index_value_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let ident = e.ident;
    let bind_pk = bind_pk(e);
    let vars = pk_vars(e);
    let arms = e
        .pks()
        .zip(&vars)
        .filter(|((_, pk), _)| pk.index.is_some())
        .map(|((f, _), v)| {
            let name = lit(&f.name);
            quote!(#name => #re::core::option::Option::Some(#re::to_bytes(#v)),)
        });
    quote! {
        fn __pk_index_value(member: &str, field: &str) -> #re::core::option::Option<#re::Vec<u8>> {
            #[allow(unused_variables)]
            let pk = <#ident as #re::Entity>::read_member(member)?;
            #[allow(unused_variables)]
            let pk = &pk;
            #bind_pk
            match field {
                #(#arms)*
                _ => #re::core::option::Option::None,
            }
        }
    }
}

fn impl_entity(e: &Entity, re: &TokenStream) -> TokenStream {
    let ident = e.ident;
    let pk_type = pk_type(e);
    let desc = entity_desc(e, re);
    let write_member = write_member_fn(e, re);
    let write_own_member = write_own_member_fn(e, re);
    let read_member = read_member_fn(e, re);
    let to_row = to_row_fn(e, re);
    let from_row = from_row_fn(e, re);
    let validate = validate_fn(e, re);
    quote! {
        impl #re::Derived for #ident {}

        impl #re::Entity for #ident {
            type Pk = #pk_type;

            // One static, so that every use of the type sees one address:
            // the runtime keys what it built and sent for a type (its write
            // library, its schema check) by the description's address, and
            // a promoted `&constant` may get a new address in every crate
            // and codegen unit that names it.
            const DESC: &'static #re::EntityDesc = {
                static DESC: #re::EntityDesc = #desc;
                &DESC
            };

            const SCHEMA: u64 = #re::fingerprint(Self::DESC);

            #write_member
            #write_own_member
            #read_member
            #to_row
            #from_row
            #validate
        }
    }
}

/// `#[redis(validate = path)]`: `path(&self)` returns `Result<(), E>` with
/// `E: Display`; what it says is the error's message. Spanned at the path:
/// a function of another signature is reported there.
fn validate_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let Some(path) = &e.attrs.validate else {
        return TokenStream::new();
    };
    let path = &path.value;
    let call = respan(quote!(#path(self)), path.span());
    quote! {
        fn validate(&self) -> #re::core::result::Result<(), #re::String> {
            #call.map_err(|e| #re::ToString::to_string(&e))
        }
    }
}

fn entity_desc(e: &Entity, re: &TokenStream) -> TokenStream {
    let type_name = lit(&e.ident.to_string());
    let prefix = lit(&e.prefix);
    let layout = match e.layout {
        Layout::Hash => quote!(#re::Layout::Hash),
        Layout::Strings => quote!(#re::Layout::Strings),
        Layout::Json => quote!(#re::Layout::Json),
    };
    let key_pattern = lit(&e.key.pattern);
    let key_head = lit(&e.key.head);
    let key_tail = lit(&e.key.tail);
    let pk_names = e.pks().map(|(f, _)| lit(&f.name));
    let numeric_pk = e.numeric_pk;
    let columns = e.columns().map(|(f, c)| column_desc(f, c, re));
    let maps = e.maps().map(|f| map_desc(f, re));
    let indexes = index_descs(e, re);
    let version = option(re, e.columns().position(|(_, c)| c.version));
    let ttl = option(re, e.ttl);
    // A unique value is checked in one script only when every entity of the
    // type shares one slot: a type with a unique index has one shard unless
    // it says otherwise (and then a cluster refuses its writes).
    let unique = e.columns().any(|(_, c)| {
        c.index
            .as_ref()
            .is_some_and(|i| i.kind == IndexKind::Unique)
    });
    // A group is one slot: one shard.
    let shards = match (e.shards, unique || e.group.is_some()) {
        (Some(n), _) => quote!(#n),
        (None, true) => quote!(1u16),
        (None, false) => quote!(#re::DEFAULT_SHARDS),
    };
    let group = match &e.group {
        Some(g) => quote!(#re::core::option::Option::Some(#g)),
        None => quote!(#re::core::option::Option::None),
    };
    quote! {
        #re::EntityDesc {
            type_name: #type_name,
            prefix: #prefix,
            layout: #layout,
            key_pattern: #key_pattern,
            key_head: #key_head,
            key_tail: #key_tail,
            pk_fields: &[#(#pk_names),*],
            numeric_pk: #numeric_pk,
            columns: &[#(#columns),*],
            maps: &[#(#maps),*],
            indexes: &[#(#indexes),*],
            version: #version,
            pk_index_value: __pk_index_value,
            ttl: #ttl,
            shards: #shards,
            group: #group,
        }
    }
}

fn column_desc(f: &Field, c: &Column, re: &TokenStream) -> TokenStream {
    let name = lit(&f.name);
    let ty = lit(&crate::types::display(f.ty));
    let optional = c.optional;
    let ttl = option(re, c.ttl);
    let form = match c.codec {
        Codec::Plain | Codec::Optional => quote!(#re::ColumnForm::Text),
        Codec::Json | Codec::JsonOptional => quote!(#re::ColumnForm::Json),
        Codec::TagList => quote!(#re::ColumnForm::Tags),
    };
    let alias = option(re, f.attrs.alias.as_ref().map(|a| lit(&a.value)));
    quote!(#re::ColumnDesc { name: #name, rust_type: #ty, optional: #optional, ttl: #ttl, form: #form, alias: #alias })
}

fn map_desc(f: &Field, re: &TokenStream) -> TokenStream {
    let name = lit(&f.name);
    let ty = lit(&crate::types::display(f.ty));
    quote!(#re::MapDesc { name: #name, rust_type: #ty })
}

/// Indexed pk fields first, then indexed columns, in field order.
fn index_descs(e: &Entity, re: &TokenStream) -> Vec<TokenStream> {
    let none = quote!(#re::core::option::Option::None);
    let pks = e.pks().filter(|(_, pk)| pk.index.is_some()).map(|(f, _)| {
        let name = lit(&f.name);
        quote!(#re::IndexDesc { field: #name, source: #re::IndexSource::Pk, kind: #re::IndexKind::Equality, score: #none })
    });
    let columns = e.columns().enumerate().filter_map(|(i, (f, c))| {
        let index = c.index.as_ref()?;
        let name = lit(&f.name);
        let kind = index_kind(index.kind, re);
        let score = match index.kind {
            IndexKind::Sorted => {
                let value_ty = index.value_ty;
                quote!(#re::core::option::Option::Some(<#value_ty as #re::SortScore>::score_of))
            }
            _ => none.clone(),
        };
        Some(quote!(#re::IndexDesc { field: #name, source: #re::IndexSource::Column(#i), kind: #kind, score: #score }))
    });
    pks.chain(columns).collect()
}

fn index_kind(kind: IndexKind, re: &TokenStream) -> TokenStream {
    match kind {
        IndexKind::Equality => quote!(#re::IndexKind::Equality),
        IndexKind::Unique => quote!(#re::IndexKind::Unique),
        IndexKind::Tags => quote!(#re::IndexKind::Tags),
        IndexKind::Prefix => quote!(#re::IndexKind::Prefix),
        IndexKind::Sorted => quote!(#re::IndexKind::Sorted),
    }
}

fn write_member_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let bind_pk = bind_pk(e);
    let body = write_member_body(e, re);
    quote! {
        fn write_member(pk: &Self::Pk, out: &mut #re::String) {
            #bind_pk
            #body
        }
    }
}

fn write_own_member_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let vars = pk_vars(e);
    let idents = e.pks().map(|(f, _)| f.ident);
    let body = write_member_body(e, re);
    quote! {
        fn write_own_member(&self, out: &mut #re::String) {
            #(let #vars = &self.#idents;)*
            #body
        }
    }
}

/// Appends the member to `out`, given `__p0..` bound to pk references.
fn write_member_body(e: &Entity, re: &TokenStream) -> TokenStream {
    // `@` too: no member starts with it, so the standalone layout's index
    // families (`user:@country:DE`) are never an entity key.
    let extra = lit(&format!("{}@", e.key.separators));
    e.key
        .tag
        .iter()
        .map(|part| match part {
            TagPart::Sep(sep) => {
                let sep = lit(sep);
                quote!(out.push_str(#sep);)
            }
            TagPart::Pk(i) => {
                let p = format_ident!("__p{}", i);
                match pad(e, *i) {
                    Some(w) => quote!(#re::PaddedKeyPart::write_padded(#p, out, #w);),
                    None => quote!(#re::KeyPart::write_key(#p, out, #extra);),
                }
            }
        })
        .collect()
}

/// The `pad` width of the `i`-th pk field.
fn pad(e: &Entity, i: usize) -> Option<usize> {
    e.pks().nth(i).and_then(|(_, pk)| pk.pad)
}

/// Parses a member back into a pk: split at each separator in turn; values
/// have the separator characters escaped, so the first occurrence is the
/// real one.
fn read_member_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let option = quote!(#re::core::option::Option);
    let tag = &e.key.tag;
    // What `write_member_body` escapes besides the usual characters.
    let extra = lit(&format!("{}@", e.key.separators));
    let body = if tag.is_empty() {
        quote!(#option::None)
    } else {
        let mut steps = TokenStream::new();
        for (at, part) in tag.iter().enumerate() {
            let TagPart::Pk(i) = part else {
                continue;
            };
            let segment = match tag.get(at + 1) {
                Some(TagPart::Sep(sep)) => {
                    let sep = lit(sep);
                    quote!(let (__seg, __rest) = __rest.split_once(#sep)?;)
                }
                _ => quote!(let (__seg, __rest) = (__rest, "");),
            };
            let parse = match pad(e, *i) {
                Some(w) => quote!(#re::PaddedKeyPart::read_padded(__seg, #w)?),
                None => quote!(#re::KeyPart::read_key(__seg, #extra)?),
            };
            let var = format_ident!("__r{}", i);
            steps.extend(quote! {
                #segment
                let #var = #parse;
            });
        }
        let vars: Vec<Ident> = (0..e.pks().count())
            .map(|i| format_ident!("__r{}", i))
            .collect();
        let value = match vars.as_slice() {
            [one] => quote!(#one),
            many => quote!((#(#many),*)),
        };
        quote! {
            let __rest: &str = member;
            #steps
            #option::Some(#value)
        }
    };
    quote! {
        fn read_member(member: &str) -> #option<Self::Pk> {
            #body
        }
    }
}

/// `tokens` with every token at `span` (so that an error about them points
/// at the user's code, e.g. a field's type, instead of the derive).
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut inner = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                inner.set_span(span);
                t = proc_macro2::TokenTree::Group(inner);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}

/// `<Plain as FieldCodec<T>>`-ready codec type of a column.
fn codec_type(c: &Column, re: &TokenStream) -> TokenStream {
    let base = match c.codec {
        Codec::Plain => quote!(#re::Plain),
        Codec::Optional => quote!(#re::Optional),
        Codec::Json => quote!(#re::Json),
        Codec::JsonOptional => quote!(#re::JsonOptional),
        Codec::TagList => quote!(#re::TagList),
    };
    if c.defaulted {
        quote!(#re::Defaulted<#base>)
    } else {
        base
    }
}

fn to_row_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let columns = e.columns().map(|(f, c)| {
        let codec = codec_type(c, re);
        let (ty, name, ident) = (f.ty, lit(&f.name), f.ident);
        // Spanned at the field's type: a type that cannot be stored is
        // reported there (once), with the codec trait's hint.
        let path = respan(quote!(<#codec as #re::FieldCodec<#ty>>::encode), ty.span());
        quote!(#path(#name, &self.#ident)?)
    });
    let maps = e.maps().map(|f| {
        let ident = f.ident;
        quote!(#re::MapField::encode_entries(&self.#ident))
    });
    quote! {
        fn to_row(&self) -> #re::Result<#re::Row> {
            #re::core::result::Result::Ok(#re::Row {
                columns: #re::Vec::from([#(#columns),*]),
                maps: #re::Vec::from([#(#maps),*]),
            })
        }
    }
}

/// Decodes every column into `__c0..` and every map into `__m0..`, then
/// builds the struct from them, the pk and defaults for skipped fields.
fn from_row_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let ident = e.ident;
    let decode_columns = e.columns().enumerate().map(|(i, (f, c))| {
        let var = format_ident!("__c{}", i);
        let codec = codec_type(c, re);
        let (ty, name) = (f.ty, lit(&f.name));
        let decode = respan(
            quote!(<#codec as #re::FieldCodec<#ty>>::decode_owned),
            ty.span(),
        );
        quote! {
            let #var = #decode(#name, #re::take(&mut __cols))?;
        }
    });
    let decode_maps = e.maps().enumerate().map(|(i, f)| {
        let var = format_ident!("__m{}", i);
        let (ty, name) = (f.ty, lit(&f.name));
        quote! {
            let #var = #re::decode_map::<#ty>(
                #name,
                __maps.next().unwrap_or_default(),
            )?;
        }
    });
    let bind_pk = bind_pk(e);
    let inits = field_inits(e, re);
    quote! {
        fn from_row(pk: &Self::Pk, row: #re::Row) -> #re::core::result::Result<Self, #re::FieldError> {
            let mut __cols = row.columns.into_iter();
            let mut __maps = row.maps.into_iter();
            #(#decode_columns)*
            #(#decode_maps)*
            #bind_pk
            #re::core::result::Result::Ok(#ident { #(#inits),* })
        }
    }
}

/// `field: value` for every struct field, in declaration order, naming the
/// variables `from_row_fn` bound.
fn field_inits(e: &Entity, re: &TokenStream) -> Vec<TokenStream> {
    let (mut pks, mut columns, mut maps) = (0, 0, 0);
    fn next(n: &mut usize) -> usize {
        *n += 1;
        *n - 1
    }
    e.fields
        .iter()
        .map(|f| {
            let id = f.ident;
            match f.role {
                model::Role::Pk(_) => {
                    let v = format_ident!("__p{}", next(&mut pks));
                    quote!(#id: #re::core::clone::Clone::clone(#v))
                }
                model::Role::Column(_) => {
                    let v = format_ident!("__c{}", next(&mut columns));
                    quote!(#id: #v)
                }
                model::Role::Map => {
                    let v = format_ident!("__m{}", next(&mut maps));
                    quote!(#id: #v)
                }
                model::Role::Skip => quote!(#id: #re::core::default::Default::default()),
            }
        })
        .collect()
}

// ---- Outside `const _`: the inherent impl users name ----

/// Field handles (`User::EMAIL`) with their markers, `User::key(&pk)` and
/// `User::layout()`. Also part of the stub emitted on error: it reads only
/// the model and the `Entity` trait, never the generated `Entity` impl's
/// details.
pub fn inherent_impl(e: &Entity, re: &TokenStream) -> TokenStream {
    let ident = e.ident;
    let markers = field_markers(e, re);
    let pk_handles = e
        .pks()
        .filter_map(|(f, pk)| Some(pk_handle(e, f, pk.index.as_ref()?, re)));
    let column_handles = e
        .columns()
        .enumerate()
        .map(|(i, (f, c))| column_handle(e, f, c, i, re));
    let map_handles = e.maps().enumerate().map(|(i, f)| map_handle(e, f, i, re));
    let key_fn = key_fn(e, re);
    let layout_fn = layout_fn(e, re);
    quote! {
        #markers

        #[allow(dead_code)]
        impl #ident {
            #(#pk_handles)*
            #(#column_handles)*
            #(#map_handles)*

            #key_fn

            #layout_fn
        }
    }
}

/// The fields that have a `Field` handle.
fn handled_fields<'e>(e: &'e Entity) -> impl Iterator<Item = &'e Field<'e>> {
    e.fields.iter().filter(|f| match &f.role {
        model::Role::Pk(pk) => pk.index.is_some(),
        model::Role::Column(_) => true,
        model::Role::Map | model::Role::Skip => false,
    })
}

/// The field's position among the struct's fields, which numbers its
/// marker: `FieldMarker<2>`.
fn position(e: &Entity, f: &Field) -> proc_macro2::Literal {
    let i = e.fields.iter().take_while(|g| g.ident != f.ident).count();
    proc_macro2::Literal::usize_unsuffixed(i)
}

/// The marker type of each handled field: a unit struct named after the
/// field, which the handle's type carries so that an error about the
/// handle (a query its index does not answer, `set` on a pk) names the
/// field. rustc prints it as `User::email` because it is defined in a
/// constant named after the type (a braced struct has no value of that
/// name) and has a twin of the same name (a name defined once is printed
/// alone). `FieldMarker<i>` names it outside the constant (an impl in a
/// named constant, which the `non_local_definitions` lint would flag).
fn field_markers(e: &Entity, re: &TokenStream) -> TokenStream {
    let ident = e.ident;
    let (positions, markers): (Vec<_>, Vec<_>) = handled_fields(e)
        .map(|f| (position(e, f), marker_name(e, f)))
        .unzip();
    if markers.is_empty() {
        return TokenStream::new();
    }
    // Spanned at the field: an error's note on the marker shows the field.
    let structs = markers
        .iter()
        .map(|m| quote_spanned!(m.span()=> pub struct #m;));
    quote! {
        #[doc(hidden)]
        #[allow(
            non_upper_case_globals,
            non_camel_case_types,
            non_local_definitions,
            dead_code,
            unreachable_pub,
            unnameable_types
        )]
        const #ident: () = {
            #(#structs)*
            #(impl #re::FieldMarker<#positions> for #ident {
                type Marker = #markers;
            })*
            const _: () = {
                #(struct #markers;)*
            };
        };
    }
}

/// The field's own name, unless that is the struct's (the marker would
/// hide the struct inside the constant).
fn marker_name(e: &Entity, f: &Field) -> Ident {
    if f.ident == e.ident {
        format_ident!("{}_", f.ident)
    } else {
        f.ident.clone()
    }
}

/// `<User as FieldMarker<i>>::Marker`: the marker of `f`.
fn marker_type(e: &Entity, f: &Field, re: &TokenStream) -> TokenStream {
    let (ident, i) = (e.ident, position(e, f));
    quote!(<#ident as #re::FieldMarker<#i>>::Marker)
}

/// `User` field `email` → `User::EMAIL`.
fn handle_name(ident: &Ident) -> Ident {
    let name = ident.to_string();
    let name = name.trim_start_matches("r#").to_uppercase();
    Ident::new(&name, ident.span())
}

fn pk_handle(e: &Entity, f: &Field, index: &model::Index, re: &TokenStream) -> TokenStream {
    let (vis, ident) = (e.vis, e.ident);
    let name = handle_name(f.ident);
    let (ty, value_ty) = (f.ty, index.value_ty);
    let marker = marker_type(e, f, re);
    let stored = lit(&f.name);
    let doc = format!(
        "Handle of the indexed pk field `{}` (queries only: a pk is never set).",
        f.ident
    );
    quote! {
        #[doc = #doc]
        #vis const #name: #re::Field<#ident, #ty, #re::PkPart, #re::Equality<#value_ty>, #marker> = #re::Field::new(#stored, usize::MAX);
    }
}

fn column_handle(e: &Entity, f: &Field, c: &Column, i: usize, re: &TokenStream) -> TokenStream {
    let (vis, ident) = (e.vis, e.ident);
    let name = handle_name(f.ident);
    let ty = f.ty;
    let codec = codec_type(c, re);
    let kind = match &c.index {
        None => quote!(#re::NoIndex),
        Some(index) => {
            let value_ty = index.value_ty;
            match index.kind {
                IndexKind::Equality => quote!(#re::Equality<#value_ty>),
                IndexKind::Unique => quote!(#re::Unique<#value_ty>),
                IndexKind::Tags => quote!(#re::Tags<#value_ty>),
                IndexKind::Prefix => quote!(#re::Prefix<#value_ty>),
                IndexKind::Sorted => quote!(#re::Sorted<#value_ty>),
            }
        }
    };
    let marker = marker_type(e, f, re);
    let stored = lit(&f.name);
    let doc = format!(
        "Handle of the `{}` field (stored as `{}`).",
        f.ident, f.name
    );
    quote! {
        #[doc = #doc]
        #vis const #name: #re::Field<#ident, #ty, #codec, #kind, #marker> = #re::Field::new(#stored, #i);
    }
}

fn map_handle(e: &Entity, f: &Field, i: usize, re: &TokenStream) -> TokenStream {
    let (vis, ident) = (e.vis, e.ident);
    let name = handle_name(f.ident);
    let ty = f.ty;
    let stored = lit(&f.name);
    let doc = format!(
        "Handle of the `#[hash]` field `{}` (its own hash at `<key>:{}`).",
        f.ident, f.name
    );
    quote! {
        #[doc = #doc]
        #vis const #name: #re::HashField<#ident, #ty> = #re::HashField::new(#stored, #i);
    }
}

fn key_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let vis = e.vis;
    let doc = format!(
        "The entity key for `pk`, without namespace: `{}`.",
        e.key.pattern
    );
    quote! {
        #[doc = #doc]
        #vis fn key(pk: &<Self as #re::Entity>::Pk) -> #re::String {
            #re::entity_key::<Self>(pk)
        }
    }
}

fn layout_fn(e: &Entity, re: &TokenStream) -> TokenStream {
    let vis = e.vis;
    quote! {
        /// Every key family of this entity with its Redis type.
        #vis fn layout() -> #re::EntityLayout {
            #re::EntityLayout::of(<Self as #re::Entity>::DESC)
        }
    }
}
