//! Scripts: the Lua the runtime runs on the server, and the one way to call
//! them.
//!
//! A [`Script`] owns its text and SHA1. [`invoke`] sends `EVALSHA` (or
//! `EVALSHA_RO` for a read-only script) and, when the server answers
//! `NOSCRIPT` (after `SCRIPT FLUSH` or a restart), resends the call as
//! `EVAL`, which also caches the script again; [`invoke_all`] does the same
//! for many calls in one pipeline. No other module sends a script.
//!
//! Read-only scripts start with `#!lua flags=no-writes` and go out as
//! `EVALSHA_RO`: they run on replicas and during `CLIENT PAUSE WRITE`.

pub(crate) mod write;

use redis::aio::ConnectionLike;
use redis::{FromRedisValue, RedisResult, Value};
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};

/// One Lua script: its text, SHA1 and whether it writes.
#[derive(Debug)]
pub(crate) struct Script {
    text: String,
    sha: String,
    read_only: bool,
}

impl Script {
    /// A script that may write.
    pub(crate) fn new(text: String) -> Self {
        let sha = redis::Script::new(&text).get_hash().to_owned();
        Script {
            text,
            sha,
            read_only: false,
        }
    }

    /// A script that never writes; its text must start with
    /// `#!lua flags=no-writes`, which the server checks.
    pub(crate) fn read_only(text: String) -> Self {
        debug_assert!(text.starts_with("#!lua flags=no-writes"));
        Script {
            read_only: true,
            ..Script::new(text)
        }
    }

    /// The script's SHA1, as `SCRIPT LOAD` would answer.
    #[cfg(test)]
    pub(crate) fn sha(&self) -> &str {
        &self.sha
    }

    /// A call of this script with `keys` and `args`.
    pub(crate) fn call(&self) -> Call<'_> {
        Call {
            script: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// The query, rank, relation and cache scripts: fixed texts.
pub(crate) static QUERY: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(include_str!("lua/query.lua").to_owned()));
/// The rank of a member in a sorted index, counting live entities only.
pub(crate) static RANK: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(include_str!("lua/rank.lua").to_owned()));
/// Relate or unrelate two entities on both sides.
pub(crate) static RELATION: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/relation.lua").to_owned()));
/// The read-through cache's lock and null-marker steps.
pub(crate) static CACHE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/cache.lua").to_owned()));

/// One call of a script: keys and arguments, not yet sent.
#[derive(Debug, Clone)]
pub(crate) struct Call<'s> {
    script: &'s Script,
    /// `KEYS`.
    pub keys: Vec<Vec<u8>>,
    /// `ARGV`.
    pub args: Vec<Vec<u8>>,
}

impl Call<'_> {
    /// Adds a key.
    pub(crate) fn key(mut self, k: impl AsRef<[u8]>) -> Self {
        self.keys.push(k.as_ref().to_vec());
        self
    }

    /// Adds an argument.
    pub(crate) fn arg(mut self, a: impl AsRef<[u8]>) -> Self {
        self.args.push(a.as_ref().to_vec());
        self
    }

    /// The command: by SHA1, or with the text (`EVAL`).
    fn command(&self, by_sha: bool) -> redis::Cmd {
        let name = match (by_sha, self.script.read_only) {
            (true, false) => "EVALSHA",
            (true, true) => "EVALSHA_RO",
            (false, false) => "EVAL",
            (false, true) => "EVAL_RO",
        };
        let mut c = redis::cmd(name);
        if by_sha {
            c.arg(&self.script.sha);
        } else {
            c.arg(&self.script.text);
        }
        c.arg(self.keys.len());
        for k in &self.keys {
            c.arg(k.as_slice());
        }
        for a in &self.args {
            c.arg(a.as_slice());
        }
        c
    }
}

/// The scripts a connection has sent the text of, so its server has them
/// cached: the first call of a script goes out as `EVAL` (which caches it)
/// instead of an `EVALSHA` certain to fail with `NOSCRIPT`. Shared by the
/// clones of a store.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sent(Arc<Mutex<HashSet<usize>>>);

impl Sent {
    fn id(script: &Script) -> usize {
        script as *const Script as usize
    }

    fn has(&self, script: &Script) -> bool {
        self.0
            .lock()
            .map(|s| s.contains(&Self::id(script)))
            .unwrap_or(false)
    }

    fn add(&self, script: &Script) {
        if let Ok(mut s) = self.0.lock() {
            s.insert(Self::id(script));
        }
    }
}

/// True when the server no longer has the script.
fn is_noscript(e: &redis::RedisError) -> bool {
    e.code() == Some("NOSCRIPT")
}

/// Sends one call: by SHA1, then with the text if the server lost it.
pub(crate) async fn invoke<T: FromRedisValue, C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    call: &Call<'_>,
) -> RedisResult<T> {
    if !sent.has(call.script) {
        let reply = call.command(false).query_async(conn).await;
        sent.add(call.script);
        return reply;
    }
    match call.command(true).query_async(conn).await {
        Err(e) if is_noscript(&e) => call.command(false).query_async(conn).await,
        other => other,
    }
}

/// Sends many calls in one pipeline (each stays atomic on its own) and
/// returns one reply per call, errors included as `Value::ServerError`.
/// Calls the server answered `NOSCRIPT` are resent with their text in a
/// second pipeline.
pub(crate) async fn invoke_all<C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    calls: &[Call<'_>],
) -> RedisResult<Vec<Value>> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    let mut first = HashSet::new();
    for c in calls {
        // The text goes once per script per pipeline; later calls of the
        // same script in the pipeline find it cached.
        let known = sent.has(c.script) || !first.insert(Sent::id(c.script));
        pipe.add_command(c.command(known));
    }
    let mut replies: Vec<Value> = pipe.query_async(conn).await?;
    for c in calls {
        sent.add(c.script);
    }
    let lost: Vec<usize> = (0..replies.len())
        .filter(|&i| matches!(&replies[i], Value::ServerError(e) if e.code() == "NOSCRIPT"))
        .collect();
    if !lost.is_empty() {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in &lost {
            pipe.add_command(calls[i].command(false));
        }
        let again: Vec<Value> = pipe.query_async(conn).await?;
        for (i, v) in lost.into_iter().zip(again) {
            replies[i] = v;
        }
    }
    Ok(replies)
}

/// A Lua string literal holding `s` exactly (any bytes).
pub(crate) fn lua_string(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_scripts_are_sent_as_ro_commands() {
        let cmd = QUERY.call().key("k").arg("a").command(true);
        let packed = String::from_utf8_lossy(&cmd.get_packed_command()).into_owned();
        assert!(packed.contains("EVALSHA_RO"), "{packed}");
        assert!(packed.contains(QUERY.sha()));
        let cmd = RELATION.call().command(false);
        let packed = String::from_utf8_lossy(&cmd.get_packed_command()).into_owned();
        assert!(packed.contains("\r\nEVAL\r\n"), "{packed}");
    }

    #[test]
    fn lua_strings_escape_quotes_backslashes_and_bytes() {
        assert_eq!(lua_string(b"user:"), "\"user:\"");
        assert_eq!(lua_string(b"a\"b\\c\n\xe4"), "\"a\\\"b\\\\c\\010\\228\"");
    }
}
