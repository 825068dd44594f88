//! Code generation from the entity model. Generated code names only paths
//! under `<crate>::__private` (by default `::redis_entity::__private`), so a
//! user needs the one dependency.

use crate::attr::{IndexKind, LayoutKind};
use crate::check;
use crate::ctxt::Ctxt;
use crate::model::{self, Codec, Entity, Role};
use crate::template::Part;
use crate::types;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{DeriveInput, Ident, LitStr};

pub fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::default();
    let entity = model::build(&cx, input);
    if let Some(e) = &entity {
        check::check(&cx, e);
    }
    match (cx.check(), entity) {
        (Ok(()), Some(e)) => generate(&e),
        (Err(err), _) => err.to_compile_error(),
        (Ok(()), None) => TokenStream::new(),
    }
}

fn lit(s: &str) -> LitStr {
    LitStr::new(s, Span::call_site())
}

fn screaming(ident: &Ident) -> Ident {
    let name = ident.to_string();
    let name = name.trim_start_matches("r#").to_uppercase();
    Ident::new(&name, ident.span())
}

struct KeyCode {
    /// Statements that append the member to `out`, given `__p0..` bound to pk refs.
    member: TokenStream,
    /// An expression parsing `member: &str` into `Option<Pk>`.
    read: TokenStream,
    /// Literal text before the hash tag.
    head: String,
    /// Literal text after the hash tag.
    tail: String,
    /// `user:userid:{<id>}`.
    pattern: String,
}

fn key_code(e: &Entity, re: &TokenStream) -> KeyCode {
    let pk_names: Vec<String> = e.pks().map(|f| f.name.clone()).collect();
    let first = e.template.iter().position(|p| matches!(p, Part::Field(_)));
    let last = e.template.iter().rposition(|p| matches!(p, Part::Field(_)));
    let (Some(first), Some(last)) = (first, last) else {
        return KeyCode {
            member: TokenStream::new(),
            read: quote!(#re::core::option::Option::None),
            head: String::new(),
            tail: String::new(),
            pattern: String::new(),
        };
    };
    let lit_text = |parts: &[Part]| -> String {
        parts
            .iter()
            .map(|p| match p {
                Part::Lit(s) => s.clone(),
                Part::Field(_) => String::new(),
            })
            .collect()
    };
    let head = lit_text(&e.template[..first]);
    let tail = lit_text(&e.template[last + 1..]);
    let inner = &e.template[first..=last];
    // Separators between placeholders are escaped inside values, so a composite
    // key reads back one way only.
    let mut extra = String::new();
    for c in lit_text(inner).chars() {
        if !extra.contains(c) {
            extra.push(c);
        }
    }
    let extra = lit(&extra);
    let mut member = TokenStream::new();
    let mut pattern = format!("{head}{{");
    // Parsing: split the member at each separator in turn; values have the
    // separator characters escaped, so the first occurrence is the real one.
    let mut read = TokenStream::new();
    let mut parsed = vec![None; pk_names.len()];
    for (i, p) in inner.iter().enumerate() {
        match p {
            Part::Lit(sep) => {
                pattern.push_str(sep);
                let sep = lit(sep);
                member.extend(quote!(out.push_str(#sep);));
            }
            Part::Field(name) => {
                pattern.push_str(&format!("<{name}>"));
                let idx = pk_names.iter().position(|n| n == name).unwrap_or(0);
                let p = format_ident!("__p{}", idx);
                let pad = pad_of(e, idx);
                member.extend(match pad {
                    Some(w) => quote!(#re::PaddedKeyPart::write_padded(#p, out, #w);),
                    None => quote!(#re::KeyPart::write_key(#p, out, #extra);),
                });
                let var = format_ident!("__r{}", idx);
                let segment = match inner.get(i + 1) {
                    Some(Part::Lit(sep)) => {
                        let sep = lit(sep);
                        quote! {
                            let (__seg, __rest) = __rest.split_once(#sep)?;
                        }
                    }
                    _ => quote! {
                        let (__seg, __rest) = (__rest, "");
                    },
                };
                let parse = match pad_of(e, idx) {
                    Some(w) => quote!(#re::PaddedKeyPart::read_padded(__seg, #w)?),
                    None => quote!(#re::KeyPart::read_key(__seg)?),
                };
                read.extend(quote! {
                    #segment
                    let #var = #parse;
                });
                parsed[idx] = Some(var);
            }
        }
    }
    let vars: Vec<Ident> = parsed
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or_else(|| format_ident!("__r{}", i)))
        .collect();
    let value = if vars.len() == 1 {
        let v = &vars[0];
        quote!(#v)
    } else {
        quote!((#(#vars),*))
    };
    let read = quote! {
        let __rest: &str = member;
        #read
        #re::core::option::Option::Some(#value)
    };
    pattern.push('}');
    pattern.push_str(&tail);
    KeyCode {
        member,
        read,
        head,
        tail,
        pattern,
    }
}

/// The `pad` width of the `i`-th pk field.
fn pad_of(e: &Entity, i: usize) -> Option<usize> {
    let f = e.pks().nth(i)?;
    f.attrs.pad.as_ref().map(|p| p.value as usize)
}

fn codec_type(re: &TokenStream, codec: Codec, defaulted: bool) -> TokenStream {
    let base = match codec {
        Codec::Plain => quote!(#re::Plain),
        Codec::Optional => quote!(#re::Optional),
        Codec::Json => quote!(#re::Json),
        Codec::JsonOptional => quote!(#re::JsonOptional),
        Codec::TagList => quote!(#re::TagList),
    };
    if defaulted {
        quote!(#re::Defaulted<#base>)
    } else {
        base
    }
}

fn generate(e: &Entity) -> TokenStream {
    let krate = &e.krate;
    let re = quote!(#krate::__private);
    let ident = e.ident;
    let vis = e.vis;
    let option = quote!(#re::core::option::Option);

    let pks: Vec<&model::Field> = e.pks().collect();
    let pk_types: Vec<&syn::Type> = pks.iter().map(|f| f.ty).collect();
    let pk_idents: Vec<&Ident> = pks.iter().map(|f| f.ident).collect();
    let pk_vars: Vec<Ident> = (0..pks.len()).map(|i| format_ident!("__p{}", i)).collect();
    let pk_type = if pks.len() == 1 {
        let t = pk_types[0];
        quote!(#t)
    } else {
        quote!((#(#pk_types),*))
    };
    let bind_pk = if pks.len() == 1 {
        let v = &pk_vars[0];
        quote!(let #v = pk;)
    } else {
        quote!(let (#(#pk_vars),*) = pk;)
    };
    let bind_own = quote!(#(let #pk_vars = &self.#pk_idents;)*);

    let key = key_code(e, &re);
    let member_body = &key.member;
    let read_member = &key.read;
    let key_pattern = lit(&key.pattern);
    let key_head = lit(&key.head);
    let key_tail = lit(&key.tail);

    let layout = match e.layout {
        LayoutKind::Hash => quote!(#re::Layout::Hash),
        LayoutKind::Strings => quote!(#re::Layout::Strings),
        LayoutKind::Json => quote!(#re::Layout::Json),
    };

    let columns: Vec<&model::Field> = e.columns().collect();
    let maps: Vec<&model::Field> = e.maps().collect();

    let column_descs = columns.iter().map(|f| {
        let name = lit(&f.name);
        let ty = lit(&types::display(f.ty));
        let optional = matches!(
            f.role,
            Role::Column {
                codec: Codec::Optional | Codec::JsonOptional,
                ..
            } | Role::Column {
                defaulted: true,
                ..
            }
        );
        let ttl = match f.attrs.ttl.as_ref().map(|t| t.value) {
            Some(t) => quote!(#option::Some(#t)),
            None => quote!(#option::None),
        };
        quote!(#re::ColumnDesc { name: #name, rust_type: #ty, optional: #optional, ttl: #ttl })
    });
    let map_descs = maps.iter().map(|f| {
        let name = lit(&f.name);
        let ty = lit(&types::display(f.ty));
        quote!(#re::MapDesc { name: #name, rust_type: #ty })
    });
    let pk_names = pks.iter().map(|f| lit(&f.name));
    let numeric_pk = pks.len() == 1 && types::is_integer(pks[0].ty);
    let version = match columns.iter().position(|f| f.attrs.version.is_some()) {
        Some(i) => quote!(#option::Some(#i)),
        None => quote!(#option::None),
    };
    let pk_index_descs = pks.iter().filter(|f| f.attrs.index.is_some()).map(|f| {
        let name = lit(&f.name);
        quote!(#re::IndexDesc { field: #name, source: #re::IndexSource::Pk, kind: #re::IndexKind::Equality, score: #re::core::option::Option::None })
    });
    let pk_value_arms = pks
        .iter()
        .enumerate()
        .filter(|(_, f)| f.attrs.index.is_some())
        .map(|(i, f)| {
            let name = lit(&f.name);
            let v = &pk_vars[i];
            quote!(#name => #re::core::option::Option::Some(#re::to_bytes(#v)),)
        });
    let pk_value_fn = quote! {
        fn __pk_index_value(member: &str, field: &str) -> #re::core::option::Option<#re::Vec<u8>> {
            #[allow(unused_variables)]
            let pk = <#ident as #re::Entity>::read_member(member)?;
            #[allow(unused_variables)]
            let pk = &pk;
            #bind_pk
            match field {
                #(#pk_value_arms)*
                _ => #re::core::option::Option::None,
            }
        }
    };
    let pk_consts = pks.iter().filter(|f| f.attrs.index.is_some()).map(|f| {
        let name = screaming(f.ident);
        let ty = f.ty;
        let stored = lit(&f.name);
        let doc = format!("Handle of the indexed pk field `{}` (queries only: a pk is never set).", f.ident);
        quote! {
            #[doc = #doc]
            #vis const #name: #re::Field<#ident, #ty, #re::PkPart, #re::Equality<#ty>> = #re::Field::new(#stored, usize::MAX);
        }
    });
    let index_descs = columns.iter().enumerate().filter_map(|(i, f)| {
        let kind = match (f.attrs.index.as_ref()?.value, f.role) {
            (
                _,
                Role::Column {
                    codec: Codec::TagList,
                    ..
                },
            ) => quote!(#re::IndexKind::Tags),
            (IndexKind::Unique, _) => quote!(#re::IndexKind::Unique),
            (IndexKind::Prefix, _) => quote!(#re::IndexKind::Prefix),
            (IndexKind::Sorted, _) => quote!(#re::IndexKind::Sorted),
            _ => quote!(#re::IndexKind::Equality),
        };
        let name = lit(&f.name);
        let score = match f.attrs.index.as_ref()?.value {
            IndexKind::Sorted => {
                let inner = types::option_inner(f.ty).unwrap_or(f.ty);
                quote!(#re::core::option::Option::Some(<#inner as #re::SortScore>::score_of))
            }
            _ => quote!(#re::core::option::Option::None),
        };
        Some(quote!(#re::IndexDesc { field: #name, source: #re::IndexSource::Column(#i), kind: #kind, score: #score }))
    });
    let index_descs: Vec<TokenStream> = pk_index_descs.chain(index_descs).collect();
    let type_name = lit(&ident.to_string());
    let prefix = lit(&e.prefix);
    let ttl = match e.ttl {
        Some(t) => quote!(#option::Some(#t)),
        None => quote!(#option::None),
    };

    let codecs: Vec<TokenStream> = columns
        .iter()
        .map(|f| match f.role {
            Role::Column { codec, defaulted } => codec_type(&re, codec, defaulted),
            _ => unreachable_codec(),
        })
        .collect();
    let col_idents: Vec<&Ident> = columns.iter().map(|f| f.ident).collect();
    let col_types: Vec<&syn::Type> = columns.iter().map(|f| f.ty).collect();
    let col_names: Vec<LitStr> = columns.iter().map(|f| lit(&f.name)).collect();
    let col_vars: Vec<Ident> = (0..columns.len())
        .map(|i| format_ident!("__c{}", i))
        .collect();
    let map_idents: Vec<&Ident> = maps.iter().map(|f| f.ident).collect();
    let map_types: Vec<&syn::Type> = maps.iter().map(|f| f.ty).collect();
    let map_names: Vec<LitStr> = maps.iter().map(|f| lit(&f.name)).collect();
    let map_vars: Vec<Ident> = (0..maps.len()).map(|i| format_ident!("__m{}", i)).collect();

    let inits = e.fields.iter().map(|f| {
        let id = f.ident;
        match f.role {
            Role::Pk => {
                let i = pks.iter().position(|p| p.ident == f.ident).unwrap_or(0);
                let v = &pk_vars[i];
                quote!(#id: #re::core::clone::Clone::clone(#v))
            }
            Role::Column { .. } => {
                let i = columns.iter().position(|c| c.ident == f.ident).unwrap_or(0);
                let v = &col_vars[i];
                quote!(#id: #v)
            }
            Role::Map => {
                let i = maps.iter().position(|c| c.ident == f.ident).unwrap_or(0);
                let v = &map_vars[i];
                quote!(#id: #v)
            }
            Role::Skip => quote!(#id: #re::core::default::Default::default()),
        }
    });

    let col_consts = columns.iter().enumerate().map(|(i, f)| {
        let name = screaming(f.ident);
        let ty = f.ty;
        let codec = &codecs[i];
        let stored = lit(&f.name);
        let doc = format!(
            "Handle of the `{}` field (stored as `{}`).",
            f.ident, f.name
        );
        let inner = types::option_inner(ty).unwrap_or(ty);
        let kind = match (f.attrs.index.as_ref().map(|i| i.value), f.role) {
            (None, _) => quote!(#re::NoIndex),
            (
                Some(_),
                Role::Column {
                    codec: Codec::TagList,
                    ..
                },
            ) => {
                let elem = types::element(ty).unwrap_or(ty);
                quote!(#re::Tags<#elem>)
            }
            (Some(IndexKind::Unique), _) => quote!(#re::Unique<#inner>),
            (Some(IndexKind::Prefix), _) => quote!(#re::Prefix<#inner>),
            (Some(IndexKind::Sorted), _) => quote!(#re::Sorted<#inner>),
            (Some(_), _) => quote!(#re::Equality<#inner>),
        };
        quote! {
            #[doc = #doc]
            #vis const #name: #re::Field<#ident, #ty, #codec, #kind> = #re::Field::new(#stored, #i);
        }
    });
    let map_consts = maps.iter().enumerate().map(|(i, f)| {
        let name = screaming(f.ident);
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
    });
    let key_doc = format!(
        "The entity key for `pk`, without namespace: `{}`.",
        key.pattern
    );

    quote! {
        const _: () = {
            #pk_value_fn

            impl #re::Entity for #ident {
                type Pk = #pk_type;

                const DESC: &'static #re::EntityDesc = &#re::EntityDesc {
                    type_name: #type_name,
                    prefix: #prefix,
                    layout: #layout,
                    key_pattern: #key_pattern,
                    key_head: #key_head,
                    key_tail: #key_tail,
                    pk_fields: &[#(#pk_names),*],
                    numeric_pk: #numeric_pk,
                    columns: &[#(#column_descs),*],
                    maps: &[#(#map_descs),*],
                    indexes: &[#(#index_descs),*],
                    version: #version,
                    pk_index_value: __pk_index_value,
                    ttl: #ttl,
                };

                fn write_member(pk: &Self::Pk, out: &mut #re::String) {
                    #bind_pk
                    #member_body
                }

                fn write_own_member(&self, out: &mut #re::String) {
                    #bind_own
                    #member_body
                }

                fn read_member(member: &str) -> #re::core::option::Option<Self::Pk> {
                    #read_member
                }

                fn to_row(&self) -> #re::Result<#re::Row> {
                    #re::core::result::Result::Ok(#re::Row {
                        columns: #re::Vec::from([
                            #(<#codecs as #re::FieldCodec<#col_types>>::encode(#col_names, &self.#col_idents)?),*
                        ]),
                        maps: #re::Vec::from([
                            #(#re::MapField::encode_entries(&self.#map_idents)),*
                        ]),
                    })
                }

                fn from_row(pk: &Self::Pk, row: #re::Row) -> #re::core::result::Result<Self, #re::FieldError> {
                    let mut __cols = row.columns.into_iter();
                    let mut __maps = row.maps.into_iter();
                    #(
                        let #col_vars = <#codecs as #re::FieldCodec<#col_types>>::decode(
                            #col_names,
                            #re::take(&mut __cols).as_deref(),
                        )?;
                    )*
                    #(
                        let #map_vars = #re::decode_map::<#map_types>(
                            #map_names,
                            __maps.next().unwrap_or_default(),
                        )?;
                    )*
                    #bind_pk
                    #re::core::result::Result::Ok(#ident { #(#inits),* })
                }
            }
        };

        #[allow(dead_code)]
        impl #ident {
            #(#pk_consts)*
            #(#col_consts)*
            #(#map_consts)*

            #[doc = #key_doc]
            #vis fn key(pk: &<Self as #re::Entity>::Pk) -> #re::String {
                <Self as #re::Entity>::entity_key(pk)
            }

            /// Every key family of this entity with its Redis type.
            #vis fn layout() -> #re::EntityLayout {
                #re::EntityLayout::of(<Self as #re::Entity>::DESC)
            }
        }
    }
}

fn unreachable_codec() -> TokenStream {
    // Only columns reach codec selection; keep the macro panic-free anyway.
    quote!(())
}
