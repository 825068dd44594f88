//! Conditions on stored values: what a conditional write requires of the
//! entity as it is stored, checked inside the same atomic write, before its
//! first change. Made by the field handles (`Packet::STATUS.is(0)`,
//! `Item::STOCK.at_least(1)`); encoded with the field's codec, so they
//! compare with what a save stores. Knows no key: the plans place them.

use crate::error::{Error, Result};
use std::marker::PhantomData;

/// What a conditional write requires of one stored field of an `E`, made by
/// the field's handle: `User::STATUS.is(0)`, `Item::STOCK.at_least(1)`. An
/// update takes any number ([`Update::when`](crate::Update::when)), as does a
/// conditional delete ([`Store::delete_if`](crate::Store::delete_if)); all must
/// hold, else the write is refused with [`Error::ConditionFailed`] (carrying
/// the stored value) and nothing is written.
///
/// `is` and `is_not` compare the stored form exactly (`is(None)` on an
/// `Option` field: nothing stored). The comparisons (`at_least`, `at_most`,
/// `above`, `below`) take numeric fields; a field with nothing stored, or
/// something that is not a number, fails them. Integers are compared exactly,
/// whatever their size.
///
/// ```
/// # use redis_entity::RedisEntity;
/// #[derive(RedisEntity)]
/// struct Item { #[pk] id: u64, stock: u32, label: Option<String> }
///
/// let _in_stock = Item::STOCK.at_least(1);
/// let _unlabelled = Item::LABEL.is(None);
/// ```
#[must_use = "a condition does nothing until an update or delete takes it"]
pub struct Condition<E> {
    pub(crate) spec: Result<Spec>,
    _e: PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for Condition<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.spec {
            Ok(spec) => write!(f, "Condition({})", spec.describe()),
            Err(e) => write!(f, "Condition(error: {e})"),
        }
    }
}

/// A condition without its entity type: which column, and the test.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    /// The column's index in the entity's description.
    pub col: usize,
    /// The field's name, for the error.
    pub field: &'static str,
    pub test: Test,
}

/// The test a condition makes on the stored form of a field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Test {
    /// The stored form is this (`None`: nothing stored).
    Is(Option<Vec<u8>>),
    /// The stored form is not this.
    IsNot(Option<Vec<u8>>),
    /// The stored number (plus `delta`, with nothing stored counting as 0:
    /// a bounded increment's new value) compares with `bound` as `cmp` says.
    Compare {
        cmp: Cmp,
        bound: Vec<u8>,
        delta: Option<Vec<u8>>,
    },
}

/// A numeric comparison of the stored value with a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    AtLeast,
    AtMost,
    Above,
    Below,
}

impl Cmp {
    /// The operator as the write script reads it.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Cmp::AtLeast => "ge",
            Cmp::AtMost => "le",
            Cmp::Above => "gt",
            Cmp::Below => "lt",
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Cmp::AtLeast => ">=",
            Cmp::AtMost => "<=",
            Cmp::Above => ">",
            Cmp::Below => "<",
        }
    }

    /// Whether `ordering` (of the stored value against the bound) passes.
    pub(crate) fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Cmp::AtLeast => ordering != Less,
            Cmp::AtMost => ordering != Greater,
            Cmp::Above => ordering == Greater,
            Cmp::Below => ordering == Less,
        }
    }
}

impl Spec {
    /// The condition in words, as errors show it: `status = 0`,
    /// `stock >= 1`, `stock - 1 >= 0`.
    pub(crate) fn describe(&self) -> String {
        let shown = |v: &Option<Vec<u8>>| match v {
            Some(v) => crate::error::shown(v),
            None => "nothing".to_owned(),
        };
        match &self.test {
            Test::Is(v) => format!("{} = {}", self.field, shown(v)),
            Test::IsNot(v) => format!("{} != {}", self.field, shown(v)),
            Test::Compare { cmp, bound, delta } => {
                let bound = crate::error::shown(bound);
                match delta {
                    None => format!("{} {} {bound}", self.field, cmp.symbol()),
                    Some(d) => {
                        let d = crate::error::shown(d);
                        match d.strip_prefix('-') {
                            Some(abs) => {
                                format!("{} - {abs} {} {bound}", self.field, cmp.symbol())
                            }
                            None => format!("{} + {d} {} {bound}", self.field, cmp.symbol()),
                        }
                    }
                }
            }
        }
    }
}

impl<E> Condition<E> {
    pub(crate) fn new(col: usize, field: &'static str, test: Result<Test>) -> Self {
        Condition {
            spec: test.map(|test| Spec { col, field, test }),
            _e: PhantomData,
        }
    }
}

/// The ordering of two numbers in their stored (decimal text) forms:
/// integers exactly, whatever their size, others as floats. `None` when
/// either is not a number.
pub(crate) fn compare_numbers(a: &[u8], b: &[u8]) -> Option<std::cmp::Ordering> {
    let (a, b) = (std::str::from_utf8(a).ok()?, std::str::from_utf8(b).ok()?);
    match (a.parse::<i128>(), b.parse::<i128>()) {
        (Ok(x), Ok(y)) => Some(x.cmp(&y)),
        _ => a
            .trim()
            .parse::<f64>()
            .ok()?
            .partial_cmp(&b.trim().parse::<f64>().ok()?),
    }
}

/// The refusal of a write whose condition `spec` did not hold on `key`,
/// where `found` was stored.
pub(crate) fn failed(key: &str, spec: &Spec, found: Option<&[u8]>) -> Error {
    Error::ConditionFailed {
        key: key.to_owned(),
        field: spec.field,
        condition: spec.describe(),
        found: found.map(crate::error::shown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::*;

    #[test]
    fn integers_compare_exactly_beyond_the_precision_of_a_float() {
        assert_eq!(
            compare_numbers(b"9007199254740993", b"9007199254740992"),
            Some(Greater)
        );
        assert_eq!(compare_numbers(b"-5", b"3"), Some(Less));
        assert_eq!(compare_numbers(b"2.5", b"2"), Some(Greater));
        assert_eq!(compare_numbers(b"abc", b"2"), None);
    }

    #[test]
    fn conditions_describe_themselves_in_words() {
        let spec = |test| Spec {
            col: 0,
            field: "stock",
            test,
        };
        assert_eq!(spec(Test::Is(Some(b"0".to_vec()))).describe(), "stock = 0");
        assert_eq!(spec(Test::IsNot(None)).describe(), "stock != nothing");
        let bounded = Test::Compare {
            cmp: Cmp::AtLeast,
            bound: b"0".to_vec(),
            delta: Some(b"-1".to_vec()),
        };
        assert_eq!(spec(bounded).describe(), "stock - 1 >= 0");
        assert!(Cmp::AtLeast.holds(Equal) && !Cmp::Above.holds(Equal));
    }
}
