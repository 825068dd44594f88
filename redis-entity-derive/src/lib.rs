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
    expand::derive(input).unwrap_or_else(|failed| {
        let mut tokens = failed.errors.to_compile_error();
        tokens.extend(failed.stub);
        tokens
    })
}
