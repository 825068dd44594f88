//! Typed errors. Every error that comes from data read out of Redis names the
//! key (and the field, where there is one) so that a bad record can be found.

use std::fmt;

/// The result type of every fallible redis-entity call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong with one field of a stored record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field is absent from the stored record.
    Missing,
    /// The stored bytes do not parse as the field's type.
    Parse {
        /// The stored value, cut to 64 bytes and shown lossily.
        value: String,
        /// Why it does not parse.
        reason: String,
    },
}

/// A decoding failure of one field, before the runtime attaches the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's name as stored in Redis.
    pub field: &'static str,
    /// What is wrong with it.
    pub kind: FieldErrorKind,
}

impl FieldError {
    /// A required field that is not stored.
    pub fn missing(field: &'static str) -> Self {
        FieldError {
            field,
            kind: FieldErrorKind::Missing,
        }
    }

    /// A stored value that does not parse.
    pub fn parse(field: &'static str, raw: &[u8], reason: impl fmt::Display) -> Self {
        FieldError {
            field,
            kind: FieldErrorKind::Parse {
                value: shown(raw),
                reason: reason.to_string(),
            },
        }
    }
}

/// At most 64 bytes of a stored value, for error messages.
pub(crate) fn shown(raw: &[u8]) -> String {
    let cut = &raw[..raw.len().min(64)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if raw.len() > 64 {
        s.push('…');
    }
    s
}

/// Everything a redis-entity call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A required field is absent from the record stored at `key`.
    #[error("record at `{key}` has no field `{field}`")]
    MissingField {
        /// The Redis key read.
        key: String,
        /// The missing field.
        field: &'static str,
    },
    /// A stored value does not parse as the field's type.
    #[error("field `{field}` of `{key}` holds {value:?}, which does not parse: {reason}")]
    Decode {
        /// The Redis key read.
        key: String,
        /// The field that does not parse.
        field: &'static str,
        /// The stored value (at most 64 bytes).
        value: String,
        /// Why it does not parse.
        reason: String,
    },
    /// A key holds a value of another Redis type than the layout expects.
    #[error("key `{key}` holds the wrong kind of value for this entity (WRONGTYPE): {detail}")]
    WrongType {
        /// The first key of the entity touched by the failing command.
        key: String,
        /// The server's message.
        detail: String,
    },
    /// `insert` found an entity already stored under the key.
    #[error("an entity is already stored at `{key}`")]
    AlreadyExists {
        /// The entity's key.
        key: String,
    },
    /// `update` found no entity (or an expired one) under the key; nothing was written.
    #[error("no entity is stored at `{key}`")]
    NotFound {
        /// The entity's key.
        key: String,
    },
    /// A unique index already maps the value to another entity.
    #[error("unique field `{field}` already has the value {value:?}")]
    UniqueViolation {
        /// The unique field.
        field: &'static str,
        /// The taken value.
        value: String,
    },
    /// A save carried a `#[version]` other than the stored one: someone else
    /// saved the entity since it was read. Nothing was written.
    #[error("`{key}` is at version {found}, the save expected {expected}")]
    VersionConflict {
        /// The entity key.
        key: String,
        /// The version the save carried.
        expected: String,
        /// The version stored.
        found: String,
    },
    /// A conditional write (`update().when(..)`, `delete_if`) found a stored
    /// value its condition does not allow: the write was not applied, and
    /// nothing was written. `found` is what was stored (`None`: nothing).
    #[error("`{key}` does not meet `{condition}` (stored: {}): nothing written", found.as_deref().unwrap_or("nothing"))]
    ConditionFailed {
        /// The entity key.
        key: String,
        /// The field the condition is on.
        field: &'static str,
        /// The condition, in words (`status = 0`, `stock - 1 >= 0`).
        condition: String,
        /// The stored value, as text (`None`: nothing stored).
        found: Option<String>,
    },
    /// An operation of a transaction was refused (a condition, a version, a
    /// unique value, a missing entity, a key of the wrong type): nothing of
    /// the transaction was written. `source` is the operation's own error.
    #[error("operation {op} of the transaction ({key}) was refused, nothing written: {source}")]
    TransactionRefused {
        /// The operation's index in the transaction (0-based).
        op: usize,
        /// The key of the entity it writes (the first owner's timeline for
        /// a push, the bucket for a board increment).
        key: String,
        /// Why it was refused.
        source: Box<Error>,
    },
    /// A transaction that cannot run as one atomic call (an entity written
    /// twice, keys in two slots of a cluster, ...), refused before anything
    /// was sent.
    #[error("invalid transaction: {reason}")]
    InvalidTransaction {
        /// What is wrong, and what to do.
        reason: String,
    },
    /// An entity's `#[redis(validate = ..)]` check refused it: nothing was
    /// written.
    #[error("{type_name} `{key}` is not valid: {message}")]
    Invalid {
        /// The entity's type.
        type_name: &'static str,
        /// Its entity key (without the store's namespace).
        key: String,
        /// What the check said.
        message: String,
    },
    /// A value could not be encoded (a `#[redis(json)]` field whose
    /// `Serialize` failed, or a float that Redis cannot store such as NaN in an increment).
    #[error("field `{field}` cannot be encoded: {reason}")]
    Encode {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// A query asked for something the call cannot do (a stream of a query
    /// with `order_*` or `limit`, which cursors cannot honour).
    #[error("invalid query: {reason}")]
    InvalidQuery {
        /// Why.
        reason: &'static str,
    },
    /// The keyspace was written in the other key layout (its marker,
    /// `@redis-entity:layout`, names it): move it with the admin tooling,
    /// or connect with the matching constructor.
    #[error("the keyspace is in the {found} key layout, this store writes the {expected} layout")]
    LayoutMismatch {
        /// The layout the marker names.
        found: String,
        /// The store's layout.
        expected: &'static str,
    },
    /// The keyspace holds `type_name`'s entities in a form this code's
    /// definition does not fit (another layout, key, pk or cluster
    /// placement, or a new required field): nothing was written. Each
    /// difference is named in words; `admin schema plan` prints them too.
    #[error("the stored entities of {type_name} do not fit this definition: {}", differences.join("; "))]
    SchemaMismatch {
        /// The Rust type.
        type_name: &'static str,
        /// What differs, in words.
        differences: Vec<String>,
    },
    /// A query or lookup needs an index that does not yet hold every
    /// stored entity (added to a deployed type, and not yet built by
    /// `schema apply`). A store built with
    /// `StoreBuilder::partial_indexes(true)` answers from what it holds
    /// instead.
    #[error("index `{index}` of {type_name} is {state}: run `schema apply` (or read with `StoreBuilder::partial_indexes`)")]
    IndexBuilding {
        /// The Rust type.
        type_name: &'static str,
        /// The indexed field.
        index: &'static str,
        /// Its state and progress, in words.
        state: String,
    },
    /// The operation is not available on Redis Cluster yet. (Unique indexes
    /// of many shards and relations across slots, which earlier versions
    /// refused with it, run there now.)
    #[error("{what} is not available on Redis Cluster yet")]
    NotOnCluster {
        /// What was asked.
        what: &'static str,
    },
    /// A namespace or key segment that would break the key layout.
    #[error("invalid key segment {segment:?}: {reason}")]
    InvalidKey {
        /// The offending text.
        segment: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Two registered entities have key families that can produce the same key.
    #[error("key families overlap: {first} and {second}")]
    LayoutOverlap {
        /// The first key pattern.
        first: String,
        /// The second key pattern.
        second: String,
    },
    /// A cache loader failed; nothing was cached.
    #[error("loading `{key}` failed: {source}")]
    Loader {
        /// The cache key.
        key: String,
        /// The loader's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another caller held the rebuild lock and stored nothing within the
    /// cache's `wait`.
    #[error("gave up waiting for another caller to load `{key}`")]
    CacheTimeout {
        /// The cache key.
        key: String,
    },
    /// The server refused the call for memory: it is at its `maxmemory`
    /// under the `noeviction` policy (`OOM command not allowed ...`).
    /// Nothing was written. Deletes still run at the limit (they free
    /// memory): see "Memory and eviction" in docs/consistency.md.
    #[error("redis is out of memory (maxmemory reached) on `{key}`: {detail}; nothing written")]
    OutOfMemory {
        /// The key the refused call was about.
        key: String,
        /// The server's message.
        detail: String,
    },
    /// The server evicts keys when it reaches `maxmemory` under `policy`
    /// (`allkeys-lru`, `allkeys-lfu`, `allkeys-random`): it could silently
    /// delete index entries, unique values and schema records, so the
    /// store refuses to write. Set `maxmemory-policy noeviction`, or build
    /// the store with
    /// [`StoreBuilder::allow_eviction`](crate::StoreBuilder::allow_eviction)
    /// for cache-only data whose indexes may be lost.
    #[error("the server evicts keys under maxmemory-policy `{policy}`, which can silently lose index entries and unique values: nothing written (set `noeviction`, or build the store with `allow_eviction(true)`)")]
    EvictingPolicy {
        /// The server's `maxmemory-policy`.
        policy: String,
    },
    /// Redis answered something the runtime did not expect (a protocol or script mismatch).
    #[error("unexpected reply for `{key}`: {detail}")]
    UnexpectedReply {
        /// The key the command was about.
        key: String,
        /// What came back.
        detail: String,
    },
    /// The connection failed or Redis returned an error not covered above.
    /// A write that failed this way changed nothing, unless
    /// [`Error::is_connection`] says its outcome is unknown.
    #[error("{}", redis_message(key, source))]
    Redis {
        /// The key the command was about (empty when there is none).
        key: String,
        /// The driver's error.
        #[source]
        source: redis::RedisError,
    },
}

impl Error {
    /// Attaches `key` to a field decoding failure.
    pub fn from_field(key: &str, e: FieldError) -> Self {
        match e.kind {
            FieldErrorKind::Missing => Error::MissingField {
                key: key.to_owned(),
                field: e.field,
            },
            FieldErrorKind::Parse { value, reason } => Error::Decode {
                key: key.to_owned(),
                field: e.field,
                value,
                reason,
            },
        }
    }

    /// Classifies a driver error raised while working on `key`. An error
    /// reply inside a pipeline is classified as the same reply alone would
    /// be (the first one, where several commands failed), so that every
    /// read and write maps `WRONGTYPE` and `OOM` the same way.
    pub fn redis(key: &str, source: redis::RedisError) -> Self {
        let source = first_server_error(source);
        match source.code() {
            Some("OOM") => {
                return Error::OutOfMemory {
                    key: key.to_owned(),
                    detail: script_location_cut(source.detail().unwrap_or_default()).to_owned(),
                }
            }
            Some("WRONGTYPE") => {
                return Error::WrongType {
                    key: key.to_owned(),
                    detail: script_location_cut(source.detail().unwrap_or_default()).to_owned(),
                }
            }
            // A script checked the key it was about to touch: it names the
            // key (not the first key of the call) and what it found there.
            Some("WRONGTYPE_KEY") => {
                if let Some(e) = wrong_type_key(key, source.detail().unwrap_or_default()) {
                    return e;
                }
            }
            _ => {}
        }
        Error::Redis {
            key: key.to_owned(),
            source: without_script_location(source),
        }
    }

    /// True when the error came from the connection rather than the data:
    /// it was lost, refused, or did not answer in time. For a write this
    /// means its outcome is unknown: it may or may not have been applied
    /// (a retry of an `insert` may then find the entity, of an `incr` may
    /// count twice). Reads can be retried.
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Redis { source, .. }
            if source.is_io_error()
                || source.is_connection_dropped()
                || source.is_connection_refusal()
                || source.is_timeout())
    }

    /// True when no reply came within the response timeout: the server may
    /// still run the call (its outcome is unknown).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Redis { source, .. } if source.is_timeout())
    }

    /// True for a passing state of the server, in which nothing was done and
    /// a later attempt can succeed: still loading its data (`LOADING`), a
    /// cluster resharding or without a quorum (`TRYAGAIN`, `CLUSTERDOWN`,
    /// `MASTERDOWN`), or busy with a long script (`BUSY`).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Redis { source, .. }
        if matches!(
            source.code(),
            Some("LOADING" | "TRYAGAIN" | "CLUSTERDOWN" | "MASTERDOWN" | "BUSY")
        ))
    }
}

/// The first error reply of a failed pipeline or transaction as an error
/// of its own (its code and detail readable); any other error as it is.
fn first_server_error(e: redis::RedisError) -> redis::RedisError {
    // A single reply has a detail; a pipeline's failures have none.
    if e.detail().is_some() {
        return e;
    }
    match e.clone().into_server_errors() {
        Some(items) if !items.is_empty() => items[0].1.clone().into(),
        _ => e,
    }
}

/// "redis error on `key`: ...", or without a key (connecting) "redis
/// error: ...".
fn redis_message(key: &str, source: &redis::RedisError) -> String {
    if key.is_empty() {
        format!("redis error: {source}")
    } else {
        format!("redis error on `{key}`: {source}")
    }
}

/// The server's error without the location in a script it adds (`script:
/// <sha or function name>, on @user_script:NN.`): that names the runtime's
/// code, not the user's data, and would only puzzle.
/// The error of a script's `WRONGTYPE_KEY <found> <wanted> <key>` reply
/// (see the scripts' `wrong_type` checks): the key that holds the wrong
/// type, whatever key the call was made for.
pub(crate) fn wrong_type_key(call_key: &str, detail: &str) -> Option<Error> {
    let detail = script_location_cut(detail);
    let mut parts = detail.splitn(3, ' ');
    let (found, wanted, real) = (parts.next()?, parts.next()?, parts.next()?);
    let what = if call_key.is_empty() || call_key == real {
        "this call".to_owned()
    } else {
        format!("the call on `{call_key}`")
    };
    Some(Error::WrongType {
        key: real.to_owned(),
        detail: format!("it holds a {found}; {what} needs a {wanted} there (nothing was written)"),
    })
}

/// A server message without the script location Redis appends to an error
/// raised inside a script (` script: <sha or function>, on @user_...`).
fn script_location_cut(detail: &str) -> &str {
    match detail.find(" script: ") {
        Some(at) if detail.contains("@user_") => detail[..at].trim_end(),
        _ => detail,
    }
}

fn without_script_location(e: redis::RedisError) -> redis::RedisError {
    let Some(detail) = e.detail() else {
        return e;
    };
    match detail.find(" script: ") {
        Some(at) if detail.contains("@user_") => {
            let cleaned = detail[..at].trim_end().to_owned();
            redis::RedisError::from((e.kind(), "server error", cleaned))
        }
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(reply: &str) -> redis::RedisError {
        match redis::parse_redis_value(reply.as_bytes()).unwrap() {
            redis::Value::ServerError(e) => e.into(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_do_not_show_where_in_a_script_they_happened() {
        let e = Error::redis(
            "runner:{1}",
            server_error(
                "-ERR value is not an integer or out of range script: redis_entity_8b81_save, on @user_function:490.\r\n",
            ),
        );
        let text = e.to_string();
        assert!(text.contains("runner:{1}"), "{text}");
        assert!(
            text.contains("value is not an integer or out of range"),
            "{text}"
        );
        assert!(
            !text.contains("@user_function") && !text.contains("redis_entity_8b81"),
            "{text}"
        );
        // Without a key (connecting), no empty quotes.
        let e = Error::redis("", server_error("-ERR invalid password\r\n"));
        assert_eq!(
            e.to_string(),
            "redis error: ResponseError: invalid password"
        );
        // Out of memory, also from inside a function, is its own error.
        let e = Error::redis(
            "mem:7",
            server_error(
                "-OOM command not allowed when used memory > 'maxmemory'. script: redis_entity_8b81_save, on @user_function:12.\r\n",
            ),
        );
        match &e {
            Error::OutOfMemory { key, detail } => {
                assert_eq!(key, "mem:7");
                assert_eq!(
                    detail,
                    "command not allowed when used memory > 'maxmemory'."
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(!e.is_transient() && !e.is_connection(), "{e:?}");
        // Other errors keep every word.
        let e = Error::redis(
            "k",
            server_error("-BUSY Redis is busy running a script\r\n"),
        );
        assert!(e.is_transient(), "{e:?}");
        assert!(e.to_string().contains("busy running a script"), "{e}");
    }
}
