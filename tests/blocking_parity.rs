//! The blocking API has every method of the async one: a twin with the same
//! name for each public method of the store and of each feature handle.
//!
//! The async side is read from the sources of `redis-entity/src/store` (and
//! the connect functions beside it), the blocking side from
//! `redis-entity/src/blocking` (the store, and `Handle<'s, H, C>` per async
//! handle `H`), where most methods are entries of a `blocking!` list: a method added to a handle without its blocking twin
//! fails this test, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::{ImplItem, Item, Type, Visibility};

/// The types whose public methods must have blocking twins.
const TYPES: &[&str] = &[
    "Store",
    "Update",
    "Query",
    "Scan",
    "Leaderboard",
    "Rotating",
    "Relations",
    "Timelines",
    "Maintenance",
    "Expiry",
    "Keys",
    "Transaction",
    "Schema",
    "StoreBuilder",
];

/// Builders generic over the store they run on (`Query<'s, E, S>`): their
/// building methods are one impl shared by both stores, so only the impls
/// for a concrete store (`Query<'s, E, Store<C>>`: the calls that run them)
/// are compared.
const BUILDERS: &[&str] = &["Query", "Update", "Transaction"];

/// Methods of the async side that have no twin by design, with the reason.
const ASYNC_ONLY: &[(&str, &str, &str)] = &[
    (
        "Store",
        "new",
        "a blocking store is made from an async one by `from_async`",
    ),
    (
        "Scan",
        "stop",
        "the blocking walk stops itself after a failed page",
    ),
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The name of an impl's self type (`Store` for `impl<C> Store<C>`; the
/// async handle a blocking `Handle<'s, Relations<..>, C>` wraps), and
/// whether a `Store` is among its type arguments (`Query<'s, E, Store<C>>`).
fn self_type(ty: &Type) -> Option<(String, bool)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident == "Handle" {
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        let wrapped = args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })?;
        return self_type(wrapped);
    }
    let on_store = match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().any(|a| {
            matches!(a, syn::GenericArgument::Type(Type::Path(t))
                if t.path.segments.last().is_some_and(|s| s.ident == "Store"))
        }),
        _ => false,
    };
    Some((last.ident.to_string(), on_store))
}

/// The names a `blocking! { "path"; name[..](..) -> ..; .. }` list
/// declares (each identifier directly followed by a bracket group), or a
/// `settings! { name(..); .. }` list (each identifier directly followed by
/// a parenthesis group).
fn listed(tokens: proc_macro2::TokenStream, opens: proc_macro2::Delimiter) -> Vec<String> {
    let tokens: Vec<_> = tokens.into_iter().collect();
    tokens
        .windows(2)
        .filter_map(|w| match (&w[0], &w[1]) {
            (proc_macro2::TokenTree::Ident(name), proc_macro2::TokenTree::Group(g))
                if g.delimiter() == opens =>
            {
                Some(name.to_string())
            }
            _ => None,
        })
        .collect()
}

/// Public methods per self type in the sources under `dirs`.
fn methods(files: &[std::path::PathBuf]) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for item in parsed.items {
            let Item::Impl(imp) = item else { continue };
            if imp.trait_.is_some() {
                continue;
            }
            let Some((ty, on_store)) = self_type(&imp.self_ty) else {
                continue;
            };
            if !TYPES.contains(&ty.as_str()) || (BUILDERS.contains(&ty.as_str()) && !on_store) {
                continue;
            }
            let names = found.entry(ty).or_default();
            for item in imp.items {
                match item {
                    ImplItem::Fn(f) if matches!(f.vis, Visibility::Public(_)) => {
                        names.insert(f.sig.ident.to_string());
                    }
                    ImplItem::Macro(m) if m.mac.path.is_ident("blocking") => {
                        names.extend(listed(m.mac.tokens, proc_macro2::Delimiter::Bracket));
                    }
                    ImplItem::Macro(m) if m.mac.path.is_ident("settings") => {
                        names.extend(listed(m.mac.tokens, proc_macro2::Delimiter::Parenthesis));
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

#[test]
fn every_async_method_has_a_blocking_twin() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("redis-entity/src");
    let mut async_files = Vec::new();
    sources(&root.join("store"), &mut async_files);
    async_files.push(root.join("any.rs"));
    let mut blocking_files = Vec::new();
    sources(&root.join("blocking"), &mut blocking_files);
    let asynchronous = methods(&async_files);
    let blocking = methods(&blocking_files);

    // The test reads what it should: every handle and the store's core.
    for ty in TYPES {
        assert!(asynchronous.contains_key(*ty), "no async `{ty}` found");
        assert!(blocking.contains_key(*ty), "no blocking `{ty}` found");
    }
    assert!(asynchronous["Store"].contains("save"));
    assert!(blocking["Relations"].contains("relate"));
    assert!(blocking["StoreBuilder"].contains("namespace"));

    let mut missing = Vec::new();
    for (ty, names) in &asynchronous {
        for name in names {
            let exempt = ASYNC_ONLY.iter().any(|(t, n, _)| t == ty && n == name);
            if !exempt && !blocking[ty].contains(name) {
                missing.push(format!("{ty}::{name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "async methods without a blocking twin (add them to the `blocking!` list of the type \
         in redis-entity/src/blocking, or to ASYNC_ONLY with the reason): {missing:?}"
    );
}
