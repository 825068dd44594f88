//! `#[derive(RedisEntity)]` for redis-entity. Use it through the `redis-entity`
//! crate (`use redis_entity::RedisEntity;`), which re-exports it.
//!
//! The macro works in four steps, one module each: attributes are parsed
//! (`attr`) into an entity model (`model`), the model's layout rules are
//! checked (`check`), and code is generated from the model (`expand`).
//! Every error found on the way is collected (`ctxt`) and reported together.

mod attr;
mod check;
mod ctxt;
mod expand;
mod model;
mod template;
mod types;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Derives `redis_entity::Entity`, the field handles (`User::EMAIL`), the key
/// builder (`User::key(&pk)`) and the layout description (`User::layout()`).
#[proc_macro_derive(RedisEntity, attributes(redis, pk, index, hash, version))]
pub fn derive_redis_entity(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}
