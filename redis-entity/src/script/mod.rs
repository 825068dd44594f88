//! Scripts: the Lua the runtime runs on the server, and the one way to call
//! them.
//!
//! A [`Script`] is a script (its text and SHA1) or a function of a library
//! (the write functions, one library per entity type, see [`write`]).
//! [`invoke`] sends a call by name (`EVALSHA`, `EVALSHA_RO`, `FCALL`); the
//! first call of a store sends the code with it (`EVAL`, or `FUNCTION LOAD`
//! in the same pipeline), and when the server lost it (`NOSCRIPT`, "Function
//! not found": a flush or a restart) the call is resent with its code.
//! [`invoke_all`] does the same for many calls in one pipeline. No other
//! module sends Lua.
//!
//! Read-only scripts start with `#!lua flags=no-writes`, which is what lets
//! the server run them during `CLIENT PAUSE WRITE` and on replicas, and go
//! out as `EVALSHA_RO`, which a replica, or an ACL user allowed only read
//! commands, accepts.

pub(crate) mod args;
pub(crate) mod fast;
pub(crate) mod reply;
pub(crate) mod words;
pub(crate) mod write;

use redis::aio::ConnectionLike;
use redis::{FromRedisValue, RedisResult, Value};
use std::collections::HashSet;
use std::sync::LazyLock;
pub(crate) use words::Words;

/// Lua code the server runs: a script sent with `EVALSHA` / `EVAL`, or a
/// function of a library loaded with `FUNCTION LOAD` and called with
/// `FCALL` (the write scripts: their library is set up once per server, so
/// a call pays only for its own work).
#[derive(Debug)]
pub(crate) struct Script {
    kind: Kind,
    read_only: bool,
}

#[derive(Debug)]
enum Kind {
    Eval {
        text: String,
        sha: String,
    },
    Function {
        name: String,
        library: &'static Library,
    },
}

/// A function library: its code, with its name in the `#!lua` line.
#[derive(Debug)]
pub(crate) struct Library {
    text: String,
}

impl Library {
    /// A library of `code`, named after the code's SHA1 so that two
    /// versions of a type never replace each other's functions (a rolling
    /// deploy runs both). Returns the library and its name.
    /// Function names in `code` start with `__LIB__`, replaced by the
    /// library's name.
    pub(crate) fn new(code: &str) -> (Self, String) {
        let hash = redis::Script::new(code).get_hash().to_owned();
        let name = format!("redis_entity_{}", &hash[..16]);
        let text = format!("#!lua name={name}\n{}", code.replace("__LIB__", &name));
        (Library { text }, name)
    }
}

impl Script {
    /// A script that may write.
    pub(crate) fn new(text: String) -> Self {
        let sha = redis::Script::new(&text).get_hash().to_owned();
        Script {
            kind: Kind::Eval { text, sha },
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

    /// Function `name` of `library`.
    pub(crate) fn function(library: &'static Library, name: String) -> Self {
        Script {
            kind: Kind::Function { name, library },
            read_only: false,
        }
    }

    /// What the server must have before a call: the script itself, or the
    /// function's library (its address identifies it).
    pub(crate) fn unit(&self) -> usize {
        match &self.kind {
            Kind::Eval { .. } => Sent::id(self),
            Kind::Function { library, .. } => Sent::id(*library),
        }
    }

    /// The command that gives the server this code, if calling by name
    /// does not (`EVAL` does; a library needs `FUNCTION LOAD`).
    fn load(&self) -> Option<redis::Cmd> {
        match &self.kind {
            Kind::Eval { .. } => None,
            Kind::Function { library, .. } => {
                let mut c = redis::cmd("FUNCTION");
                c.arg("LOAD").arg(&library.text);
                Some(c)
            }
        }
    }

    /// The script's SHA1, as `SCRIPT LOAD` would answer.
    #[cfg(test)]
    pub(crate) fn sha(&self) -> &str {
        match &self.kind {
            Kind::Eval { sha, .. } => sha,
            Kind::Function { .. } => "",
        }
    }

    /// The start of this function's call as the command it sends (`FCALL
    /// name numkeys`), with room for `words` more words of `bytes` bytes in
    /// all; `None` for a script (its command depends on whether the server
    /// has it: [`invoke`]).
    pub(crate) fn fcall(&self, numkeys: usize, words: usize, bytes: usize) -> Option<redis::Cmd> {
        let Kind::Function { name, .. } = &self.kind else {
            return None;
        };
        let mut c = redis::Cmd::with_capacity(3 + words, name.len() + 30 + bytes);
        c.arg(if self.read_only { "FCALL_RO" } else { "FCALL" })
            .arg(name.as_str())
            .arg(numkeys);
        Some(c)
    }

    /// A call of this script, its keys and arguments still to add: only
    /// `args` adds them, each script's in its own typed struct.
    fn call(&self) -> Call<'_> {
        Call {
            script: self,
            keys: Words::new(),
            args: Words::new(),
        }
    }
}

/// The query, rank, relation and cache scripts: fixed texts.
pub(crate) static QUERY: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(naming_calls(include_str!("lua/query.lua"))));
/// The rank of a member in a sorted index, counting live entities only.
pub(crate) static RANK: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(naming_calls(include_str!("lua/rank.lua"))));

/// A unique lookup and the owner's record in one call (one server),
/// without `call`: a wrong-typed key is named by the two plain reads the
/// store falls back to (store/lookup.rs).
pub(crate) static FIND_UNIQUE: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(include_str!("lua/find_unique.lua").to_owned()));

/// The query script over several shards of one cluster node: one call
/// per node instead of one per shard (see [`across_slots`]).
pub(crate) static QUERY_ACROSS: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(across_slots(include_str!("lua/query.lua"))));
/// The rank script over several shards of one cluster node.
pub(crate) static RANK_ACROSS: LazyLock<Script> =
    LazyLock::new(|| Script::read_only(across_slots(include_str!("lua/rank.lua"))));

/// A read-only script's text made into one that runs several of its calls,
/// each in its own slot of one cluster node (lua/across_slots.lua): the
/// text becomes the body of `one(KEYS, ARGV)`, and the script is flagged
/// `allow-cross-slot-keys`, which lets it read keys of the other slots
/// its node serves (and only those: any other key is refused).
fn across_slots(text: &str) -> String {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    debug_assert_eq!(first, "#!lua flags=no-writes");
    format!(
        "#!lua flags=no-writes,allow-cross-slot-keys\n{}local function one(KEYS, ARGV)\n{rest}\nend\n{}",
        include_str!("lua/naming_call.lua"),
        include_str!("lua/across_slots.lua")
    )
}

/// One call of `across` (a script made by [`across_slots`]) running
/// `calls` (calls of the script it was made from, each in one slot, all
/// served by one node); its reply lists theirs in order.
pub(crate) fn across_call(across: &'static Script, calls: &[Call<'_>]) -> Call<'static> {
    let mut call = across.call();
    call.args.push_number(calls.len());
    if let Some(first) = calls.first() {
        call.keys.extend_from(&first.keys);
    }
    for c in calls {
        call.args.push_number(c.keys.len());
        call.args.push_number(c.args.len());
        call.args.extend_from(&c.keys);
        call.args.extend_from(&c.args);
    }
    call
}

/// A writing script with `wrong_type` and `wrong_types`
/// (lua/key_types.lua, which the write libraries share) before its text.
fn checking_types(text: &str) -> String {
    format!("{}{text}", include_str!("lua/key_types.lua"))
}

/// `text`, a script starting with its `#!lua` line, with `shared` (Lua
/// code other scripts use too) defined right after that line.
fn after_flags(text: &str, shared: &str) -> String {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    format!("{first}\n{shared}{rest}")
}

/// A read script with `call` (lua/naming_call.lua) defined after its
/// `#!lua` line: its reads name a key of the wrong type.
fn naming_calls(text: &str) -> String {
    after_flags(text, include_str!("lua/naming_call.lua"))
}

/// A script with `memory_policy` and `evicts_any_key`
/// (lua/memory_policy.lua) defined after its `#!lua` line.
fn reading_memory_policy(text: &str) -> String {
    after_flags(text, include_str!("lua/memory_policy.lua"))
}
/// A script built on the two-phase steps of relations, timelines and
/// boards (lua/steps.lua, which unit libraries share), after `wrong_type`.
fn with_steps(text: &str) -> String {
    checking_types(&format!("{}{text}", include_str!("lua/steps.lua")))
}
/// Relate or unrelate two entities on both sides.
pub(crate) static RELATION: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_steps(include_str!("lua/relation.lua"))));
/// One page of a deleted entity's large relation set taken out of the
/// other sides (lua/unlink.lua).
pub(crate) static UNLINK: LazyLock<Script> = LazyLock::new(|| {
    let shared = [
        include_str!("lua/naming_call.lua"),
        include_str!("lua/slot_tag.lua"),
    ];
    Script::new(after_flags(
        include_str!("lua/unlink.lua"),
        &shared.concat(),
    ))
});
/// Repair: removes a listed member, or a leftover key, of an entity that is gone.
pub(crate) static REPAIR: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/repair.lua").to_owned()));
/// The owner key of a unique value on a cluster: claim, takeover, release.
pub(crate) static CLAIM: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/claim.lua").to_owned()));
/// A post pushed onto many owners' timelines, every key checked first.
pub(crate) static TIMELINE: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_steps(include_str!("lua/timeline.lua"))));
/// The order of a post on a timeline that pulls (its number, noted).
pub(crate) static TIMELINE_ORDER: LazyLock<Script> =
    LazyLock::new(|| Script::new(checking_types(include_str!("lua/timeline_order.lua"))));
/// A score added on a board bucket, and the bucket's expiry.
pub(crate) static BOARD: LazyLock<Script> =
    LazyLock::new(|| Script::new(with_steps(include_str!("lua/board.lua"))));
/// Fields renamed by a definition, rewritten under their new names.
pub(crate) static RENAME: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/rename.lua").to_owned()));
/// A type's schema record: the definitions met, index states, the walk.
pub(crate) static SCHEMA: LazyLock<Script> =
    LazyLock::new(|| Script::new(reading_memory_policy(include_str!("lua/schema.lua"))));
/// A namespace's layout marker, and the server's memory policy.
pub(crate) static LAYOUT: LazyLock<Script> =
    LazyLock::new(|| Script::new(reading_memory_policy(include_str!("lua/layout.lua"))));
/// The server's memory policy, read (verify's report).
pub(crate) static MEMORY_POLICY: LazyLock<Script> = LazyLock::new(|| {
    Script::read_only(reading_memory_policy(include_str!(
        "lua/read_memory_policy.lua"
    )))
});
/// The read-through cache's lock and null-marker steps.
pub(crate) static CACHE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/cache.lua").to_owned()));

/// One call of a script: keys and arguments, not yet sent.
#[derive(Debug, Clone)]
pub(crate) struct Call<'s> {
    script: &'s Script,
    /// `KEYS`.
    keys: Words,
    /// `ARGV`.
    args: Words,
}

impl Call<'_> {
    /// The command as it is sent once the server has the code (`FCALL name`
    /// or `EVALSHA sha`, keys, arguments), in words for `explain`: each
    /// argument as text, long ones cut.
    pub(crate) fn describe(&self) -> String {
        command_text(&self.command(true), Some(48))
    }

    /// `KEYS`.
    pub(crate) fn keys(&self) -> &Words {
        &self.keys
    }

    /// `ARGV`.
    #[cfg(test)]
    pub(crate) fn args(&self) -> &Words {
        &self.args
    }

    /// Its keys and arguments, to be sent as a part of another call (an
    /// operation of a unit of work).
    pub(crate) fn into_parts(self) -> (Words, Words) {
        (self.keys, self.args)
    }

    /// Adds a key.
    fn key(mut self, k: impl AsRef<[u8]>) -> Self {
        self.keys.push(k);
        self
    }

    /// Adds an argument.
    fn arg(mut self, a: impl AsRef<[u8]>) -> Self {
        self.args.push(a);
        self
    }

    /// The command: by name (`EVALSHA`, `FCALL`), or with the text
    /// (`EVAL`; a function is always called by name).
    fn command(&self, by_name: bool) -> redis::Cmd {
        let ro = self.script.read_only;
        let (name, first): (&str, &str) = match &self.script.kind {
            Kind::Eval { sha, .. } if by_name => (if ro { "EVALSHA_RO" } else { "EVALSHA" }, sha),
            Kind::Eval { text, .. } => (if ro { "EVAL_RO" } else { "EVAL" }, text),
            Kind::Function { name, .. } => (if ro { "FCALL_RO" } else { "FCALL" }, name),
        };
        // Sized once: a batch's call holds thousands of words.
        let words = 3 + self.keys.len() + self.args.len();
        let bytes =
            name.len() + first.len() + 20 + self.keys.total_bytes() + self.args.total_bytes();
        let mut c = redis::Cmd::with_capacity(words, bytes);
        c.arg(name).arg(first).arg(self.keys.len());
        for k in self.keys.iter() {
            c.arg(k);
        }
        for a in self.args.iter() {
            c.arg(a);
        }
        c
    }
}

/// A command as text, its words separated by spaces (for `explain`); with
/// `cut`, each word longer than that is cut and ends with `…`.
pub(crate) fn command_text(cmd: &redis::Cmd, cut: Option<usize>) -> String {
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => {
                let t = String::from_utf8_lossy(b);
                match cut {
                    Some(n) if t.chars().count() > n => {
                        format!("{}…", t.chars().take(n).collect::<String>())
                    }
                    _ => t.into_owned(),
                }
            }
            _ => "<cursor>".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The scripts and libraries a connection has sent, so its server has
/// them: the first call of a script goes out as `EVAL` (which caches it),
/// the first call of a function after its `FUNCTION LOAD` in the same
/// pipeline, instead of a call certain to fail.
pub(crate) type Sent = crate::seen::Seen;

/// True when the server lacks the code a call needs (after `SCRIPT FLUSH`,
/// `FUNCTION FLUSH` or a restart).
fn is_missing(e: &redis::RedisError) -> bool {
    e.code() == Some("NOSCRIPT") || e.to_string().contains("Function not found")
}

fn is_missing_value(v: &Value) -> bool {
    match v {
        Value::ServerError(e) => {
            e.code() == "NOSCRIPT"
                || e.details()
                    .is_some_and(|d| d.contains("Function not found"))
        }
        _ => false,
    }
}

/// Sends one call; the code goes with it the first time and whenever the
/// server has lost it.
pub(crate) async fn invoke<T: FromRedisValue, C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    call: &Call<'_>,
) -> RedisResult<T> {
    let known = sent.contains(call.script.unit());
    invoke_if_known(conn, sent, call, known).await
}

/// [`invoke`] with whether the code was sent decided by the caller: calls
/// sent together to several nodes of a cluster decide it once, before any
/// of them, so that none goes as `EVALSHA` to a node that does not have
/// the code yet because another node's reply came first.
pub(crate) async fn invoke_if_known<T: FromRedisValue, C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    call: &Call<'_>,
    known: bool,
) -> RedisResult<T> {
    if let Kind::Function { .. } = call.script.kind {
        // A function is called by name every time: one command serves.
        return invoke_function(conn, sent, call.script, &call.command(true)).await;
    }
    if known {
        match call.command(true).query_async(conn).await {
            Err(e) if is_missing(&e) => {}
            other => return other,
        }
    }
    // `EVAL` with the text: the server caches it.
    let reply = call.command(false).query_async(conn).await;
    sent.insert(call.script.unit());
    reply
}

/// Sends `cmd`, a call of `function` (as [`Script::fcall`] begins it); its
/// library goes with it the first time and whenever the server has lost it.
pub(crate) async fn invoke_function<T: FromRedisValue, C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    function: &Script,
    cmd: &redis::Cmd,
) -> RedisResult<T> {
    let unit = function.unit();
    if sent.contains(unit) {
        match cmd.query_async(conn).await {
            Err(e) if is_missing(&e) => {}
            other => return other,
        }
    }
    let reply = match function.load() {
        None => cmd.query_async(conn).await,
        Some(load) => {
            // The load fails harmlessly when the library is there already.
            let mut pipe = redis::pipe();
            pipe.ignore_errors()
                .add_command(load)
                .add_command(cmd.clone());
            let (_, reply): (Value, Value) = pipe.query_async(conn).await?;
            T::from_redis_value(reply).map_err(Into::into)
        }
    };
    sent.insert(unit);
    reply
}

/// Sends one call and, in the same pipeline after it, the commands `then`
/// adds; returns the call's reply (an error reply as `Value::ServerError`)
/// and the others'. The code goes with it the first time and whenever the
/// server has lost it (then the whole pipeline is sent again).
pub(crate) async fn invoke_then<C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    call: &Call<'_>,
    then: impl Fn(&mut redis::Pipeline),
) -> RedisResult<(Value, Vec<Value>)> {
    let unit = call.script.unit();
    let mut known = sent.contains(unit);
    loop {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        let load = if known { None } else { call.script.load() };
        if let Some(l) = &load {
            // Fails harmlessly when the library is there already.
            pipe.add_command(l.clone());
        }
        // An `EVAL` script's text goes with it when the server may lack it.
        pipe.add_command(call.command(known || load.is_some()));
        then(&mut pipe);
        let mut replies: Vec<Value> = pipe.query_async(conn).await?;
        if load.is_some() && !replies.is_empty() {
            replies.remove(0);
        }
        if replies.is_empty() {
            return Err((redis::ErrorKind::UnexpectedReturnType, "no reply").into());
        }
        let reply = replies.remove(0);
        if known && is_missing_value(&reply) {
            known = false;
            continue;
        }
        sent.insert(unit);
        return Ok((reply, replies));
    }
}

/// Sends many calls in one pipeline (each stays atomic on its own) and
/// returns one reply per call, errors included as `Value::ServerError`.
/// Code the server lacks goes in the same pipeline; calls it still answers
/// as missing are resent after a reload.
pub(crate) async fn invoke_all<C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    calls: &[Call<'_>],
) -> RedisResult<Vec<Value>> {
    if calls.is_empty() {
        return Ok(Vec::new());
    }
    let mut replies = send_all(conn, sent, calls).await?;
    let lost: Vec<usize> = (0..replies.len())
        .filter(|&i| is_missing_value(&replies[i]))
        .collect();
    if !lost.is_empty() {
        let retried: Vec<Call<'_>> = lost.iter().map(|&i| calls[i].clone()).collect();
        let fresh = Sent::default();
        let again = send_all(conn, &fresh, &retried).await?;
        for (i, v) in lost.into_iter().zip(again) {
            replies[i] = v;
        }
    }
    for c in calls {
        sent.insert(c.script.unit());
    }
    Ok(replies)
}

/// One pipeline: the loads the calls need (once each), then the calls;
/// returns the calls' replies.
async fn send_all<C: ConnectionLike>(
    conn: &mut C,
    sent: &Sent,
    calls: &[Call<'_>],
) -> RedisResult<Vec<Value>> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    let mut loads = 0;
    let mut seen = HashSet::new();
    for c in calls {
        let unit = c.script.unit();
        if !sent.contains(unit) && seen.insert(unit) {
            if let Some(load) = c.script.load() {
                pipe.add_command(load);
                loads += 1;
            }
        }
    }
    let mut first = HashSet::new();
    for c in calls {
        let unit = c.script.unit();
        // An `EVAL` script's text goes once per pipeline; later calls find
        // it cached.
        let by_name = sent.contains(unit) || c.script.load().is_some() || !first.insert(unit);
        pipe.add_command(c.command(by_name));
    }
    let mut replies: Vec<Value> = pipe.query_async(conn).await?;
    replies.drain(..loads);
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
    fn calls_across_slots_carry_each_calls_keys_and_arguments_in_order() {
        let a = RANK.call().key("{p:1}:z").key("{p:1}:e").arg("m").arg("h");
        let b = RANK.call().key("{p:5}:z").arg("x");
        let across = across_call(&RANK_ACROSS, &[a, b]);
        let words = |v: &Words| -> Vec<String> {
            v.iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        };
        // The first call's keys route it; every call's parts are in ARGV.
        assert_eq!(words(across.keys()), ["{p:1}:z", "{p:1}:e"]);
        assert_eq!(
            words(across.args()),
            ["2", "2", "2", "{p:1}:z", "{p:1}:e", "m", "h", "1", "1", "{p:5}:z", "x"]
        );
        let cmd = across.command(true);
        let packed = String::from_utf8_lossy(&cmd.get_packed_command()).into_owned();
        assert!(packed.contains("EVALSHA_RO"), "{packed}");
        // The script is the original's body in `one`, flagged for other slots.
        let text = match &RANK_ACROSS.kind {
            Kind::Eval { text, .. } => text.clone(),
            Kind::Function { .. } => unreachable!(),
        };
        assert!(text.starts_with("#!lua flags=no-writes,allow-cross-slot-keys\n"));
        assert!(text.contains("local function one(KEYS, ARGV)"));
        assert!(text.contains("ZREVRANK"));
    }

    #[test]
    fn lua_strings_escape_quotes_backslashes_and_bytes() {
        assert_eq!(lua_string(b"user:"), "\"user:\"");
        assert_eq!(lua_string(b"a\"b\\c\n\xe4"), "\"a\\\"b\\\\c\\010\\228\"");
    }
}
