//! Error collection, as in serde_derive: every check records its error and
//! goes on, so the user sees all problems of an entity in one compile.

use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;

#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// Records an error spanning `tokens`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, msg: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// Records a parse error as it is.
    pub fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// All errors combined into one, if any.
    pub fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}
