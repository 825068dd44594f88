//! Reading entities: the commands that read one entity and the decoding of
//! their replies into a [`Row`]. Pure: no I/O.

use crate::error::{Error, Result};
use crate::keyspace::EntityKeys;
use crate::schema::entity::{EntityDesc, Layout, Row};
use redis::Value;

/// The commands that read one entity; their replies go to [`decode_read`].
pub(crate) fn read(desc: &EntityDesc, keys: &EntityKeys, pipe: &mut redis::Pipeline) {
    match desc.layout {
        Layout::Hash => {
            pipe.cmd("HGETALL").arg(&keys.base);
        }
        Layout::Strings => {
            pipe.cmd("MGET").arg(&keys.base).arg(&keys.columns);
        }
        Layout::Json => {
            pipe.cmd("GET").arg(&keys.base);
        }
    }
    for m in &keys.maps {
        pipe.cmd("HGETALL").arg(m);
    }
}

pub(crate) fn bytes(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::VerbatimString { text, .. } => Some(text.into_bytes()),
        _ => None,
    }
}

fn pairs(key: &str, v: Value) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    match v {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                if let (Some(k), Some(v)) = (bytes(k), bytes(v)) {
                    out.push((k, v));
                }
            }
            Ok(out)
        }
        Value::Map(items) => Ok(items
            .into_iter()
            .filter_map(|(k, v)| Some((bytes(k)?, bytes(v)?)))
            .collect()),
        Value::Nil => Ok(Vec::new()),
        Value::ServerError(e) => Err(Error::redis(key, e.into())),
        other => Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: format!("{other:?}"),
        }),
    }
}

/// Decodes the replies of [`read`] into a row; `None` when the entity does not exist.
pub(crate) fn decode_read(
    desc: &EntityDesc,
    keys: &EntityKeys,
    replies: &mut impl Iterator<Item = Value>,
) -> Result<Option<Row>> {
    let first = replies.next().unwrap_or(Value::Nil);
    let mut map_replies = Vec::with_capacity(desc.maps.len());
    for (i, _) in desc.maps.iter().enumerate() {
        let v = replies.next().unwrap_or(Value::Nil);
        map_replies.push(pairs(&keys.maps[i], v)?);
    }
    let columns = match desc.layout {
        Layout::Hash => {
            let fields = pairs(&keys.base, first)?;
            if fields.is_empty() {
                return Ok(None);
            }
            // Move each stored value into its column; fields are usually in
            // column order, so the guess `i` is checked first.
            let mut columns = vec![None; desc.columns.len()];
            for (i, (k, v)) in fields.into_iter().enumerate() {
                let hit = match desc.columns.get(i) {
                    Some(c) if c.name.as_bytes() == k.as_slice() => Some(i),
                    _ => desc
                        .columns
                        .iter()
                        .position(|c| c.name.as_bytes() == k.as_slice()),
                };
                if let Some(c) = hit {
                    columns[c] = Some(v);
                }
            }
            columns
        }
        Layout::Strings => {
            let values = match first {
                Value::Array(items) => items,
                Value::ServerError(e) => return Err(Error::redis(&keys.base, e.into())),
                other => {
                    return Err(Error::UnexpectedReply {
                        key: keys.base.clone(),
                        detail: format!("{other:?}"),
                    })
                }
            };
            let mut values: Vec<Option<Vec<u8>>> = values.into_iter().map(bytes).collect();
            if values.iter().all(Option::is_none) {
                return Ok(None);
            }
            values.remove(0); // the presence marker
            values.resize(desc.columns.len(), None);
            values
        }
        Layout::Json => {
            let doc = match first {
                Value::Nil => return Ok(None),
                Value::ServerError(e) => return Err(Error::redis(&keys.base, e.into())),
                other => bytes(other).ok_or_else(|| Error::UnexpectedReply {
                    key: keys.base.clone(),
                    detail: "not a string".into(),
                })?,
            };
            crate::plan::json::json_columns(desc, &keys.base, &doc)?
        }
    };
    Ok(Some(Row {
        columns,
        maps: map_replies,
    }))
}
