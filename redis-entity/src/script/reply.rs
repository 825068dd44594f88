//! The replies of the scripts, decoded: each script's raw `redis::Value`
//! turned into a typed result, next to the layout its Lua returns (the
//! layout is documented on each decoder). Callers add what only they know:
//! the key to name in an error, what to do next.

use crate::error::{Error, Result};
use redis::Value;

/// A text reply item: a bulk string (lossy UTF-8) or a simple string.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

/// What claim.lua answered a `claim` or `takeover`.
#[derive(Debug, PartialEq)]
pub(crate) enum ClaimReply {
    /// `{'granted'}`: the value was free and is now the entity's.
    Granted,
    /// `{'mine'}`: the entity owned it already.
    Mine,
    /// `{'held', owner, age ms}`: another entity's claim, this old.
    Held { owner: String, age_ms: u64 },
}

/// claim.lua's reply to a claim or takeover of the owner key `key`.
pub(crate) fn claim(reply: Value, key: &str) -> Result<ClaimReply> {
    let items = match reply {
        Value::Array(items) => items,
        other => {
            return Err(Error::UnexpectedReply {
                key: key.to_owned(),
                detail: format!("{other:?}"),
            })
        }
    };
    let word = items.first().and_then(text).unwrap_or_default();
    match word.as_str() {
        "granted" => Ok(ClaimReply::Granted),
        "mine" => Ok(ClaimReply::Mine),
        "held" => Ok(ClaimReply::Held {
            owner: items.get(1).and_then(text).unwrap_or_default(),
            age_ms: items
                .get(2)
                .and_then(text)
                .and_then(|a| a.parse().ok())
                .unwrap_or(0),
        }),
        _ => Err(Error::UnexpectedReply {
            key: key.to_owned(),
            detail: format!("{items:?}"),
        }),
    }
}

/// The refusal of a write marked "keep" (a write script's reply
/// `{'claim', value...}`): the stored escaped value of each unique index of
/// the type, in index order (`None` for none, `''` in the reply). `None`
/// for any other reply.
pub(crate) fn claim_refusal(reply: &Value) -> Option<Vec<Option<Vec<u8>>>> {
    let Value::Array(items) = reply else {
        return None;
    };
    if items.first().and_then(text).as_deref() != Some("claim") {
        return None;
    }
    Some(
        items[1..]
            .iter()
            .map(|v| match v {
                Value::BulkString(b) if !b.is_empty() => Some(b.clone()),
                _ => None,
            })
            .collect(),
    )
}

/// What cache.lua answered a `get`.
#[derive(Debug, PartialEq)]
pub(crate) enum CacheLookup {
    /// `{1, value}`: a hit.
    Hit(Vec<u8>),
    /// `{2, value}`: a stale hit; this caller now holds the lock and rebuilds.
    StaleMine(Vec<u8>),
    /// `{3}`: a miss; this caller holds the lock and loads.
    MissMine,
    /// `{0}`: a miss another caller is loading.
    MissOther,
}

/// cache.lua's reply to a `get`; `None` for a reply of another shape.
pub(crate) fn cache_lookup(reply: Value) -> Option<CacheLookup> {
    let Value::Array(items) = reply else {
        return None;
    };
    let mut it = items.into_iter();
    let code = match it.next()? {
        Value::Int(n) => n,
        _ => return None,
    };
    let mut value = || match it.next() {
        Some(Value::BulkString(b)) => Some(b),
        _ => None,
    };
    Some(match code {
        1 => CacheLookup::Hit(value()?),
        2 => CacheLookup::StaleMine(value()?),
        3 => CacheLookup::MissMine,
        _ => CacheLookup::MissOther,
    })
}

/// What cache.lua answered a `put`.
#[derive(Debug, PartialEq)]
pub(crate) enum CachePut {
    /// `{1}`: the result is cached.
    Stored,
    /// `{0, value}` / `{0}`: the lock was no longer this caller's: nothing
    /// stored; the value cached now, if any.
    Fenced(Option<Vec<u8>>),
}

/// cache.lua's reply to a `put`; `None` for a reply of another shape.
pub(crate) fn cache_put(reply: Value) -> Option<CachePut> {
    let Value::Array(items) = reply else {
        return None;
    };
    let mut it = items.into_iter();
    match it.next()? {
        Value::Int(1) => Some(CachePut::Stored),
        Value::Int(0) => match it.next() {
            Some(Value::BulkString(b)) => Some(CachePut::Fenced(Some(b))),
            None | Some(Value::Nil) => Some(CachePut::Fenced(None)),
            _ => None,
        },
        _ => None,
    }
}

/// relation.lua's reply to an `add`, `{added, members that left...}`:
/// whether the member was new (1), and the members that left the set.
pub(crate) fn relation_added(reply: Value) -> (i64, Vec<String>) {
    let Value::Array(items) = reply else {
        return (0, Vec::new());
    };
    let added = match items.first() {
        Some(Value::Int(n)) => *n,
        _ => 0,
    };
    let left = items
        .iter()
        .skip(1)
        .filter_map(|v| match v {
            Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        })
        .collect();
    (added, left)
}

/// The other sides a delete or sweep script left to the client: its reply
/// `{n, entry, member, ...}` as (register entry, member) pairs; none for a
/// plain number.
pub(crate) fn away(reply: &Value) -> Vec<(String, String)> {
    let Value::Array(items) = reply else {
        return Vec::new();
    };
    items
        .get(1..)
        .unwrap_or_default()
        .chunks(2)
        .filter_map(|p| Some((text(p.first()?)?, text(p.get(1)?)?)))
        .collect()
}

/// A unit of work's refusal (lua/unit.lua): `UNIT_REFUSED <operation>
/// <the operation's own error>`, as the operation's index and its error.
pub(crate) fn unit_refusal(e: &redis::RedisError) -> Option<(usize, redis::RedisError)> {
    if e.code() != Some("UNIT_REFUSED") {
        return None;
    }
    let (op, inner) = e.detail()?.trim_start().split_once(' ')?;
    let op = op.parse().ok()?;
    // The operation's error as the server would have sent it alone.
    match redis::parse_redis_value(format!("-{inner}\r\n").as_bytes()) {
        Ok(Value::ServerError(inner)) => Some((op, inner.into())),
        _ => None,
    }
}

/// One page of a paged query.lua answer, `{matches..., ghosts..., ghost
/// count, cursor, '@page'}`: the matches as the script returned them
/// (ordered queries: each followed by its score), the next cursor ('' at
/// the end).
#[derive(Debug, PartialEq)]
pub(crate) struct QueryPage {
    /// The matches of this page.
    pub matches: Vec<String>,
    /// Members met whose entity has expired.
    pub ghosts: Vec<String>,
    /// How many matches the page found (a count's page returns only this).
    pub counted: u64,
    /// The cursor of the next page; empty when this was the last.
    pub cursor: String,
}

/// Whether a query.lua reply is one page of a paged answer (it ends with
/// the string `@page`, where a whole answer ends with its count).
pub(crate) fn is_query_page(reply: &Value) -> bool {
    matches!(reply, Value::Array(items)
        if matches!(items.last(), Some(Value::BulkString(b)) if b.as_slice() == b"@page"))
}

/// Takes out of a query.lua reply what it ends with (before `@page` in a
/// page): whether an entity of the type may have expired, and how many
/// entities of the type the space holds; what the store notes to choose
/// native commands (see `CallBudget`). `None` if the reply has neither.
pub(crate) fn take_query_sizes(reply: &mut Value) -> Option<(bool, u64)> {
    let paged = is_query_page(reply);
    let Value::Array(items) = reply else {
        return None;
    };
    let at = items.len().checked_sub(if paged { 3 } else { 2 })?;
    let both: Vec<Value> = items.drain(at..at + 2).collect();
    match both.as_slice() {
        [Value::Int(expiring), Value::Int(n)] => Some((*expiring == 1, u64::try_from(*n).ok()?)),
        _ => None,
    }
}

/// A paged query.lua reply; `Err` with what was wrong in it.
pub(crate) fn query_page(reply: Value) -> std::result::Result<QueryPage, String> {
    let Value::Array(mut items) = reply else {
        return Err(format!("{reply:?}"));
    };
    items.pop();
    let cursor = bulk_text(items.pop().unwrap_or(Value::Nil))?;
    let counted = match items.pop() {
        Some(Value::Int(n)) => u64::try_from(n).map_err(|e| e.to_string())?,
        other => return Err(format!("match count {other:?}")),
    };
    let nghosts = match items.pop() {
        Some(Value::Int(n)) => n as usize,
        other => return Err(format!("ghost count {other:?}")),
    };
    let (matches, ghosts) = members_and_ghosts(items, nghosts)?;
    Ok(QueryPage {
        matches,
        ghosts,
        counted,
        cursor,
    })
}

/// A bulk string's text.
fn bulk_text(v: Value) -> std::result::Result<String, String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b).map_err(|e| e.to_string()),
        other => Err(format!("{other:?}")),
    }
}

/// The members of a query.lua reply, then its last `nghosts` (the ghosts),
/// as texts.
fn members_and_ghosts(
    mut items: Vec<Value>,
    nghosts: usize,
) -> std::result::Result<(Vec<String>, Vec<String>), String> {
    if nghosts > items.len() {
        return Err(format!("{nghosts} ghosts in a reply of {}", items.len()));
    }
    let texts = |vs: Vec<Value>| {
        vs.into_iter()
            .map(bulk_text)
            .collect::<std::result::Result<Vec<_>, _>>()
    };
    let ghosts = texts(items.split_off(items.len() - nghosts))?;
    Ok((texts(items)?, ghosts))
}

/// query.lua's reply, `{page members..., ghosts..., ghost count, total}`,
/// split (the members as the script returned them: with scores, each
/// followed by its score).
#[derive(Debug, PartialEq)]
pub(crate) struct QueryReply {
    /// The page, in the script's order.
    pub page: Vec<String>,
    /// Members met whose entity has expired.
    pub ghosts: Vec<String>,
    /// The count of matches, ignoring offset and limit.
    pub total: u64,
}

/// query.lua's reply; `Err` with what was wrong in it.
pub(crate) fn query(reply: Value) -> std::result::Result<QueryReply, String> {
    let Value::Array(mut items) = reply else {
        return Err(format!("{reply:?}"));
    };
    // The counts last (see query.lua).
    let total = match items.pop() {
        Some(Value::Int(n)) => n as u64,
        other => return Err(format!("{other:?}")),
    };
    let nghosts = match items.pop() {
        Some(Value::Int(n)) => n as usize,
        other => return Err(format!("{other:?}")),
    };
    let (page, ghosts) = members_and_ghosts(items, nghosts)?;
    Ok(QueryReply {
        page,
        ghosts,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(t: &str) -> Value {
        Value::BulkString(t.as_bytes().to_vec())
    }

    #[test]
    fn texts_are_bulk_or_simple_strings() {
        assert_eq!(text(&bulk("a")), Some("a".into()));
        assert_eq!(text(&Value::SimpleString("OK".into())), Some("OK".into()));
        assert_eq!(text(&Value::Int(1)), None);
    }

    #[test]
    fn claim_replies_are_read() {
        let claim =
            |items: &[&str]| claim(Value::Array(items.iter().map(|t| bulk(t)).collect()), "k");
        assert_eq!(claim(&["granted"]).unwrap(), ClaimReply::Granted);
        assert_eq!(claim(&["mine"]).unwrap(), ClaimReply::Mine);
        assert_eq!(
            claim(&["held", "9", "12000"]).unwrap(),
            ClaimReply::Held {
                owner: "9".into(),
                age_ms: 12_000
            }
        );
        assert!(claim(&["what"]).is_err());
        assert!(super::claim(Value::Int(1), "k").is_err());
    }

    #[test]
    fn a_claim_refusal_lists_the_stored_unique_values() {
        let reply = Value::Array(vec![bulk("claim"), bulk("a@x"), bulk("")]);
        assert_eq!(
            claim_refusal(&reply),
            Some(vec![Some(b"a@x".to_vec()), None])
        );
        assert_eq!(claim_refusal(&Value::Int(1)), None);
        assert_eq!(claim_refusal(&Value::Array(vec![Value::Int(1)])), None);
    }

    #[test]
    fn cache_lookups_are_read_by_their_code() {
        let reply = |items: Vec<Value>| cache_lookup(Value::Array(items));
        assert_eq!(
            reply(vec![Value::Int(1), bulk("v")]),
            Some(CacheLookup::Hit(b"v".to_vec()))
        );
        assert_eq!(
            reply(vec![Value::Int(2), bulk("v")]),
            Some(CacheLookup::StaleMine(b"v".to_vec()))
        );
        assert_eq!(reply(vec![Value::Int(3)]), Some(CacheLookup::MissMine));
        assert_eq!(reply(vec![Value::Int(0)]), Some(CacheLookup::MissOther));
        assert_eq!(reply(vec![Value::Int(1)]), None);
        assert_eq!(reply(vec![bulk("1")]), None);
        assert_eq!(cache_lookup(Value::Int(1)), None);
    }

    #[test]
    fn cache_puts_are_stored_or_fenced() {
        let reply = |items: Vec<Value>| cache_put(Value::Array(items));
        assert_eq!(reply(vec![Value::Int(1)]), Some(CachePut::Stored));
        assert_eq!(
            reply(vec![Value::Int(0), bulk("n")]),
            Some(CachePut::Fenced(Some(b"n".to_vec())))
        );
        assert_eq!(reply(vec![Value::Int(0)]), Some(CachePut::Fenced(None)));
        assert_eq!(
            reply(vec![Value::Int(0), Value::Nil]),
            Some(CachePut::Fenced(None))
        );
        assert_eq!(reply(vec![Value::Int(0), Value::Int(2)]), None);
        assert_eq!(reply(vec![Value::Int(2)]), None);
        assert_eq!(cache_put(Value::Nil), None);
    }

    #[test]
    fn a_relation_add_answers_added_and_the_members_that_left() {
        let reply = Value::Array(vec![Value::Int(1), bulk("3"), bulk("4")]);
        assert_eq!(relation_added(reply), (1, vec!["3".into(), "4".into()]));
        assert_eq!(
            relation_added(Value::Array(vec![Value::Int(0)])),
            (0, vec![])
        );
        assert_eq!(relation_added(Value::Int(1)), (0, vec![]));
    }

    #[test]
    fn a_delete_leaves_the_other_sides_as_entry_member_pairs() {
        let reply = Value::Array(vec![
            Value::Int(1),
            bulk("e1"),
            bulk("7"),
            Value::SimpleString("e2".into()),
            bulk("8"),
            bulk("odd"),
        ]);
        assert_eq!(
            away(&reply),
            [("e1".into(), "7".into()), ("e2".into(), "8".into())]
        );
        assert!(away(&Value::Int(1)).is_empty());
        assert!(away(&Value::Array(vec![])).is_empty(), "no panic");
    }

    #[test]
    fn a_unit_refusal_is_the_operation_and_its_own_error() {
        let refusal = |text: &str| -> redis::RedisError {
            match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()) {
                Ok(Value::ServerError(e)) => e.into(),
                other => panic!("{other:?}"),
            }
        };
        let (op, inner) = unit_refusal(&refusal("UNIT_REFUSED 4 CONDITION_FAILED 0 =1")).unwrap();
        assert_eq!(op, 4);
        assert_eq!(
            (inner.code(), inner.detail()),
            (Some("CONDITION_FAILED"), Some("0 =1"))
        );
        let (_, wrong) = unit_refusal(&refusal("UNIT_REFUSED 0 WRONGTYPE Operation")).unwrap();
        assert_eq!(wrong.code(), Some("WRONGTYPE"));
        assert!(unit_refusal(&refusal("CONDITION_FAILED 0 -")).is_none());
        assert!(unit_refusal(&refusal("UNIT_REFUSED x y")).is_none());
    }

    #[test]
    fn a_query_reply_ends_with_the_ghost_count_and_the_total() {
        let reply = Value::Array(vec![
            bulk("3"),
            bulk("5"),
            bulk("9"),
            Value::Int(1),
            Value::Int(7),
        ]);
        assert_eq!(
            query(reply),
            Ok(QueryReply {
                page: vec!["3".into(), "5".into()],
                ghosts: vec!["9".into()],
                total: 7,
            })
        );
        assert!(query(Value::Array(vec![Value::Int(3), Value::Int(0)])).is_err());
        assert!(query(Value::Array(vec![Value::Int(0)])).is_err());
        assert!(query(Value::Array(vec![Value::Int(1), Value::Int(0), bulk("x")])).is_err());
        let not_utf8 = Value::Array(vec![
            Value::BulkString(vec![0xff]),
            Value::Int(0),
            Value::Int(1),
        ]);
        assert!(query(not_utf8).is_err());
        assert!(query(Value::Nil).is_err());
    }
}
