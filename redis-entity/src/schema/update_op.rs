//! The changes an `update()` is made of, as the field handles describe
//! them: a column set or incremented, a `#[hash]` map replaced or changed
//! by one entry. Encoded values; the plans turn them into commands.

/// One change made by `update()`; `col` / `map` index the entity's description.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOp {
    /// Store a column value (`None`: remove it).
    Set {
        /// Column index.
        col: usize,
        /// Encoded value.
        value: Option<Vec<u8>>,
    },
    /// Add to a numeric column in place.
    Incr {
        /// Column index.
        col: usize,
        /// The encoded delta.
        delta: Vec<u8>,
        /// Float columns use the `...FLOAT` commands.
        float: bool,
    },
    /// Replace a whole `#[hash]` map.
    MapReplace {
        /// Map index.
        map: usize,
        /// Encoded entries.
        entries: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// Set one entry of a `#[hash]` map.
    MapSet {
        /// Map index.
        map: usize,
        /// Encoded entry key.
        key: Vec<u8>,
        /// Encoded entry value.
        value: Vec<u8>,
    },
    /// Remove one entry of a `#[hash]` map.
    MapDel {
        /// Map index.
        map: usize,
        /// Encoded entry key.
        key: Vec<u8>,
    },
}
