//! The keys or arguments of a script call as one buffer of bytes and the end
//! of each word in it.
//!
//! A call used to hold a `Vec<Vec<u8>>`: one allocation per key and per
//! argument, freed again once the command was encoded. A batch of 100 saves
//! made some 2,000 of them, about half of the client's own work per entity
//! (benches/NOTES.md). Here a call's words grow two buffers, and the
//! command is encoded from them in one pass.

use std::fmt;

/// A list of byte strings (`KEYS` or `ARGV` of one call), in one buffer.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Words {
    bytes: Vec<u8>,
    /// The end of each word in `bytes`.
    ends: Vec<usize>,
}

impl Words {
    /// No words.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds one word.
    pub(crate) fn push(&mut self, word: impl AsRef<[u8]>) {
        self.bytes.extend_from_slice(word.as_ref());
        self.ends.push(self.bytes.len());
    }

    /// Adds one word made of `parts` (a mark and a value, say).
    pub(crate) fn push_concat(&mut self, parts: &[&[u8]]) {
        for p in parts {
            self.bytes.extend_from_slice(p);
        }
        self.ends.push(self.bytes.len());
    }

    /// Adds a number in decimal, as the scripts read counts and positions.
    pub(crate) fn push_number(&mut self, n: usize) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }

    /// Adds every word of `other`, in order.
    pub(crate) fn extend_from(&mut self, other: &Words) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.ends.extend(other.ends.iter().map(|e| base + e));
    }

    /// Removes every word, keeping the room.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// How many words.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The bytes of all words together.
    pub(crate) fn total_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Word `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.bytes[start..end])
    }

    /// Every word, in order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.ends.len()).map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.bytes[start..self.ends[i]]
        })
    }

    /// The first word.
    pub(crate) fn first(&self) -> Option<&[u8]> {
        self.get(0)
    }

    /// Every word, each in a vector of its own.
    #[cfg(test)]
    pub(crate) fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }

    /// Words `range` as a list of their own (a part of a call's keys).
    #[cfg(test)]
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> Words {
        let mut out = Words::new();
        for i in range {
            out.push(self.get(i).expect("a word in range"));
        }
        out
    }
}

/// Where a call's words go: a buffer of their own ([`Words`]), or straight
/// into the command that sends them (`redis::Cmd`), when the command can be
/// begun before them (a function call whose key count is known first).
pub(crate) trait Sink {
    /// Adds one word.
    fn word(&mut self, word: &[u8]);
    /// Adds one word made of `parts`.
    fn word_of(&mut self, parts: &[&[u8]]);
}

impl Sink for Words {
    fn word(&mut self, word: &[u8]) {
        self.push(word);
    }

    fn word_of(&mut self, parts: &[&[u8]]) {
        self.push_concat(parts);
    }
}

impl Sink for redis::Cmd {
    fn word(&mut self, word: &[u8]) {
        self.arg(word);
    }

    fn word_of(&mut self, parts: &[&[u8]]) {
        use redis::RedisWrite;
        use std::io::Write;
        let mut w = self.writer_for_next_arg();
        for p in parts {
            // Writing into the command's buffer (a Vec) cannot fail.
            let _ = w.write_all(p);
        }
    }
}

impl std::ops::Index<usize> for Words {
    type Output = [u8];

    fn index(&self, i: usize) -> &[u8] {
        match self.get(i) {
            Some(w) => w,
            None => panic!("word {i} of {}", self.len()),
        }
    }
}

impl<W: AsRef<[u8]>> FromIterator<W> for Words {
    fn from_iter<I: IntoIterator<Item = W>>(iter: I) -> Self {
        let mut out = Words::new();
        for w in iter {
            out.push(w);
        }
        out
    }
}

impl fmt::Debug for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_bounds_and_order() {
        let mut w = Words::new();
        w.push("user:9");
        w.push(b"");
        w.push_concat(&[b"v", b"lisi"]);
        w.push_number(0);
        w.push_number(1_234_567);
        w.push_number(usize::MAX);
        let all: Vec<&[u8]> = w.iter().collect();
        let max = usize::MAX.to_string();
        let expected: Vec<&[u8]> = vec![b"user:9", b"", b"vlisi", b"0", b"1234567", max.as_bytes()];
        assert_eq!(all, expected);
        assert_eq!(w.len(), 6);
        assert_eq!(w.iter().len(), 6);
        assert_eq!(&w[2], b"vlisi");
        assert_eq!(w.get(1), Some(&b""[..]));
        assert_eq!(w.get(6), None);
        assert_eq!(w.total_bytes(), 6 + 5 + 1 + 7 + max.len());
    }

    #[test]
    fn extending_moves_the_other_words_bounds() {
        let mut a: Words = ["a", "bc"].into_iter().collect();
        let b: Words = ["", "def", "g"].into_iter().collect();
        a.extend_from(&b);
        let all: Vec<&[u8]> = a.iter().collect();
        let expected: Vec<&[u8]> = vec![b"a", b"bc", b"", b"def", b"g"];
        assert_eq!(all, expected);
        assert_eq!(a.slice(2..4), ["", "def"].into_iter().collect());
        a.clear();
        assert_eq!(a.len(), 0);
        assert_eq!(a.iter().count(), 0);
    }
}
