//! What the derive emits next to its errors, as thiserror-impl's
//! `fallback.rs` and clap_derive's `dummies.rs` do: an `impl Entity` whose
//! bodies are never run, and the field handles, `key()` and `layout()` built
//! from the model as far as it got. Code that uses `User::EMAIL` or
//! `store.get::<User>(..)` then still type-checks, so one bad attribute is
//! one error rather than one per use.

use crate::expand::{inherent_impl, pk_type, private};
use crate::model::Entity;
use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub fn stub(input: &DeriveInput, entity: Option<&Entity>) -> TokenStream {
    // A generic type cannot be an entity, and a stub impl for it would fail
    // on the `'static` bound: its error is enough.
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let re = match entity {
        Some(e) => private(e),
        None => quote!(::redis_entity::__private),
    };
    let impl_entity = impl_entity(input, entity, &re);
    let inherent = entity.map(|e| inherent_impl(e, &re));
    quote! {
        const _: () = {
            #impl_entity
        };

        #inherent
    }
}

/// `Entity` with the model's pk type (`()` when there is no pk: that error
/// is reported) and bodies that never run: the program does not compile.
/// `DESC` is a real (empty) description, not `unimplemented!()`: a constant
/// is evaluated at compile time, where a panic is one more error.
fn impl_entity(input: &DeriveInput, entity: Option<&Entity>, re: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let pk_type = match entity {
        Some(e) if e.pks().next().is_some() => pk_type(e),
        _ => quote!(()),
    };
    let never = quote!(#re::core::unimplemented!());
    quote! {
        impl #re::Derived for #ident {}

        impl #re::Entity for #ident {
            type Pk = #pk_type;

            const DESC: &'static #re::EntityDesc = #re::STUB_DESC;

            const SCHEMA: u64 = 0;

            fn write_member(_: &Self::Pk, _: &mut #re::String) {
                #never
            }

            fn write_own_member(&self, _: &mut #re::String) {
                #never
            }

            fn read_member(_: &str) -> #re::core::option::Option<Self::Pk> {
                #never
            }

            fn to_row(&self) -> #re::Result<#re::Row> {
                #never
            }

            fn from_row(_: &Self::Pk, _: #re::Row) -> #re::core::result::Result<Self, #re::FieldError> {
                #never
            }
        }
    }
}
