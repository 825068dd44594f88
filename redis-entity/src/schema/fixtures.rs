//! Entity descriptions shared by the unit tests of the pure layers, written
//! the way the derive writes them.

use crate::schema::entity::{
    ColumnDesc, ColumnForm, EntityDesc, IndexDesc, IndexKind, IndexSource, Layout, MapDesc, Row,
};

/// The score of a number stored as text (what `SortScore::score_of` does
/// for `f64`).
pub(crate) fn number(raw: &[u8]) -> Option<f64> {
    std::str::from_utf8(raw).ok()?.parse().ok()
}

const fn col(name: &'static str, optional: bool, ttl: Option<u64>) -> ColumnDesc {
    ColumnDesc {
        name,
        rust_type: "String",
        optional,
        ttl,
        form: ColumnForm::Text,
        alias: None,
    }
}

const fn index(field: &'static str, source: IndexSource, kind: IndexKind) -> IndexDesc {
    IndexDesc {
        field,
        source,
        kind,
        score: None,
    }
}

/// Column positions of [`USER`].
pub(crate) const USERNAME: usize = 0;
pub(crate) const COUNTRY: usize = 1;
pub(crate) const RATING: usize = 2;
pub(crate) const EMAIL: usize = 3;
pub(crate) const VERSION: usize = 4;
pub(crate) const TAGS: usize = 5;

/// `User` (hash layout, `user:{<id>}`): a unique `username`, an equality
/// index on `country`, a sorted `rating`, a prefix index on `email`, tags,
/// a `#[version]` and a `#[hash] prefs` map.
pub(crate) static USER: EntityDesc = EntityDesc {
    type_name: "User",
    prefix: "user",
    layout: Layout::Hash,
    key_pattern: "user:{<id>}",
    key_head: "user:",
    key_tail: "",
    pk_fields: &["id"],
    numeric_pk: true,
    columns: &[
        col("username", false, None),
        col("country", false, None),
        col("rating", false, None),
        col("email", true, None),
        col("version", false, None),
        ColumnDesc {
            form: ColumnForm::Tags,
            ..col("tags", true, None)
        },
    ],
    maps: &[MapDesc {
        name: "prefs",
        rust_type: "HashMap<String, String>",
    }],
    indexes: &[
        index("username", IndexSource::Column(USERNAME), IndexKind::Unique),
        index("country", IndexSource::Column(COUNTRY), IndexKind::Equality),
        IndexDesc {
            score: Some(number),
            ..index("rating", IndexSource::Column(RATING), IndexKind::Sorted)
        },
        index("email", IndexSource::Column(EMAIL), IndexKind::Prefix),
        index("tags", IndexSource::Column(TAGS), IndexKind::Tags),
    ],
    pk_index_value: |_, _| None,
    version: Some(VERSION),
    ttl: None,
    shards: 16,
    group: None,
};

/// `Session` (strings layout, `session:{<token>}`): `code` has a TTL of its
/// own, `user` is indexed, `rev` is the `#[version]`; new sessions live an hour.
pub(crate) static SESSION: EntityDesc = EntityDesc {
    type_name: "Session",
    prefix: "session",
    layout: Layout::Strings,
    key_pattern: "session:{<token>}",
    key_head: "session:",
    key_tail: "",
    pk_fields: &["token"],
    numeric_pk: false,
    columns: &[
        col("user", false, None),
        col("code", true, Some(60)),
        col("hits", false, None),
        col("rev", false, None),
    ],
    maps: &[],
    indexes: &[index("user", IndexSource::Column(0), IndexKind::Equality)],
    pk_index_value: |_, _| None,
    version: Some(3),
    ttl: Some(3600),
    shards: 16,
    group: None,
};

/// `Doc` (json layout, `doc:{<id>}`) with a `#[hash] notes` map; no indexes.
pub(crate) static DOC: EntityDesc = EntityDesc {
    type_name: "Doc",
    prefix: "doc",
    layout: Layout::Json,
    key_pattern: "doc:{<id>}",
    key_head: "doc:",
    key_tail: "",
    pk_fields: &["id"],
    numeric_pk: false,
    columns: &[col("title", false, None), col("rank", true, None)],
    maps: &[MapDesc {
        name: "notes",
        rust_type: "HashMap<String, String>",
    }],
    indexes: &[],
    pk_index_value: |_, _| None,
    version: None,
    ttl: None,
    shards: 16,
    group: None,
};

/// `Note` (hash layout, `note:{<id>}`): every column may be absent (so a
/// stored note may hold only the presence marker), and `title` was stored
/// as `name` before (`alias`); no indexes.
pub(crate) static NOTE: EntityDesc = EntityDesc {
    type_name: "Note",
    prefix: "note",
    layout: Layout::Hash,
    key_pattern: "note:{<id>}",
    key_head: "note:",
    key_tail: "",
    pk_fields: &["id"],
    numeric_pk: true,
    columns: &[
        ColumnDesc {
            alias: Some("name"),
            ..col("title", true, None)
        },
        col("body", true, None),
    ],
    maps: &[],
    indexes: &[],
    pk_index_value: |_, _| None,
    version: None,
    ttl: None,
    shards: 16,
    group: None,
};

/// `Memo` (hash layout, `memo:{<id>}`): a required `text`, and two
/// optional columns that both name `name` as their old name (the first
/// reads it); no indexes.
pub(crate) static MEMO: EntityDesc = EntityDesc {
    columns: &[
        col("text", false, None),
        ColumnDesc {
            alias: Some("name"),
            ..col("title", true, None)
        },
        ColumnDesc {
            alias: Some("name"),
            ..col("subject", true, None)
        },
    ],
    type_name: "Memo",
    prefix: "memo",
    key_pattern: "memo:{<id>}",
    key_head: "memo:",
    ..NOTE
};

/// `Order` (hash layout, `order:{<shop>_<n>}`): the pk field `shop` is
/// indexed, and so is the `status` column.
pub(crate) static ORDER: EntityDesc = EntityDesc {
    type_name: "Order",
    prefix: "order",
    layout: Layout::Hash,
    key_pattern: "order:{<shop>_<n>}",
    key_head: "order:",
    key_tail: "",
    pk_fields: &["shop", "n"],
    numeric_pk: false,
    columns: &[col("status", false, None)],
    maps: &[],
    indexes: &[
        index("shop", IndexSource::Pk, IndexKind::Equality),
        index("status", IndexSource::Column(0), IndexKind::Equality),
    ],
    // The derive parses the member back into the pk and encodes the field.
    pk_index_value: |member, field| {
        let (shop, n) = member.split_once('_')?;
        match field {
            "shop" => crate::schema::escape::unescape_with(shop, "").map(String::into_bytes),
            "n" => Some(n.as_bytes().to_vec()),
            _ => None,
        }
    },
    version: None,
    ttl: None,
    shards: 16,
    group: None,
};

/// `Account` (hash layout, `account:{<id>}`): a unique `email` and an
/// equality index on `country`; what the `verify` tests check.
pub(crate) static ACCOUNT: EntityDesc = EntityDesc {
    type_name: "Account",
    prefix: "account",
    layout: Layout::Hash,
    key_pattern: "account:{<id>}",
    key_head: "account:",
    key_tail: "",
    pk_fields: &["id"],
    numeric_pk: true,
    columns: &[col("email", false, None), col("country", false, None)],
    maps: &[],
    indexes: &[
        index("email", IndexSource::Column(0), IndexKind::Unique),
        index("country", IndexSource::Column(1), IndexKind::Equality),
    ],
    pk_index_value: |_, _| None,
    version: None,
    ttl: None,
    shards: 16,
    group: None,
};

/// `Player` (hash layout, `player:{<id>}`): a sorted `score`, an optional
/// `name`; no `#[version]`, no map (a save of it is plain: plan/plain.rs).
pub(crate) static PLAYER: EntityDesc = EntityDesc {
    type_name: "Player",
    prefix: "player",
    layout: Layout::Hash,
    key_pattern: "player:{<id>}",
    key_head: "player:",
    key_tail: "",
    pk_fields: &["id"],
    numeric_pk: true,
    columns: &[col("name", true, None), col("score", false, None)],
    maps: &[],
    indexes: &[IndexDesc {
        score: Some(number),
        ..index("score", IndexSource::Column(1), IndexKind::Sorted)
    }],
    pk_index_value: |_, _| None,
    version: None,
    ttl: None,
    shards: 16,
    group: None,
};

/// Bytes of a text.
pub(crate) fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// A row from optional texts and map entries.
pub(crate) fn row(columns: &[Option<&str>], maps: &[&[(&str, &str)]]) -> Row {
    Row {
        columns: columns.iter().map(|c| c.map(b)).collect(),
        maps: maps
            .iter()
            .map(|m| m.iter().map(|(k, v)| (b(k), b(v))).collect())
            .collect(),
    }
}

/// The commands of a pipeline, each as its name and arguments.
pub(crate) fn commands(pipe: &redis::Pipeline) -> Vec<Vec<String>> {
    pipe.cmd_iter()
        .map(|c| {
            c.args_iter()
                .map(|a| match a {
                    redis::Arg::Simple(s) => String::from_utf8_lossy(s).into_owned(),
                    _ => "<cursor>".to_owned(),
                })
                .collect()
        })
        .collect()
}

/// A bulk string reply.
pub(crate) fn bulk(s: &str) -> redis::Value {
    redis::Value::BulkString(b(s))
}

/// An error reply as the server sends it (`-CODE detail`).
pub(crate) fn server_error(line: &str) -> redis::Value {
    redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).expect("an error reply")
}
