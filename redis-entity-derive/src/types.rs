//! Syntactic classification of field types. A derive sees tokens, not types,
//! so these look at the last path segment (`Option`, `BTreeMap`...), the way
//! serde_derive recognises `Option` for `skip_serializing_if` defaults.

use syn::{GenericArgument, PathArguments, Type};

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

fn generic_args(ty: &Type) -> Vec<&Type> {
    match last_segment(ty).map(|s| &s.arguments) {
        Some(PathArguments::AngleBracketed(a)) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_named(ty: &Type, names: &[&str]) -> bool {
    last_segment(ty).is_some_and(|s| names.iter().any(|n| s.ident == n))
}

/// `Option<T>` → `Some(T)`.
pub fn option_inner(ty: &Type) -> Option<&Type> {
    if is_named(ty, &["Option"]) {
        generic_args(ty).first().copied()
    } else {
        None
    }
}

/// `BTreeMap<K, V>` / `HashMap<K, V>`.
pub fn is_map(ty: &Type) -> bool {
    is_named(ty, &["BTreeMap", "HashMap"]) && generic_args(ty).len() >= 2
}

/// `Vec<T>` (but not `Vec<u8>`, which is bytes), `BTreeSet<T>`, `HashSet<T>`.
pub fn is_collection(ty: &Type) -> bool {
    if is_named(ty, &["BTreeSet", "HashSet"]) {
        return true;
    }
    is_named(ty, &["Vec"])
        && !generic_args(ty)
            .first()
            .is_some_and(|t| is_named(t, &["u8"]))
}

/// The element type of a collection.
pub fn element(ty: &Type) -> Option<&Type> {
    if is_collection(ty) {
        generic_args(ty).first().copied()
    } else {
        None
    }
}

/// Integer types (the ones `#[version]` and sorted indexes accept).
pub fn is_integer(ty: &Type) -> bool {
    is_named(
        ty,
        &[
            "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
        ],
    ) && generic_args(ty).is_empty()
}

/// `f32` / `f64`.
pub fn is_float(ty: &Type) -> bool {
    is_named(ty, &["f32", "f64"])
}

/// Timestamp types that sort by time (behind the runtime's `chrono` feature).
pub fn is_timestamp(ty: &Type) -> bool {
    is_named(
        ty,
        &["DateTime", "NaiveDateTime", "NaiveDate", "OffsetDateTime"],
    )
}

/// `String` / `str` / `Cow<str>`.
pub fn is_text(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_text(&r.elem),
        _ => is_named(ty, &["String", "str"]),
    }
}

/// The type as compact text for layout listings: `BTreeMap<String, String>`.
pub fn display(ty: &Type) -> String {
    let s = quote::quote!(#ty).to_string();
    s.replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace("& ", "&")
}
