//! `#[derive(RedisEntity)]` for redis-entity. Use it through the `redis-entity`
//! crate (`use redis_entity::RedisEntity;`), which re-exports it.
//!
//! The macro works in steps, one module each: attributes are parsed (`attr`)
//! into an entity model (`model`) where every decision is taken once, the
//! model's layout rules are checked (`check`), and code is generated from the
//! model (`expand`). Every error found on the way is collected (`ctxt`) and
//! reported together, next to a stub (`fallback`) that keeps the rest of the
//! user's code compiling.

mod attr;
mod check;
mod ctxt;
mod expand;
mod fallback;
mod model;
mod template;
mod types;

#[cfg(test)]
mod tests;

/// Derives `redis_entity::Entity`, the field handles (`User::EMAIL`), the key
/// builder (`User::key(&pk)`) and the layout description (`User::layout()`).
#[proc_macro_derive(RedisEntity, attributes(redis, pk, index, hash, version))]
pub fn derive_redis_entity(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    derive(&input).into()
}

/// The expansion, or every error as `compile_error!` plus the stub.
fn derive(input: &syn::DeriveInput) -> proc_macro2::TokenStream {
    checked_expansion(input).unwrap_or_else(|failed| {
        let mut tokens = failed.errors.to_compile_error();
        tokens.extend(failed.stub);
        tokens
    })
}

/// The errors of an entity that does not derive, and the stub emitted in
/// its place so that they are the only errors the user sees.
struct Failed {
    errors: syn::Error,
    stub: proc_macro2::TokenStream,
}

/// Parses attributes into the model, checks it, and expands it.
fn checked_expansion(input: &syn::DeriveInput) -> Result<proc_macro2::TokenStream, Failed> {
    let cx = ctxt::Ctxt::default();
    let entity = model::build(&cx, input);
    if let Some(e) = &entity {
        check::check(e, &cx);
    }
    match (cx.check(), entity) {
        (Ok(()), Some(e)) => Ok(expand::expand(&e)),
        (Err(errors), entity) => Err(Failed {
            errors,
            stub: fallback::stub(input, entity.as_ref()),
        }),
        // `build` records why it gives up, so this is not reached.
        (Ok(()), None) => Ok(proc_macro2::TokenStream::new()),
    }
}
