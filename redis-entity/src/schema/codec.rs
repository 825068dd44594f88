//! How field values become Redis bytes and back.
//!
//! [`Scalar`] is a value that fits in one Redis string: integers and floats in
//! the decimal form Redis itself uses (so `HINCRBY` / `INCRBYFLOAT` work on
//! them), `bool` as `1` / `0`, text as UTF-8, `Vec<u8>` as raw bytes.
//! A field codec ([`Plain`], [`Optional`], [`Json`], [`JsonOptional`]) decides
//! what an absent value means; the derive picks one per field from its type and
//! attributes, so the runtime never guesses.

use crate::error::FieldError;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::marker::PhantomData;

/// A value stored as one Redis string (a hash field, a string key, a key segment).
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` cannot be stored as one Redis value",
    label = "add `#[redis(json)]` to this field to store it as one JSON value",
    note = "`#[redis(json)]` needs serde's `Serialize` and `Deserialize` on `{Self}`; or implement `redis_entity::codec::Scalar` for it"
)]
pub trait Scalar: Sized {
    /// Appends the stored form of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Parses the stored form; the error says why it does not parse.
    fn decode(raw: &[u8]) -> Result<Self, String>;
    /// [`decode`](Self::decode) of bytes handed over, as a read of a record
    /// does: a type that keeps the bytes (`String`, `Vec<u8>`) takes them
    /// instead of copying. An error gives them back with the reason.
    fn decode_owned(raw: Vec<u8>) -> Result<Self, (String, Vec<u8>)> {
        Self::decode(&raw).map_err(|e| (e, raw))
    }
}

/// A number that Redis can increment in place (`HINCRBY`, `HINCRBYFLOAT`, `INCRBY`...).
pub trait Counter: Scalar {
    /// True for floats: they use the `...FLOAT` commands.
    const FLOAT: bool;
}

/// Why `text` is not an integer of type `name`, in words.
fn integer_error(text: &str, name: &str, unsigned: bool) -> String {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if text.is_empty() {
        format!("empty, not a {name}")
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if unsigned && text.starts_with('-') && digits.bytes().any(|b| b != b'0') {
            format!("negative, and a {name} field holds no negative numbers")
        } else {
            format!("out of the range of a {name}")
        }
    } else {
        format!("not a whole number (a {name})")
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                // Spelled in place (no String made and dropped per value).
                out.extend_from_slice(itoa::Buffer::new().format(*self).as_bytes());
            }
            fn decode(raw: &[u8]) -> Result<Self, String> {
                let text = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
                text.parse::<$t>().map_err(|_| integer_error(text, stringify!($t), <$t>::MIN == 0))
            }
        }
        impl Counter for $t {
            const FLOAT: bool = false;
        }
    )*};
}
integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                // Rust's Display is the shortest form that round-trips; infinities
                // are spelled the way Redis spells them.
                if self.is_infinite() {
                    out.extend_from_slice(if *self > 0.0 { b"inf" } else { b"-inf" });
                } else {
                    // Written into `out` (no String made and dropped per
                    // value); writing into a Vec cannot fail.
                    use std::io::Write;
                    let _ = write!(out, "{self}");
                }
            }
            fn decode(raw: &[u8]) -> Result<Self, String> {
                let s = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
                match s {
                    "inf" | "+inf" => Ok(<$t>::INFINITY),
                    "-inf" => Ok(<$t>::NEG_INFINITY),
                    _ => s.parse::<$t>().map_err(|e| e.to_string()),
                }
            }
        }
        impl Counter for $t {
            const FLOAT: bool = true;
        }
    )*};
}
floats!(f32, f64);

impl Scalar for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(if *self { b'1' } else { b'0' });
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        match raw {
            b"1" | b"true" => Ok(true),
            b"0" | b"false" => Ok(false),
            _ => Err("expected 1 or 0".into()),
        }
    }
}

impl Scalar for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        String::from_utf8(raw.to_vec()).map_err(|e| e.to_string())
    }
    fn decode_owned(raw: Vec<u8>) -> Result<Self, (String, Vec<u8>)> {
        String::from_utf8(raw).map_err(|e| (e.utf8_error().to_string(), e.into_bytes()))
    }
}

impl Scalar for char {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut buf = [0u8; 4];
        out.extend_from_slice(self.encode_utf8(&mut buf).as_bytes());
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        let s = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Ok(c),
            _ => Err("expected exactly one character".into()),
        }
    }
}

impl Scalar for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        Ok(raw.to_vec())
    }
    fn decode_owned(raw: Vec<u8>) -> Result<Self, (String, Vec<u8>)> {
        Ok(raw)
    }
}

#[cfg(feature = "uuid")]
impl Scalar for uuid::Uuid {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.hyphenated().to_string().as_bytes());
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        uuid::Uuid::try_parse_ascii(raw).map_err(|e| e.to_string())
    }
}

/// Timestamps are stored as RFC 3339 text, which sorts lexicographically in time
/// order for one offset and is readable in `redis-cli`.
#[cfg(feature = "chrono")]
impl Scalar for chrono::DateTime<chrono::Utc> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(
            self.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                .as_bytes(),
        );
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        let s = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| e.to_string())
    }
}

#[cfg(feature = "chrono")]
impl Scalar for chrono::NaiveDate {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.format("%Y-%m-%d").to_string().as_bytes());
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        let s = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
        chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|e| e.to_string())
    }
}

#[cfg(feature = "chrono")]
impl Scalar for chrono::NaiveDateTime {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.format("%Y-%m-%dT%H:%M:%S%.f").to_string().as_bytes());
    }
    fn decode(raw: &[u8]) -> Result<Self, String> {
        let s = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").map_err(|e| e.to_string())
    }
}

/// A value a sorted index can score: numbers as themselves, timestamps as
/// milliseconds since the Unix epoch. Integers beyond 2^53 lose precision as
/// scores (Redis scores are doubles); the stored value keeps every digit.
pub trait SortScore: Scalar {
    /// The score.
    fn score(&self) -> f64;

    /// The score of a stored value.
    fn score_of(raw: &[u8]) -> Option<f64> {
        Self::decode(raw).ok().map(|v| v.score())
    }
}

macro_rules! scores {
    ($($t:ty),*) => {$(
        impl SortScore for $t {
            fn score(&self) -> f64 {
                *self as f64
            }
        }
    )*};
}
scores!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);

#[cfg(feature = "chrono")]
impl SortScore for chrono::DateTime<chrono::Utc> {
    fn score(&self) -> f64 {
        self.timestamp_millis() as f64
    }
}

#[cfg(feature = "chrono")]
impl SortScore for chrono::NaiveDateTime {
    fn score(&self) -> f64 {
        self.and_utc().timestamp_millis() as f64
    }
}

#[cfg(feature = "chrono")]
impl SortScore for chrono::NaiveDate {
    fn score(&self) -> f64 {
        self.and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis() as f64)
            .unwrap_or(0.0)
    }
}

/// A score as Redis accepts it (`inf`, `-inf`, shortest round-trip digits).
pub fn score_text(score: f64) -> String {
    if score.is_infinite() {
        if score > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{score}")
    }
}

/// How one field of type `T` is stored: `None` from `encode` means "store nothing".
///
/// Sealed: the codecs are this module's (the derive picks one per field);
/// a type of one's own is stored by implementing [`Scalar`] instead.
pub trait FieldCodec<T>: sealed::Codec {
    /// The stored bytes, or `None` when nothing is stored (an absent `Option`).
    fn encode(field: &'static str, value: &T) -> Result<Option<Vec<u8>>, crate::error::Error>;
    /// Rebuilds the value from what was stored (`None`: nothing was).
    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<T, FieldError>;
    /// [`decode`](Self::decode) of bytes handed over (a record's columns,
    /// which the read owns): text and bytes are taken, not copied.
    fn decode_owned(field: &'static str, raw: Option<Vec<u8>>) -> Result<T, FieldError> {
        Self::decode(field, raw.as_deref())
    }
}

mod sealed {
    /// The codecs of this module, the only ones.
    pub trait Codec {}
    impl Codec for super::Plain {}
    impl Codec for super::Optional {}
    impl Codec for super::Json {}
    impl Codec for super::JsonOptional {}
    impl<C: Codec> Codec for super::Defaulted<C> {}
    impl Codec for super::TagList {}
}

/// The codec of a `#[pk]` field's handle: a pk is part of the key, so it has
/// no stored form and cannot be assigned by `update().set(..)`.
pub struct PkPart;

/// A required [`Scalar`] field: absence is [`crate::Error::MissingField`].
pub struct Plain;
/// An `Option<T: Scalar>` field: absence is `None`; `Some("")` is stored as an empty string.
pub struct Optional;
/// A required field stored as JSON text (`#[redis(json)]`, and every field of the `json` layout).
pub struct Json;
/// An `Option<T>` stored as JSON text; `None` stores nothing.
pub struct JsonOptional;
/// A required field whose absence yields `Default::default()` (`#[redis(default)]`).
pub struct Defaulted<C>(PhantomData<C>);

impl<T: Scalar> FieldCodec<T> for Plain {
    fn encode(_: &'static str, value: &T) -> Result<Option<Vec<u8>>, crate::error::Error> {
        let mut out = Vec::new();
        value.encode(&mut out);
        Ok(Some(out))
    }
    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<T, FieldError> {
        let raw = raw.ok_or_else(|| FieldError::missing(field))?;
        T::decode(raw).map_err(|e| FieldError::parse(field, raw, e))
    }
    fn decode_owned(field: &'static str, raw: Option<Vec<u8>>) -> Result<T, FieldError> {
        let raw = raw.ok_or_else(|| FieldError::missing(field))?;
        T::decode_owned(raw).map_err(|(e, raw)| FieldError::parse(field, &raw, e))
    }
}

impl<T: Scalar> FieldCodec<Option<T>> for Optional {
    fn encode(f: &'static str, value: &Option<T>) -> Result<Option<Vec<u8>>, crate::error::Error> {
        match value {
            Some(v) => Plain::encode(f, v),
            None => Ok(None),
        }
    }
    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<Option<T>, FieldError> {
        raw.map(|r| Plain::decode(field, Some(r))).transpose()
    }
    fn decode_owned(field: &'static str, raw: Option<Vec<u8>>) -> Result<Option<T>, FieldError> {
        raw.map(|r| Plain::decode_owned(field, Some(r))).transpose()
    }
}

/// A value stored as one JSON value (`#[redis(json)]`, and every field of
/// the `json` layout): serde's `Serialize` and `Deserialize`.
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` is stored as JSON, which needs serde's `Serialize` and `Deserialize` on `{Self}`",
    label = "add `#[derive(serde::Serialize, serde::Deserialize)]` to `{Self}`",
    note = "every field of the `json` layout, and every `#[redis(json)]` field, is stored as one JSON value"
)]
pub trait JsonValue: serde::Serialize + serde::de::DeserializeOwned {}
/// Not recommended: the error names both derives once, rather than
/// serde's error for each trait the type lacks.
#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + serde::de::DeserializeOwned> JsonValue for T {}

impl<T: JsonValue> FieldCodec<T> for Json {
    fn encode(field: &'static str, value: &T) -> Result<Option<Vec<u8>>, crate::error::Error> {
        serde_json::to_vec(value)
            .map(Some)
            .map_err(|e| crate::error::Error::Encode {
                field,
                reason: e.to_string(),
            })
    }
    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<T, FieldError> {
        let raw = raw.ok_or_else(|| FieldError::missing(field))?;
        serde_json::from_slice(raw).map_err(|e| FieldError::parse(field, raw, e))
    }
}

impl<T: JsonValue> FieldCodec<Option<T>> for JsonOptional {
    fn encode(f: &'static str, value: &Option<T>) -> Result<Option<Vec<u8>>, crate::error::Error> {
        match value {
            Some(v) => Json::encode(f, v),
            None => Ok(None),
        }
    }
    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<Option<T>, FieldError> {
        // JSON `null` stored by another writer also means None.
        match raw {
            None | Some(b"null") => Ok(None),
            Some(r) => Json::decode(field, Some(r)).map(Some),
        }
    }
}

impl<T: Default, C: FieldCodec<T>> FieldCodec<T> for Defaulted<C> {
    fn encode(f: &'static str, value: &T) -> Result<Option<Vec<u8>>, crate::error::Error> {
        C::encode(f, value)
    }
    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<T, FieldError> {
        match raw {
            None => Ok(T::default()),
            r => C::decode(field, r),
        }
    }
    fn decode_owned(field: &'static str, raw: Option<Vec<u8>>) -> Result<T, FieldError> {
        match raw {
            None => Ok(T::default()),
            r => C::decode_owned(field, r),
        }
    }
}

/// A tag collection (`#[index]` on a `Vec`, `BTreeSet` or `HashSet`), stored
/// in one column as its elements, each escaped like a key value, joined by
/// `:` (so the write script can turn the stored text into index keys
/// without parsing anything). An empty collection stores nothing.
pub struct TagList;

/// A collection whose elements are tags.
pub trait TagCollection: Default {
    /// The element type.
    type Elem: Scalar;
    /// The elements, in iteration order.
    fn elems(&self) -> Vec<&Self::Elem>;
    /// Adds an element read back from Redis.
    fn push(&mut self, e: Self::Elem);
    /// The collection of the elements read back from Redis, in stored
    /// order (a set builds itself from all of them at once, which costs
    /// less than adding them one by one).
    fn from_elems(elems: Vec<Self::Elem>) -> Self {
        let mut c = Self::default();
        for e in elems {
            c.push(e);
        }
        c
    }
}

impl<T: Scalar> TagCollection for Vec<T> {
    type Elem = T;
    fn elems(&self) -> Vec<&T> {
        self.iter().collect()
    }
    fn push(&mut self, e: T) {
        Vec::push(self, e)
    }
    fn from_elems(elems: Vec<T>) -> Self {
        elems
    }
}

impl<T: Scalar + Ord> TagCollection for std::collections::BTreeSet<T> {
    type Elem = T;
    fn elems(&self) -> Vec<&T> {
        self.iter().collect()
    }
    fn push(&mut self, e: T) {
        self.insert(e);
    }
    fn from_elems(elems: Vec<T>) -> Self {
        // Sorted, then built in one pass.
        elems.into_iter().collect()
    }
}

impl<T: Scalar + Eq + Hash> TagCollection for std::collections::HashSet<T> {
    type Elem = T;
    fn elems(&self) -> Vec<&T> {
        self.iter().collect()
    }
    fn push(&mut self, e: T) {
        self.insert(e);
    }
}

impl<C: TagCollection> FieldCodec<C> for TagList {
    fn encode(_: &'static str, value: &C) -> Result<Option<Vec<u8>>, crate::error::Error> {
        let elems = value.elems();
        if elems.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for (i, e) in elems.into_iter().enumerate() {
            if i > 0 {
                out.push(b':');
            }
            crate::schema::escape::escape_bytes_into(&mut out, &to_bytes(e));
        }
        Ok(Some(out))
    }

    fn decode(field: &'static str, raw: Option<&[u8]>) -> Result<C, FieldError> {
        let Some(raw) = raw else {
            return Ok(C::default());
        };
        let mut elems = Vec::with_capacity(raw.iter().filter(|&&b| b == b':').count() + 1);
        for part in raw.split(|&b| b == b':') {
            let bytes = crate::schema::escape::unescape_bytes(part)
                .ok_or_else(|| FieldError::parse(field, raw, "not an escaped tag list"))?;
            let e = match bytes {
                // Unescaped: the element takes the copy.
                std::borrow::Cow::Owned(b) => C::Elem::decode_owned(b).map_err(|(e, _)| e),
                std::borrow::Cow::Borrowed(b) => C::Elem::decode(b),
            }
            .map_err(|e| FieldError::parse(field, raw, e))?;
            elems.push(e);
        }
        Ok(C::from_elems(elems))
    }
}

/// A map kept in its own Redis hash (`#[hash]` fields): one hash field per entry.
pub trait MapField: Default {
    /// The entry key.
    type Key: Scalar;
    /// The entry value.
    type Value: Scalar;
    /// The entries in their stored form.
    fn encode_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)>;
    /// Adds one stored entry.
    fn insert_raw(&mut self, key: Self::Key, value: Self::Value);
}

macro_rules! maps {
    ($($map:ident [$($bound:path),*]),*) => {$(
        impl<K: Scalar $(+ $bound)*, V: Scalar> MapField for $map<K, V> {
            type Key = K;
            type Value = V;
            fn encode_entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
                self.iter()
                    .map(|(k, v)| (to_bytes(k), to_bytes(v)))
                    .collect()
            }
            fn insert_raw(&mut self, key: K, value: V) {
                self.insert(key, value);
            }
        }
    )*};
}
maps!(BTreeMap[Ord], HashMap[Eq, Hash]);

/// The stored form of a scalar.
pub fn to_bytes<T: Scalar>(v: &T) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode(&mut out);
    out
}

/// Rebuilds a `#[hash]` map from `HGETALL` pairs.
pub fn decode_map<M: MapField>(
    field: &'static str,
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
) -> Result<M, FieldError> {
    let mut map = M::default();
    for (k, v) in pairs {
        let key = M::Key::decode_owned(k).map_err(|(e, k)| FieldError::parse(field, &k, e))?;
        let value = M::Value::decode_owned(v).map_err(|(e, v)| FieldError::parse(field, &v, e))?;
        map.insert_raw(key, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round<T: Scalar + PartialEq + std::fmt::Debug>(v: T) {
        assert_eq!(T::decode(&to_bytes(&v)).unwrap(), v);
    }

    #[test]
    fn scalars_round_trip() {
        round(-42i64);
        round(u64::MAX);
        round(i128::MIN);
        round(0.1f64);
        round(-1.5e300f64);
        round(f64::INFINITY);
        round(f32::NEG_INFINITY);
        round(true);
        round('中');
        round(String::from("李四: {x}"));
        round(vec![0u8, 255, 10]);
    }

    #[test]
    fn bad_values_say_why() {
        assert!(i64::decode(b"12x").is_err());
        assert!(bool::decode(b"yes").is_err());
        assert!(char::decode(b"ab").is_err());
        assert!(String::decode(&[0xff]).is_err());
        let e = <Plain as FieldCodec<u8>>::decode("age", Some(b"300")).unwrap_err();
        assert_eq!(e.field, "age");
        assert!(matches!(e.kind, crate::error::FieldErrorKind::Parse { .. }));
        let e = <Plain as FieldCodec<u8>>::decode("age", None).unwrap_err();
        assert_eq!(e.kind, crate::error::FieldErrorKind::Missing);
    }

    #[test]
    fn owned_bytes_decode_as_borrowed_ones_do() {
        assert_eq!(
            String::decode_owned(b"caf\xc3\xa9".to_vec()),
            Ok("café".to_owned())
        );
        assert_eq!(Vec::<u8>::decode_owned(vec![0xff, 0]), Ok(vec![0xff, 0]));
        assert_eq!(i64::decode_owned(b"-7".to_vec()), Ok(-7));
        // An error says the same as `decode` and gives the bytes back.
        let (why, back) = String::decode_owned(vec![b'a', 0xff]).unwrap_err();
        assert_eq!(why, String::decode(&[b'a', 0xff]).unwrap_err());
        assert_eq!(back, [b'a', 0xff]);
        let (why, back) = u8::decode_owned(b"300".to_vec()).unwrap_err();
        assert_eq!(
            (why.as_str(), back.as_slice()),
            ("out of the range of a u8", &b"300"[..])
        );
        // Through the codecs: the same value or the same error as `decode`.
        for raw in [None, Some(&b"x"[..]), Some(&[0xc3][..])] {
            assert_eq!(
                <Plain as FieldCodec<String>>::decode_owned("f", raw.map(<[u8]>::to_vec)),
                <Plain as FieldCodec<String>>::decode("f", raw)
            );
            assert_eq!(
                <Optional as FieldCodec<Option<String>>>::decode_owned(
                    "f",
                    raw.map(<[u8]>::to_vec)
                ),
                <Optional as FieldCodec<Option<String>>>::decode("f", raw)
            );
            assert_eq!(
                <Defaulted<Plain> as FieldCodec<String>>::decode_owned(
                    "f",
                    raw.map(<[u8]>::to_vec)
                ),
                <Defaulted<Plain> as FieldCodec<String>>::decode("f", raw)
            );
        }
    }

    #[test]
    fn tag_lists_round_trip_and_escape() {
        let tags: Vec<String> = vec!["a:b".into(), "".into(), "中".into()];
        let raw = <TagList as FieldCodec<Vec<String>>>::encode("t", &tags)
            .unwrap()
            .unwrap();
        assert_eq!(raw, "a%3Ab:%_:中".as_bytes());
        let back: Vec<String> = TagList::decode("t", Some(&raw)).unwrap();
        assert_eq!(back, tags);
        let empty: Vec<String> = Vec::new();
        assert_eq!(TagList::encode("t", &empty).unwrap(), None);
        assert!(<TagList as FieldCodec<Vec<String>>>::decode("t", Some(b"a%zz")).is_err());
        // Parts with nothing escaped and escaped ones mix; an empty part is no tag.
        let plain: Vec<String> = TagList::decode("t", Some(b"x:y%3Az:w")).unwrap();
        assert_eq!(plain, ["x", "y:z", "w"]);
        for bad in [&b"a::b"[..], b":a", b"a:"] {
            assert!(<TagList as FieldCodec<Vec<String>>>::decode("t", Some(bad)).is_err());
        }
    }

    /// Sets are built from all their elements at once (`from_elems`): the
    /// same elements as one by one, escaped parts and repeats included.
    #[test]
    fn tag_sets_decode_every_element() {
        use std::collections::{BTreeSet, HashSet};
        let raw = b"y:x%3Az:y:%_";
        let tree: BTreeSet<String> = TagList::decode("t", Some(raw)).unwrap();
        assert_eq!(
            tree,
            BTreeSet::from(["x:z".into(), "y".into(), String::new()])
        );
        let hash: HashSet<String> = TagList::decode("t", Some(raw)).unwrap();
        assert_eq!(hash, tree.iter().cloned().collect());
        let numbers: BTreeSet<u32> = TagList::decode("t", Some(b"3:1:2")).unwrap();
        assert_eq!(numbers.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
        // A part that is not UTF-8 is an error naming the field.
        let err = <TagList as FieldCodec<BTreeSet<String>>>::decode("t", Some(b"a:\xFF"));
        assert_eq!(err.unwrap_err().field, "t");
    }

    #[test]
    fn option_absent_is_none_and_empty_is_some() {
        let none: Option<String> =
            <Optional as FieldCodec<Option<String>>>::decode("f", None).unwrap();
        assert_eq!(none, None);
        let empty: Option<String> =
            <Optional as FieldCodec<Option<String>>>::decode("f", Some(b"")).unwrap();
        assert_eq!(empty, Some(String::new()));
    }
}

#[cfg(test)]
mod integer_errors {
    use super::Scalar;

    #[test]
    fn integer_errors_say_what_is_wrong() {
        assert_eq!(
            u64::decode(b"-5").unwrap_err(),
            "negative, and a u64 field holds no negative numbers"
        );
        assert_eq!(u8::decode(b"300").unwrap_err(), "out of the range of a u8");
        assert_eq!(
            i64::decode(b"1.5").unwrap_err(),
            "not a whole number (a i64)"
        );
        assert_eq!(i32::decode(b"").unwrap_err(), "empty, not a i32");
        assert_eq!(i64::decode(b"-5"), Ok(-5));
    }
}

#[cfg(test)]
mod decoders_never_panic {
    use super::Scalar;
    use proptest::prelude::*;

    fn all(raw: &[u8]) {
        let _ = u8::decode(raw);
        let _ = u64::decode(raw);
        let _ = i64::decode(raw);
        let _ = i128::decode(raw);
        let _ = f64::decode(raw);
        let _ = f32::decode(raw);
        let _ = bool::decode(raw);
        let _ = char::decode(raw);
        let _ = String::decode(raw);
        // The owned form agrees with the borrowed one, bytes and all.
        match (String::decode_owned(raw.to_vec()), String::decode(raw)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err((a, back)), Err(b)) => assert_eq!((a, back.as_slice()), (b, raw)),
            (a, b) => panic!("owned {a:?}, borrowed {b:?}"),
        }
    }

    proptest! {
        #[test]
        fn on_arbitrary_bytes(raw in prop::collection::vec(any::<u8>(), 0..64)) {
            all(&raw);
        }

        #[test]
        fn on_number_like_text(s in "[-+]?[0-9]{0,40}(\\.[0-9]{0,10})?(e[-+]?[0-9]{1,4})?|inf|-inf|nan|NaN") {
            all(s.as_bytes());
        }
    }
}
