//! Typed field handles: `User::EMAIL`, `User::SETTINGS`.
//!
//! The derive emits one handle per stored field as an associated const. A
//! handle carries the entity type, the value type and the codec, so
//! `update().set(User::EMAIL, 5)` or `set(Book::TITLE, ..)` on a `User` update
//! does not compile.
//!
//! It also carries a marker type named after the field (`N`), which the
//! derive defines where rustc prints it as `User::email`: the traits below
//! take it as a parameter so that a query or update the field cannot serve
//! fails with an error naming the field and the attribute it lacks.

use crate::error::Result;
use crate::schema::codec::{to_bytes, Counter, FieldCodec, MapField};
use crate::schema::condition::{Cmp, Condition, Test};
use crate::schema::entity::Entity;
use crate::schema::update_op::UpdateOp;
use std::marker::PhantomData;
use std::ops::RangeBounds;

/// The index-kind and update traits describe what the runtime can do with
/// a field; only this crate implements them.
mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoIndex {}
    impl<X> Sealed for super::Equality<X> {}
    impl<X> Sealed for super::Unique<X> {}
    impl<X> Sealed for super::Tags<X> {}
    impl<X> Sealed for super::Prefix<X> {}
    impl<X> Sealed for super::Sorted<X> {}
    impl<E, T, C, K, N> Sealed for super::Field<E, T, C, K, N> {}
    impl<E, M> Sealed for super::HashField<E, M> {}
}

/// Ties a handle to its types without owning them (`fn() -> _` keeps the
/// handle `Send`, `Sync` and `Copy` whatever the types are).
type Marker<T> = PhantomData<fn() -> T>;

/// Index kind marker: the field has no index.
#[derive(Debug, Clone, Copy)]
pub struct NoIndex;
/// Index kind marker: `#[index]` on a scalar; `X` is the indexed value type.
#[derive(Debug, Clone, Copy)]
pub struct Equality<X>(PhantomData<fn() -> X>);
/// Index kind marker: `#[index(unique)]`; `X` is the indexed value type.
#[derive(Debug, Clone, Copy)]
pub struct Unique<X>(PhantomData<fn() -> X>);
/// Index kind marker: `#[index]` on a collection (a tag relation); `X` is the element type.
#[derive(Debug, Clone, Copy)]
pub struct Tags<X>(PhantomData<fn() -> X>);

/// Index kind marker: `#[index(prefix)]`; `X` is the indexed text type.
#[derive(Debug, Clone, Copy)]
pub struct Prefix<X>(PhantomData<fn() -> X>);

/// Index kind marker: `#[index(sorted)]`; `X` is the scored type.
#[derive(Debug, Clone, Copy)]
pub struct Sorted<X>(PhantomData<fn() -> X>);

/// Index kinds that answer ranges, ordering, `top` and `rank`; `N` is the
/// field's marker, which the error names.
#[diagnostic::on_unimplemented(
    message = "field `{N}` has no `#[index(sorted)]`: add it to query it with `range`, `order_asc`, `order_desc`, `top` or `rank`",
    label = "ranges, ordering, `top` and `rank` read a sorted index"
)]
pub trait SortedIndex<N = ()>: sealed::Sealed {
    /// The scored value type.
    type Value: crate::schema::codec::SortScore;
}
impl<X: crate::schema::codec::SortScore, N> SortedIndex<N> for Sorted<X> {
    type Value = X;
}
impl<X, N> AllowsIncr<N> for Sorted<X> {}

/// The index kind `find_unique` reads: `#[index(unique)]`.
#[diagnostic::on_unimplemented(
    message = "field `{N}` has no `#[index(unique)]`: add it to query it with `find_unique`",
    label = "`find_unique` reads a unique index; a field with `#[index]` is read with `find`"
)]
pub trait UniqueIndex<N = ()>: sealed::Sealed {
    /// The indexed value type.
    type Value: crate::schema::codec::Scalar;
}
impl<X: crate::schema::codec::Scalar, N> UniqueIndex<N> for Unique<X> {
    type Value = X;
}

/// Index kinds that answer "starts with" (`query().prefix(..)`), which
/// also answer equality.
#[diagnostic::on_unimplemented(
    message = "field `{N}` has no `#[index(prefix)]`: add it to query it with `prefix`",
    label = "`prefix` reads a prefix index"
)]
pub trait PrefixIndex<N = ()>: SetIndex<N> {}
impl<X: crate::schema::codec::Scalar, N> PrefixIndex<N> for Prefix<X> {}

/// Index kinds whose entries are sets of members, which `find`, `eq`,
/// `all`, `any` and `none` read.
#[diagnostic::on_unimplemented(
    message = "field `{N}` has no `#[index]`: add it to query it with `find`, `eq`, `all`, `any` or `none`",
    label = "these queries read an equality index or a tag relation"
)]
pub trait SetIndex<N = ()>: sealed::Sealed {
    /// The value (or element) type a condition compares with.
    type Value: crate::schema::codec::Scalar;
}
impl<X: crate::schema::codec::Scalar, N> SetIndex<N> for Equality<X> {
    type Value = X;
}
impl<X: crate::schema::codec::Scalar, N> SetIndex<N> for Tags<X> {
    type Value = X;
}
/// A prefix index also answers equality (an exact lexicographic range).
impl<X: crate::schema::codec::Scalar, N> SetIndex<N> for Prefix<X> {
    type Value = X;
}
/// A unique field is not a set of members: the error says to read it with
/// `find_unique` (the bound on `N` never holds).
impl<X: crate::schema::codec::Scalar, N: unqueried::ReadWithFindUnique> SetIndex<N> for Unique<X> {
    type Value = X;
}
/// A sorted field is read by score: the error says which queries read it.
impl<X: crate::schema::codec::Scalar, N: unqueried::ReadByScore> SetIndex<N> for Sorted<X> {
    type Value = X;
}

/// Bounds no field marker meets: they turn a query on an index of the
/// wrong kind into an error that says which queries the field's index
/// answers instead.
mod unqueried {
    #[diagnostic::on_unimplemented(
        message = "field `{Self}` has `#[index(unique)]`: read it with `find_unique`",
        label = "a unique index holds one owner per value, not a set to query with `find`, `eq`, `all`, `any` or `none`"
    )]
    pub trait ReadWithFindUnique {}

    #[diagnostic::on_unimplemented(
        message = "field `{Self}` has `#[index(sorted)]`: query it with `range`, `order_asc`, `order_desc`, `top` or `rank`",
        label = "a sorted index is read by score, not with `find`, `eq`, `all`, `any` or `none`"
    )]
    pub trait ReadByScore {}
}

/// Index kinds that allow `incr` (a unique value must be checked before it
/// is written, and an increment computes it in Redis).
#[diagnostic::on_unimplemented(
    message = "field `{N}` has `#[index(unique)]`: it cannot be incremented in place",
    label = "its new value must be checked for uniqueness before it is written; use `set`"
)]
pub trait AllowsIncr<N = ()>: sealed::Sealed {}
impl<N> AllowsIncr<N> for NoIndex {}
impl<X, N> AllowsIncr<N> for Equality<X> {}

/// The bounds of a range on sorted field `N`: values of its type `V`.
#[diagnostic::on_unimplemented(
    message = "field `{N}` holds `{V}` values: a range on it takes `{V}` bounds, not `{Self}`",
    label = "expected a range of `{V}` (`a..b`, `a..=b`, `a..`, `..b` or `..`)"
)]
pub trait RangeOf<V, N = ()>: RangeBounds<V> {}
#[diagnostic::do_not_recommend]
impl<R: RangeBounds<V>, V, N> RangeOf<V, N> for R {}

/// The marker type of field number `I` (in declaration order) of an entity.
/// The derive defines it, named after the field, where rustc prints it as
/// `User::email`, and implements this trait on the entity to name it in the
/// handle's type, so that the errors of the traits above name the field.
pub trait FieldMarker<const I: usize> {
    /// The marker: a unit struct named after the field.
    type Marker;
}

/// A stored column of entity `E` holding a `T`, encoded by codec `C`, with
/// index kind `K`; `N` is the marker type named after the field, which
/// compile errors about the handle name. The derive makes one per field
/// (`User::EMAIL`), and its index kind decides which calls take it:
///
/// | attribute | index kind | takes |
/// | --- | --- | --- |
/// | none | `NoIndex` | `update().set`, `incr` (numbers) |
/// | `#[index]` | `Equality` | `find`, `query().eq / all / any / none`, `set`, `incr` |
/// | `#[index]` on a collection | `Tags` | `find` of one tag, `query().all / any / none` |
/// | `#[index(unique)]` | `Unique` | `find_unique`, `set` (checked for uniqueness); not `incr` |
/// | `#[index(sorted)]` | `Sorted` | `query().range / order_asc / order_desc`, `store.board(..)`, `set`, `incr` |
/// | `#[index(prefix)]` | `Prefix` | `query().prefix`, `find`, `query().eq`, `set` |
///
/// A call the field's kind does not take does not compile, and the error
/// names the field and the attribute to add (``field `User::email` has no
/// `#[index]`: add it to query it with `find`, ...``). The kinds and the
/// traits behind these bounds (`SetIndex`, `SortedIndex`, ...) are the
/// crate's own, so they are not listed in the documentation's index.
pub struct Field<E, T, C, K = NoIndex, N = ()> {
    name: &'static str,
    col: usize,
    _p: Marker<(E, T, C, K, N)>,
}

impl<E, T, C, K, N> Field<E, T, C, K, N> {
    #[doc(hidden)]
    pub const fn new(name: &'static str, col: usize) -> Self {
        Field {
            name,
            col,
            _p: PhantomData,
        }
    }

    /// The field's name in Redis.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The column's position in the entity's description.
    pub const fn column(&self) -> usize {
        self.col
    }
}

/// Conditions on the stored value of this field, for conditional writes
/// ([`Update::when`](crate::Update::when), [`Store::delete_if`](crate::Store::delete_if)).
impl<E, T, C: Writable<T, N>, K, N> Field<E, T, C, K, N> {
    /// The stored value is `value` (`None` on an `Option` field: nothing
    /// is stored).
    ///
    /// ```
    /// # use redis_entity::RedisEntity;
    /// # #[derive(RedisEntity)] struct Packet { #[pk] id: u64, status: u8 }
    /// let claimable = Packet::STATUS.is(0);
    /// ```
    pub fn is(self, value: impl Into<T>) -> Condition<E> {
        let test = C::encode(self.name, &value.into()).map(Test::Is);
        Condition::new(self.col, self.name, test)
    }

    /// The stored value is not `value`.
    pub fn is_not(self, value: impl Into<T>) -> Condition<E> {
        let test = C::encode(self.name, &value.into()).map(Test::IsNot);
        Condition::new(self.col, self.name, test)
    }
}

/// Comparisons of a numeric field's stored value; nothing stored, or
/// something that is not a number, fails them.
impl<E, T: Incrementable, C: Writable<T, N>, K, N> Field<E, T, C, K, N> {
    fn compare(self, cmp: Cmp, bound: T::Delta) -> Condition<E> {
        let test = Ok(Test::Compare {
            cmp,
            bound: to_bytes(&bound),
            delta: None,
        });
        Condition::new(self.col, self.name, test)
    }

    /// The stored number is at least `bound`.
    ///
    /// ```
    /// # use redis_entity::RedisEntity;
    /// # #[derive(RedisEntity)] struct Item { #[pk] id: u64, stock: u32 }
    /// let in_stock = Item::STOCK.at_least(1);
    /// ```
    pub fn at_least(self, bound: T::Delta) -> Condition<E> {
        self.compare(Cmp::AtLeast, bound)
    }

    /// The stored number is at most `bound`.
    pub fn at_most(self, bound: T::Delta) -> Condition<E> {
        self.compare(Cmp::AtMost, bound)
    }

    /// The stored number is greater than `bound`.
    pub fn above(self, bound: T::Delta) -> Condition<E> {
        self.compare(Cmp::Above, bound)
    }

    /// The stored number is less than `bound`.
    pub fn below(self, bound: T::Delta) -> Condition<E> {
        self.compare(Cmp::Below, bound)
    }

    /// The increment by `delta` keeps the stored number within `range`
    /// (nothing stored counts as 0): the conditions a bounded increment
    /// ([`Update::incr_within`](crate::Update::incr_within)) adds.
    pub(crate) fn within(
        self,
        delta: &T::Delta,
        range: impl std::ops::RangeBounds<T::Delta>,
    ) -> Vec<Condition<E>> {
        use std::ops::Bound::*;
        let bounded = |cmp, bound: &T::Delta| {
            let test = Ok(Test::Compare {
                cmp,
                bound: to_bytes(bound),
                delta: Some(to_bytes(delta)),
            });
            Condition::new(self.col, self.name, test)
        };
        let mut out = Vec::new();
        match range.start_bound() {
            Included(lo) => out.push(bounded(Cmp::AtLeast, lo)),
            Excluded(lo) => out.push(bounded(Cmp::Above, lo)),
            Unbounded => {}
        }
        match range.end_bound() {
            Included(hi) => out.push(bounded(Cmp::AtMost, hi)),
            Excluded(hi) => out.push(bounded(Cmp::Below, hi)),
            Unbounded => {}
        }
        out
    }
}

impl<E, T, C, K, N> Clone for Field<E, T, C, K, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, T, C, K, N> Copy for Field<E, T, C, K, N> {}

impl<E, T, C, K, N> std::fmt::Debug for Field<E, T, C, K, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Field({})", self.name)
    }
}

/// Index kinds whose key names a value (`<prefix>:<field>:<value>`).
pub trait ValueKeyed: sealed::Sealed {
    /// The indexed value type.
    type Value: crate::schema::codec::Scalar;
}
impl<X: crate::schema::codec::Scalar> ValueKeyed for Equality<X> {
    type Value = X;
}
impl<X: crate::schema::codec::Scalar> ValueKeyed for Unique<X> {
    type Value = X;
}
impl<X: crate::schema::codec::Scalar> ValueKeyed for Tags<X> {
    type Value = X;
}

/// A `#[hash]` field of entity `E`: a map `M` kept in its own Redis hash.
pub struct HashField<E, M> {
    name: &'static str,
    map: usize,
    _p: Marker<(E, M)>,
}

impl<E, M> HashField<E, M> {
    #[doc(hidden)]
    pub const fn new(name: &'static str, map: usize) -> Self {
        HashField {
            name,
            map,
            _p: PhantomData,
        }
    }

    /// The field's name, which is also the suffix of its hash key.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The map's position in the entity's description.
    pub const fn map(&self) -> usize {
        self.map
    }
}

impl<E, M> Clone for HashField<E, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, M> Copy for HashField<E, M> {}

impl<E, M> std::fmt::Debug for HashField<E, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HashField({})", self.name)
    }
}

/// A field that `update().set(..)` can assign.
#[diagnostic::on_unimplemented(
    message = "`set` on an update of `{E}` takes a handle of a field of `{E}`",
    label = "not a field of `{E}`"
)]
pub trait Assign<E: Entity>: sealed::Sealed {
    /// The value type.
    type Value;
    /// The update operation storing `value` (the runtime's own business).
    #[doc(hidden)]
    fn assign(&self, value: &Self::Value) -> Result<UpdateOp>;
}

impl<E: Entity, T, C: Writable<T, N>, K, N> Assign<E> for Field<E, T, C, K, N> {
    type Value = T;
    fn assign(&self, value: &T) -> Result<UpdateOp> {
        Ok(UpdateOp::Set {
            col: self.col,
            value: C::encode(self.name, value)?,
        })
    }
}

/// `set` on a `#[hash]` field replaces the whole map.
impl<E: Entity, M: MapField> Assign<E> for HashField<E, M> {
    type Value = M;
    fn assign(&self, value: &M) -> Result<UpdateOp> {
        Ok(UpdateOp::MapReplace {
            map: self.map,
            entries: value.encode_entries(),
        })
    }
}

/// The codec of a stored field: every codec but the one of pk fields, which
/// are part of the key and never written, so `update()` cannot change them.
/// `N` is the field's marker, which the error names.
#[diagnostic::on_unimplemented(
    message = "field `{N}` is part of the entity's key: `update()` cannot change it",
    label = "a pk field is never written: `set` and `incr` take stored fields"
)]
pub trait Writable<T, N = ()>: FieldCodec<T> {}
/// Not recommended: the error is about the pk field, not about the codec
/// trait its codec lacks.
#[diagnostic::do_not_recommend]
impl<T, N, C: FieldCodec<T>> Writable<T, N> for C {}

/// A field type that can be incremented in place: a number, or an
/// `Option` of one (Redis treats a missing field as 0).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be incremented in place",
    label = "`incr` needs a numeric field"
)]
pub trait Incrementable: sealed::Sealed {
    /// The number type of the delta.
    type Delta: Counter;
}

macro_rules! incrementable {
    ($($t:ty),*) => {$(
        impl Incrementable for $t { type Delta = $t; }
        impl Incrementable for Option<$t> { type Delta = $t; }
        impl sealed::Sealed for $t {}
        impl sealed::Sealed for Option<$t> {}
    )*};
}
incrementable!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);

impl<E, T: Incrementable, C, K: AllowsIncr<N>, N> Field<E, T, C, K, N> {
    /// The update operation adding `delta`.
    pub(crate) fn incr_op(&self, delta: T::Delta) -> UpdateOp {
        UpdateOp::Incr {
            col: self.col,
            delta: to_bytes(&delta),
            float: <T::Delta as Counter>::FLOAT,
        }
    }
}
