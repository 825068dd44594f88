//! Key encoding: how values become key segments, injectively.
//!
//! A value inside a key is escaped so that nothing it contains can be read as
//! structure: `:` (segment separator), `{` `}` (cluster hash tags), `*` `?` `[`
//! `]` `\` (SCAN glob syntax), `%` (the escape character itself) and any
//! separator the entity's key template puts between pk fields become `%XX`
//! (two upper-case hex digits). The empty string becomes `%_`, which no other
//! value produces. Everything else, including non-ASCII text, is kept as is,
//! so `redis-cli` shows Chinese names readably.

use crate::error::{Error, Result};

/// Characters always escaped inside a key segment.
pub const ALWAYS_ESCAPED: &str = "%:{}*?[]\\";

/// The encoding of the empty string.
pub const EMPTY: &str = "%_";

/// Appends `value` to `out`, escaped. `extra` lists further characters to
/// escape (the separators of a composite key template).
pub fn escape_into(out: &mut String, value: &str, extra: &str) {
    if value.is_empty() {
        out.push_str(EMPTY);
        return;
    }
    for c in value.chars() {
        if ALWAYS_ESCAPED.contains(c) || extra.contains(c) {
            // Every character that can be escaped is ASCII: one byte, two hex digits.
            let b = c as u32 as u8;
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        } else {
            out.push(c);
        }
    }
}

/// Appends the escaped form of arbitrary bytes (an index value: a field's
/// stored form, which need not be UTF-8). Same rules as [`escape_into`]
/// without extra characters; bytes outside ASCII are kept.
pub fn escape_bytes_into(out: &mut Vec<u8>, value: &[u8]) {
    if value.is_empty() {
        out.extend_from_slice(EMPTY.as_bytes());
        return;
    }
    for &b in value {
        if b.is_ascii() && ALWAYS_ESCAPED.as_bytes().contains(&b) {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        } else {
            out.push(b);
        }
    }
}

/// The inverse of [`escape_bytes_into`]; the segment itself when nothing
/// in it is escaped (most values: no copy).
pub fn unescape_bytes(segment: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    if segment == EMPTY.as_bytes() {
        return Some(Vec::new().into());
    }
    if segment.is_empty() {
        return None;
    }
    if !segment.contains(&b'%') {
        return Some(segment.into());
    }
    let mut out = Vec::with_capacity(segment.len());
    let mut i = 0;
    while i < segment.len() {
        if segment[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            if hex.iter().any(|b| b.is_ascii_lowercase()) {
                return None;
            }
            let b = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            if !ALWAYS_ESCAPED.as_bytes().contains(&b) {
                return None;
            }
            out.push(b);
            i += 3;
        } else {
            out.push(segment[i]);
            i += 1;
        }
    }
    Some(out.into())
}

/// `value` escaped, as a new string.
#[cfg(test)]
pub(crate) fn escape(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    escape_into(&mut s, value, "");
    s
}

/// The inverse of [`escape_into`] without extra characters; `None` for text
/// that no value escapes to.
#[cfg(test)]
pub(crate) fn unescape(segment: &str) -> Option<String> {
    unescape_with(segment, "")
}

/// The exact inverse of `escape_into` with `extra`: `None` for any text
/// that `escape_into(.., extra)` never writes (a character it escapes left
/// raw, an escape of one it keeps, lower-case hex, a lone `%`), so that a key
/// walked in Redis is either the key of one value or of none.
///
/// ```
/// use redis_entity::__private::unescape_with;
/// assert_eq!(unescape_with("a%3Ab", ""), Some("a:b".to_owned()));
/// assert_eq!(unescape_with("{X}", ""), None);      // `{` is always escaped
/// assert_eq!(unescape_with("%41", ""), None);      // `A` never is
/// assert_eq!(unescape_with("a%5Fb", "_"), Some("a_b".to_owned()));
/// assert_eq!(unescape_with("a_b", "_"), None);
/// ```
pub fn unescape_with(segment: &str, extra: &str) -> Option<String> {
    if segment == EMPTY {
        return Some(String::new());
    }
    if segment.is_empty() {
        return None;
    }
    let escaped = |c: char| ALWAYS_ESCAPED.contains(c) || extra.contains(c);
    let mut out = String::with_capacity(segment.len());
    let mut rest = segment;
    while let Some(c) = rest.chars().next() {
        if c == '%' {
            let hex = rest.get(1..3)?;
            if !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
            {
                return None;
            }
            let b = u8::from_str_radix(hex, 16).ok()?;
            let d = char::from(b);
            if !b.is_ascii() || !escaped(d) {
                return None;
            }
            out.push(d);
            rest = &rest[3..];
        } else if escaped(c) {
            return None;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    Some(out)
}

/// A value that can be a primary key, or one component of a composite key.
///
/// Integers are written in decimal and need no escaping; text is escaped
/// (see the module docs); a pk is never a float, because two spellings of one
/// float would name two keys.
pub trait KeyPart {
    /// Appends the key segment for `self`. `extra` are the template's separators.
    fn write_key(&self, out: &mut String, extra: &str);
    /// Parses a segment written by `write_key` with the same `extra` (used
    /// when ids come back from sets and scans): `None` for any segment
    /// `write_key` never writes, so that one key maps to one value.
    fn read_key(segment: &str, extra: &str) -> Option<Self>
    where
        Self: Sized;
}

/// An integer pk written zero-padded to a fixed width (`#[redis(pad = 10)]`,
/// a legacy id column: `0000000035`), so that keys and members sort in number order.
pub trait PaddedKeyPart: Sized {
    /// Appends the value padded with zeros to `width` digits.
    fn write_padded(&self, out: &mut String, width: usize);
    /// Parses a segment written by `write_padded` with the same width.
    fn read_padded(segment: &str, width: usize) -> Option<Self>;
}

/// True when `text` is an integer as Rust's `Display` writes it: digits
/// with no leading zero, a `-` before any but zero, no `+`. Checked in place
/// (every member read back from a set or a scan goes through it).
pub(crate) fn canonical_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    all_digits && (!digits.starts_with('0') || text == "0")
}

macro_rules! int_parts {
    ($($t:ty),*) => {$(
        impl PaddedKeyPart for $t {
            fn write_padded(&self, out: &mut String, width: usize) {
                use std::fmt::Write;
                let _ = write!(out, "{:0width$}", self, width = width);
            }
            fn read_padded(segment: &str, width: usize) -> Option<Self> {
                let v: $t = segment.parse().ok()?;
                (format!("{:0width$}", v, width = width) == segment).then_some(v)
            }
        }
        impl KeyPart for $t {
            fn write_key(&self, out: &mut String, _: &str) {
                out.push_str(itoa::Buffer::new().format(*self));
            }
            fn read_key(segment: &str, _: &str) -> Option<Self> {
                // Only the canonical spelling, so that one key maps to one value.
                canonical_integer(segment).then(|| segment.parse().ok()).flatten()
            }
        }
    )*};
}
int_parts!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl KeyPart for String {
    fn write_key(&self, out: &mut String, extra: &str) {
        escape_into(out, self, extra);
    }
    fn read_key(segment: &str, extra: &str) -> Option<Self> {
        unescape_with(segment, extra)
    }
}

impl KeyPart for char {
    fn write_key(&self, out: &mut String, extra: &str) {
        let mut buf = [0u8; 4];
        escape_into(out, self.encode_utf8(&mut buf), extra);
    }
    fn read_key(segment: &str, extra: &str) -> Option<Self> {
        let s = unescape_with(segment, extra)?;
        let mut cs = s.chars();
        match (cs.next(), cs.next()) {
            (Some(c), None) => Some(c),
            _ => None,
        }
    }
}

impl KeyPart for bool {
    fn write_key(&self, out: &mut String, _: &str) {
        out.push(if *self { '1' } else { '0' });
    }
    fn read_key(segment: &str, _: &str) -> Option<Self> {
        match segment {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        }
    }
}

#[cfg(feature = "uuid")]
impl KeyPart for uuid::Uuid {
    fn write_key(&self, out: &mut String, _: &str) {
        out.push_str(&self.hyphenated().to_string());
    }
    fn read_key(segment: &str, _: &str) -> Option<Self> {
        let u = uuid::Uuid::try_parse(segment).ok()?;
        (u.hyphenated().to_string() == segment).then_some(u)
    }
}

/// A tenant prefix applied to every key a [`crate::Store`] touches
/// (a tenant prefix: `tenant:42:user:1001:profile`).
///
/// The constructors that take a name or an id escape it, so that no value
/// (an id from a request, say) can reach another tenant's keys; the raw one
/// is named for what it is, and takes trusted input only.
///
/// ```
/// use redis_entity::Namespace;
/// assert_eq!(Namespace::tenant(42).as_str(), "tenant:42:");
/// assert_eq!(Namespace::new("shop").as_str(), "shop:");
/// // A name is one segment: it cannot add segments of its own.
/// assert_eq!(Namespace::new("1:acct").as_str(), "1%3Aacct:");
/// // Trusted configuration may spell several segments.
/// assert_eq!(Namespace::trusted_prefix("shop:eu").unwrap().as_str(), "shop:eu:");
/// assert!(Namespace::trusted_prefix("bad{tag}").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Namespace {
    prefix: String,
    /// Which of the two key layouts the store this namespace belongs to
    /// writes (set by the store, not by the caller).
    layout: KeyLayout,
}

/// The two key layouts of one schema (see `docs/key-layout.md`).
///
/// - [`Standalone`](KeyLayout::Standalone), for one server: keys exactly as
///   the struct names them, no braces: `user:9`, `user:9:settings`,
///   `user:userid:9:username`; the type's index families live under literal
///   `@` segments no member can spell (`user:@country:DE`, `user:@ids`).
/// - [`Cluster`](KeyLayout::Cluster), for Redis Cluster: every key of one
///   entity carries its hash tag (`user:{9}`, `user:{9}:settings`), so a
///   write of one entity is one script on one slot.
///
/// A keyspace records which layout wrote it; a store refuses the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum KeyLayout {
    /// One server (or a replica set): the specification's keys.
    #[default]
    Standalone,
    /// Redis Cluster: the framework's hash tags.
    Cluster,
}

impl KeyLayout {
    /// How the layout is recorded in a keyspace's layout marker.
    pub fn name(self) -> &'static str {
        match self {
            KeyLayout::Standalone => "standalone",
            KeyLayout::Cluster => "cluster",
        }
    }

    /// The layout a marker names.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "standalone" => Some(KeyLayout::Standalone),
            "cluster" => Some(KeyLayout::Cluster),
            _ => None,
        }
    }
}

impl Namespace {
    /// No prefix.
    pub fn none() -> Self {
        Namespace::default()
    }

    /// `<name>:`, with the name escaped like any key value: one segment,
    /// whatever the name holds (`:`, braces, glob characters).
    pub fn new(name: impl std::fmt::Display) -> Self {
        let mut prefix = String::new();
        escape_into(&mut prefix, &name.to_string(), "");
        prefix.push(':');
        Namespace::prefixed(prefix)
    }

    fn prefixed(prefix: String) -> Self {
        Namespace {
            prefix,
            layout: KeyLayout::default(),
        }
    }

    /// A literal prefix made of `:`-separated segments, taken as written; a
    /// trailing `:` is added. **Trusted input only** (configuration, not a
    /// request): `trusted_prefix("tenant:1:acct")` is a prefix inside tenant
    /// 1's keys. Refuses hash-tag braces and glob characters, which would
    /// change which cluster slot or which SCAN match a key belongs to, and
    /// empty segments.
    pub fn trusted_prefix(literal: &str) -> Result<Self> {
        let literal = literal.strip_suffix(':').unwrap_or(literal);
        if literal.is_empty() {
            return Ok(Namespace::none());
        }
        // Every escaped character but the segment separator.
        if literal
            .chars()
            .any(|c| c != ':' && ALWAYS_ESCAPED.contains(c))
        {
            return Err(Error::InvalidKey {
                segment: literal.to_owned(),
                reason: "a namespace may not contain { } * ? [ ] \\ or %",
            });
        }
        if literal.split(':').any(str::is_empty) {
            return Err(Error::InvalidKey {
                segment: literal.to_owned(),
                reason: "a namespace may not contain an empty segment",
            });
        }
        Ok(Namespace::prefixed(format!("{literal}:")))
    }

    /// `tenant:<id>:`, with the id escaped like any key value.
    pub fn tenant(id: impl std::fmt::Display) -> Self {
        let mut prefix = String::from("tenant:");
        escape_into(&mut prefix, &id.to_string(), "");
        prefix.push(':');
        Namespace::prefixed(prefix)
    }

    /// A prefix spelled by the keyspace module (an index shard's), taken as
    /// written.
    pub(crate) fn spelled(prefix: String, layout: KeyLayout) -> Self {
        Namespace { prefix, layout }
    }

    /// The key layout of the store this namespace is used by.
    pub fn layout(&self) -> KeyLayout {
        self.layout
    }

    /// The same prefix in `layout` (stores set it; see [`KeyLayout`]).
    pub fn in_layout(mut self, layout: KeyLayout) -> Self {
        self.layout = layout;
        self
    }

    /// The prefix including its trailing `:` (empty for no namespace).
    pub fn as_str(&self) -> &str {
        &self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Text with a high share of the characters that matter.
    fn tricky() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just(':'),
                Just('{'),
                Just('}'),
                Just('*'),
                Just('?'),
                Just('['),
                Just(']'),
                Just('\\'),
                Just('%'),
                Just('_'),
                Just('中'),
                Just('é'),
                Just('\0'),
                any::<char>(),
            ],
            0..12,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #[test]
        fn escaping_round_trips(s in tricky()) {
            prop_assert_eq!(unescape(&escape(&s)), Some(s));
        }

        #[test]
        fn escaping_round_trips_with_extra_characters(s in tricky()) {
            let mut e = String::new();
            escape_into(&mut e, &s, "_@");
            prop_assert_eq!(unescape_with(&e, "_@"), Some(s));
        }

        /// Unescaping is exactly the inverse of escaping: it accepts only
        /// what escaping writes.
        #[test]
        fn unescape_accepts_only_what_escape_writes(s in tricky(), extra in prop_oneof![Just(""), Just("_@")]) {
            if let Some(v) = unescape_with(&s, extra) {
                let mut e = String::new();
                escape_into(&mut e, &v, extra);
                prop_assert_eq!(e, s);
            }
        }

        #[test]
        fn unescape_accepts_only_what_escape_writes_from_escape_like_text(
            s in prop::collection::vec(prop_oneof![
                Just("%".to_owned()), Just("%3A".to_owned()), Just("%3a".to_owned()),
                Just("%5F".to_owned()), Just("%41".to_owned()), Just("%_".to_owned()),
                Just("_".to_owned()), Just("{".to_owned()), Just("a".to_owned()),
                Just("中".to_owned()), Just("%E4".to_owned()),
            ], 0..6).prop_map(|p| p.concat()),
            extra in prop_oneof![Just(""), Just("_@")],
        ) {
            if let Some(v) = unescape_with(&s, extra) {
                let mut e = String::new();
                escape_into(&mut e, &v, extra);
                prop_assert_eq!(e, s);
            }
        }

        #[test]
        fn escaping_is_injective(a in tricky(), b in tricky()) {
            prop_assume!(a != b);
            prop_assert_ne!(escape(&a), escape(&b));
        }

        #[test]
        fn escaped_values_contain_no_structure(s in tricky()) {
            let e = escape(&s);
            prop_assert!(!e.is_empty());
            let structural = [':', '{', '}', '*', '?', '[', ']', '\\'];
            prop_assert!(!e.contains(structural), "escaped {:?} to {:?}", s, e);
        }
    }

    #[test]
    fn escapes_structure_and_keeps_text() {
        assert_eq!(escape("a:b"), "a%3Ab");
        assert_eq!(escape("{tag}"), "%7Btag%7D");
        assert_eq!(escape("*?[]\\%"), "%2A%3F%5B%5D%5C%25");
        assert_eq!(escape(""), "%_");
        assert_eq!(escape("李四"), "李四");
        let mut s = String::new();
        escape_into(&mut s, "a_b", "_");
        assert_eq!(s, "a%5Fb");
    }

    #[test]
    fn unescape_rejects_non_canonical() {
        assert_eq!(unescape("a%3ab"), None);
        assert_eq!(unescape("%"), None);
        assert_eq!(unescape(""), None);
        assert_eq!(unescape("%_"), Some(String::new()));
        assert_eq!(u64::read_key("007", ""), None);
        assert_eq!(u64::read_key("7", ""), Some(7));
        // Bytes: nothing escaped is the segment itself, not a copy.
        let plain = unescape_bytes(b"ab").unwrap();
        assert!(matches!(plain, std::borrow::Cow::Borrowed(b"ab")));
        assert_eq!(unescape_bytes(b"a%3Ab").unwrap().as_ref(), b"a:b");
        assert_eq!(unescape_bytes(b"%_").unwrap().as_ref(), b"");
        assert_eq!(unescape_bytes(b""), None);
        // Integers: exactly the spellings `Display` writes (checked in place).
        for (text, read) in [
            ("0", Some(0)),
            ("-0", None),
            ("+5", None),
            ("-12", Some(-12)),
        ] {
            assert_eq!(i64::read_key(text, ""), read, "{text}");
        }
        for bad in ["", "-", "00", "-05", "1e3", " 1", "9223372036854775808"] {
            assert_eq!(i64::read_key(bad, ""), None, "{bad}");
        }
        assert_eq!(u8::read_key("255", ""), Some(255));
        assert_eq!(u8::read_key("-1", ""), None);
        // Structure left raw, or an escape of a character kept as it is.
        for bad in ["{X}", "a:b", "a*", "%41", "%2a", "%E4", "a%", "%5F"] {
            assert_eq!(unescape(bad), None, "{bad}");
        }
        assert_eq!(unescape_with("%5F", "_"), Some("_".to_owned()));
        assert_eq!(unescape_with("_", "_"), None);
    }
}
