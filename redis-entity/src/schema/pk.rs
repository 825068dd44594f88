//! What a call accepts where it needs a primary key.
//!
//! Every call that names one entity takes `impl IntoPk<E::Pk>` rather than
//! `&E::Pk`, so the pk can be passed the way it is at hand: owned (`9`,
//! `sku`), borrowed (`&9`, `&sku`), as a `&str` for a `String` pk
//! (`get::<Product>("SKU-1")`), or, for a composite pk, as a tuple of any of
//! those (`(7, "EU")` for `(u64, String)`).
//!
//! ```
//! use redis_entity::IntoPk;
//!
//! fn pk_of<P, K: IntoPk<P>>(k: K) -> P {
//!     k.into_pk()
//! }
//! let sku: String = pk_of("SKU-1");
//! let id: u64 = pk_of(&9);
//! let composite: (u64, String) = pk_of((7, "EU"));
//! assert_eq!((sku.as_str(), id, composite), ("SKU-1", 9, (7, "EU".to_string())));
//! ```

use crate::schema::codec::Scalar;

/// A value that names a primary key of type `P`: the pk by value (`9`) or
/// by reference (`&id`), a `&str` for a `String` pk, and for a composite pk
/// a tuple of its parts in any of those forms (`(7, "EU")`). Every call that
/// names one entity takes `impl IntoPk<E::Pk>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a primary key of type `{P}`",
    label = "expected the pk (`{P}`), a reference to it, or its parts",
    note = "pass the pk by value or by reference; a `&str` is accepted for a `String` pk and a tuple of parts for a composite pk"
)]
pub trait IntoPk<P> {
    /// The owned pk.
    fn into_pk(self) -> P;
}

/// A single-field pk by value.
impl<T: Scalar> IntoPk<T> for T {
    fn into_pk(self) -> T {
        self
    }
}

/// Any pk by reference (also composite ones: `&(7, "EU".to_string())`).
impl<T: Clone> IntoPk<T> for &T {
    fn into_pk(self) -> T {
        self.clone()
    }
}

/// A `String` pk from a string slice.
impl IntoPk<String> for &str {
    fn into_pk(self) -> String {
        self.to_owned()
    }
}

/// A composite pk from its parts, each in any accepted form.
macro_rules! tuple_pk {
    ($(($($part:ident $pk:ident $i:tt),+))+) => {$(
        impl<$($part: IntoPk<$pk>, $pk),+> IntoPk<($($pk,)+)> for ($($part,)+) {
            fn into_pk(self) -> ($($pk,)+) {
                ($(self.$i.into_pk(),)+)
            }
        }
    )+};
}

tuple_pk! {
    (A0 P0 0, A1 P1 1)
    (A0 P0 0, A1 P1 1, A2 P2 2)
    (A0 P0 0, A1 P1 1, A2 P2 2, A3 P3 3)
    (A0 P0 0, A1 P1 1, A2 P2 2, A3 P3 3, A4 P4 4)
    (A0 P0 0, A1 P1 1, A2 P2 2, A3 P3 3, A4 P4 4, A5 P5 5)
    (A0 P0 0, A1 P1 1, A2 P2 2, A3 P3 3, A4 P4 4, A5 P5 5, A6 P6 6)
    (A0 P0 0, A1 P1 1, A2 P2 2, A3 P3 3, A4 P4 4, A5 P5 5, A6 P6 6, A7 P7 7)
}
