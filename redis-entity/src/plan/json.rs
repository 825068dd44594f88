//! The `json` layout: the document of an entity, its columns, and updates
//! applied to it on the client (the read half of a compare-and-set).

use crate::error::{Error, Result};
use crate::schema::condition::{self, Spec, Test};
use crate::schema::entity::{EntityDesc, Row};
use crate::schema::update_op::UpdateOp;

/// Splits a `json` layout document into per-column JSON texts.
pub(crate) fn json_columns(
    desc: &EntityDesc,
    key: &str,
    doc: &[u8],
) -> Result<Vec<Option<Vec<u8>>>> {
    let parsed: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_slice(doc).map_err(|e| Error::Decode {
            key: key.to_owned(),
            field: "(document)",
            value: crate::error::shown(doc),
            reason: e.to_string(),
        })?;
    Ok(desc
        .columns
        .iter()
        .map(|c| parsed.get(c.name).map(|r| r.get().as_bytes().to_vec()))
        .collect())
}

/// Checks the conditions of a write on the `json` layout document `doc`
/// (read for the compare-and-set that follows, so they hold on what the
/// write replaces): [`Error::ConditionFailed`] for the first that does not.
/// Values compare as JSON (`5` and `5.0` are the same number for the
/// comparisons; `is` compares the JSON values).
pub(crate) fn check_conditions(
    desc: &EntityDesc,
    key: &str,
    doc: &[u8],
    conditions: &[Spec],
) -> Result<()> {
    if conditions.is_empty() {
        return Ok(());
    }
    let stored = json_columns(desc, key, doc)?;
    let parse = |v: &[u8]| serde_json::from_slice::<serde_json::Value>(v).ok();
    for c in conditions {
        let found = stored.get(c.col).cloned().flatten();
        let holds = match &c.test {
            Test::Is(want) | Test::IsNot(want) => {
                let same = match (&found, want) {
                    (Some(f), Some(w)) => parse(f).is_some() && parse(f) == parse(w),
                    (None, None) => true,
                    _ => false,
                };
                same == matches!(c.test, Test::Is(_))
            }
            Test::Compare { cmp, bound, delta } => {
                let number = |v: &serde_json::Value| v.is_number().then(|| v.to_string());
                let value = match (&found, delta) {
                    (Some(f), None) => parse(f).as_ref().and_then(number),
                    (f, Some(d)) => {
                        let f = match f {
                            Some(f) => parse(f).as_ref().and_then(number),
                            None => Some("0".to_owned()),
                        };
                        f.and_then(|f| plus(&f, d))
                    }
                    (None, None) => None,
                };
                value
                    .and_then(|v| condition::compare_numbers(v.as_bytes(), bound))
                    .is_some_and(|o| cmp.holds(o))
            }
        };
        if !holds {
            return Err(condition::failed(key, c, found.as_deref()));
        }
    }
    Ok(())
}

/// A stored number plus a bounded increment's delta, as decimal text.
fn plus(stored: &str, delta: &[u8]) -> Option<String> {
    let delta = std::str::from_utf8(delta).ok()?;
    match (stored.parse::<i128>(), delta.parse::<i128>()) {
        (Ok(a), Ok(b)) => Some((a + b).to_string()),
        _ => Some((stored.parse::<f64>().ok()? + delta.parse::<f64>().ok()?).to_string()),
    }
}

/// Applies `ops` to a parsed `json` layout document (the read half of a
/// compare-and-set update). Errors name the key and field.
pub(crate) fn apply_json_ops(
    desc: &EntityDesc,
    key: &str,
    doc: &[u8],
    ops: &[UpdateOp],
) -> Result<Vec<u8>> {
    let mut map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(doc).map_err(|e| Error::Decode {
            key: key.to_owned(),
            field: "(document)",
            value: crate::error::shown(doc),
            reason: e.to_string(),
        })?;
    for op in ops {
        match op {
            UpdateOp::Set { col, value } => {
                let name = desc.columns[*col].name;
                match value {
                    Some(v) => {
                        let v = serde_json::from_slice(v).map_err(|e| Error::Encode {
                            field: name,
                            reason: e.to_string(),
                        })?;
                        map.insert(name.to_owned(), v);
                    }
                    None => {
                        map.remove(name);
                    }
                }
            }
            UpdateOp::Incr { col, delta, float } => {
                let name = desc.columns[*col].name;
                let current = map.get(name).cloned().unwrap_or(serde_json::Value::from(0));
                let bad = |reason: String| Error::Decode {
                    key: key.to_owned(),
                    field: name,
                    value: current.to_string(),
                    reason,
                };
                let delta_s = String::from_utf8_lossy(delta);
                let next = if *float {
                    let d: f64 = delta_s.parse().map_err(|_| bad("bad delta".into()))?;
                    let c = current.as_f64().ok_or_else(|| bad("not a number".into()))?;
                    serde_json::Number::from_f64(c + d)
                        .map(serde_json::Value::Number)
                        .ok_or_else(|| bad("increment gives a non-finite number".into()))?
                } else if let (Some(c), Ok(d)) = (current.as_i64(), delta_s.parse::<i64>()) {
                    serde_json::Value::from(
                        c.checked_add(d)
                            .ok_or_else(|| bad("increment overflows".into()))?,
                    )
                } else if let (Some(c), Ok(d)) = (current.as_u64(), delta_s.parse::<u64>()) {
                    serde_json::Value::from(
                        c.checked_add(d)
                            .ok_or_else(|| bad("increment overflows".into()))?,
                    )
                } else {
                    return Err(bad("not an integer".into()));
                };
                map.insert(name.to_owned(), next);
            }
            _ => {}
        }
    }
    serde_json::to_vec(&map).map_err(|e| Error::Encode {
        field: "(document)",
        reason: e.to_string(),
    })
}

/// The JSON document of the `json` layout: `{"column": <json text>, ...}`.
/// Columns of that layout are encoded as JSON text by their codecs, so the
/// document is assembled without re-parsing them.
pub(crate) fn json_document(desc: &EntityDesc, row: &Row) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.push(b'{');
    let mut first = true;
    for (c, v) in desc.columns.iter().zip(&row.columns) {
        if let Some(v) = v {
            if !first {
                out.push(b',');
            }
            first = false;
            // Field names are Rust identifiers or checked `rename`s; still escape them properly.
            out.extend_from_slice(serde_json::to_string(c.name).unwrap_or_default().as_bytes());
            out.push(b':');
            out.extend_from_slice(v);
        }
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::*;

    #[test]
    fn the_document_holds_present_columns_as_json_text() {
        let doc = json_document(&DOC, &row(&[Some("\"Hi\""), Some("2.5")], &[]));
        assert_eq!(doc, b(r#"{"title":"Hi","rank":2.5}"#));
        let doc = json_document(&DOC, &row(&[None, Some("1")], &[]));
        assert_eq!(doc, b(r#"{"rank":1}"#));
        assert_eq!(json_document(&DOC, &row(&[None, None], &[])), b("{}"));
    }

    #[test]
    fn columns_come_back_from_the_document() {
        let cols = json_columns(&DOC, "doc:{d1}", br#"{"title":"Hi","other":true}"#).unwrap();
        assert_eq!(cols, [Some(b("\"Hi\"")), None]);
        match json_columns(&DOC, "doc:{d1}", b"[1]") {
            Err(Error::Decode { key, field, .. }) => {
                assert_eq!((&*key, field), ("doc:{d1}", "(document)"))
            }
            other => panic!("{other:?}"),
        }
    }

    fn apply(doc: &str, ops: &[UpdateOp]) -> Result<serde_json::Value> {
        let out = apply_json_ops(&DOC, "doc:{d1}", doc.as_bytes(), ops)?;
        Ok(serde_json::from_slice(&out).unwrap())
    }

    fn incr(delta: &str, float: bool) -> UpdateOp {
        UpdateOp::Incr {
            col: 1,
            delta: b(delta),
            float,
        }
    }

    #[test]
    fn updates_apply_to_the_document() {
        let set = UpdateOp::Set {
            col: 0,
            value: Some(b("\"New\"")),
        };
        let unset = UpdateOp::Set {
            col: 1,
            value: None,
        };
        assert_eq!(
            apply(r#"{"title":"Old","rank":1}"#, &[set, unset]).unwrap(),
            serde_json::json!({"title": "New"})
        );
        assert_eq!(
            apply(r#"{"title":"T","rank":1}"#, &[incr("2", false)]).unwrap(),
            serde_json::json!({"title": "T", "rank": 3})
        );
        assert_eq!(
            apply(r#"{"title":"T"}"#, &[incr("0.5", true)]).unwrap(),
            serde_json::json!({"title": "T", "rank": 0.5})
        );
        // Map changes are not part of the document.
        let map = UpdateOp::MapDel {
            map: 0,
            key: b("n1"),
        };
        assert_eq!(
            apply(r#"{"title":"T"}"#, &[map]).unwrap(),
            serde_json::json!({"title": "T"})
        );
    }

    #[test]
    fn a_bad_update_names_the_key_and_field() {
        for (doc, op, why) in [
            (r#"{"rank":"x"}"#, incr("1", false), "not an integer"),
            (r#"{"rank":"x"}"#, incr("1", true), "not a number"),
            (r#"{"rank":1}"#, incr("one", true), "bad delta"),
            (
                r#"{"rank":9223372036854775807}"#,
                incr("1", false),
                "increment overflows",
            ),
        ] {
            match apply(doc, &[op]) {
                Err(Error::Decode {
                    key, field, reason, ..
                }) => {
                    assert_eq!((&*key, field, &*reason), ("doc:{d1}", "rank", why), "{doc}")
                }
                other => panic!("{doc}: {other:?}"),
            }
        }
        let bad = UpdateOp::Set {
            col: 0,
            value: Some(b("not json")),
        };
        match apply("{}", &[bad]) {
            Err(Error::Encode { field, .. }) => assert_eq!(field, "title"),
            other => panic!("{other:?}"),
        }
    }
}
