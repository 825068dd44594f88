//! Test and example support: a private `redis-server` per test binary.
//!
//! Modelled on redis-rs `tests/support/mod.rs`: pick a free port, start
//! `redis-server` on it with persistence off, wait until it answers `PING`,
//! and kill it on drop. Tests never touch a server they did not start.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` child process on a free local port.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

/// A local port nothing listens on (at the moment of asking).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free local port")
}

fn binary() -> String {
    std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into())
}

impl RedisServer {
    /// Starts a server; panics with the install command if `redis-server` is missing.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts a server with extra `redis-server` arguments.
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let mut last = String::new();
        for _ in 0..5 {
            match Self::try_start(free_port(), extra, false) {
                Ok(s) => return s,
                Err(e) => last = e,
            }
        }
        panic!("could not start redis-server: {last}");
    }

    /// Starts a server; with `loading`, returns as soon as it answers, even
    /// while it still loads its data (`LOADING` replies).
    fn try_start(port: u16, extra: &[&str], loading: bool) -> Result<RedisServer, String> {
        let dir = std::env::temp_dir().join(format!("redis-entity-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let child = Command::new(binary())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .args(extra)
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "{e}: `{}` not found; install it with `sudo apt-get install -y redis-server` \
                     (or set REDIS_SERVER_BIN)",
                    binary()
                )
            })?;
        let mut server = RedisServer { child, port, dir };
        server.wait_ready(loading)?;
        Ok(server)
    }

    fn wait_ready(&mut self, loading: bool) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = redis::Client::open(self.url()).map_err(|e| e.to_string())?;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("redis-server exited at start: {status}"));
            }
            let conn = client.get_connection_with_timeout(Duration::from_millis(200));
            // Connecting may itself meet `LOADING` (its setup commands).
            if let Err(e) = &conn {
                if loading && e.to_string().contains("LOADING") {
                    return Ok(());
                }
            }
            if let Ok(mut c) = conn {
                match redis::cmd("PING").query::<String>(&mut c) {
                    Ok(_) => return Ok(()),
                    // A server with `--requirepass` answers, which is all
                    // that is asked here.
                    Err(e) if e.code() == Some("NOAUTH") => return Ok(()),
                    Err(e) if loading && e.code() == Some("LOADING") => return Ok(()),
                    Err(_) => {}
                }
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return Err("redis-server did not answer PING within 10s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (`restart` starts it again on the same port).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server and starts a new, empty one on the same port (its
    /// script cache and data are gone, as after a crash without persistence).
    pub fn restart(&mut self) {
        self.restart_with(&[]);
    }

    /// Kills the server (SIGKILL, as a crash) and starts a new one on the
    /// same port and data directory with `extra` arguments: with
    /// `--appendonly yes` it loads what the killed one had written to its
    /// append-only file.
    pub fn restart_with(&mut self, extra: &[&str]) {
        self.restart_as(extra, false);
    }

    /// [`restart_with`](Self::restart_with), returning as soon as the new
    /// server answers, while it may still be loading its data.
    pub fn restart_loading(&mut self, extra: &[&str]) {
        self.restart_as(extra, true);
    }

    fn restart_as(&mut self, extra: &[&str], loading: bool) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let port = self.port;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Self::try_start(port, extra, loading) {
                Ok(mut new) => {
                    // Take over the new child; `new` is dropped with a dead
                    // placeholder child that it kills and reaps harmlessly.
                    std::mem::swap(&mut self.child, &mut new.child);
                    new.dir = std::env::temp_dir().join("redis-entity-none");
                    return;
                }
                Err(e) if Instant::now() > deadline => panic!("restart failed: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// How many times the server ran `command` (`calls=` of its
    /// `INFO commandstats`).
    pub fn calls(&self, command: &str) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut self.conn())
            .unwrap();
        let head = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(&head))
            .and_then(|rest| rest.split(',').next()?.parse().ok())
            .unwrap_or(0)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The URL of a user `reader` made on this server that may run read
    /// commands only (`+@read +@connection`: no scripts, no writes).
    pub fn read_only_url(&self) -> String {
        let _: () = redis::cmd("ACL")
            .arg(
                &[
                    "SETUSER",
                    "reader",
                    "on",
                    ">pw",
                    "~*",
                    "+@read",
                    "+@connection",
                ][..],
            )
            .query(&mut self.conn())
            .expect("ACL SETUSER");
        self.url().replace("redis://", "redis://reader:pw@")
    }

    /// A client for this server.
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("valid url")
    }

    /// A blocking connection for inspecting what was written.
    pub fn conn(&self) -> redis::Connection {
        self.client()
            .get_connection()
            .expect("connect to test redis")
    }

    /// Every key on the server, sorted (SCAN; test servers are small).
    pub fn keys(&self) -> Vec<String> {
        let mut c = self.conn();
        let mut keys: Vec<String> = redis::cmd("SCAN")
            .cursor_arg(0)
            .clone()
            .iter(&mut c)
            .expect("scan")
            .map(|k: redis::RedisResult<String>| k.expect("key name"))
            .collect();
        // SCAN returns a key at least once: twice when the table is
        // resized during the walk (after many deletes, say).
        // The layout marker a store records with its first write is its
        // namespace's, not any entity's, and a type's schema record is its
        // type's: tests of them read them by name.
        keys.retain(|k| !k.ends_with(LAYOUT_MARKER) && !k.ends_with(SCHEMA_RECORD));
        keys.sort();
        keys.dedup();
        keys
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Each key with its type, serialized value (`DUMP`) and whether it has a
/// TTL (the sign of `PTTL`: a TTL counts down, whether there is one is what
/// must not change): what a refused write must leave as it was.
pub type Snapshot = std::collections::BTreeMap<String, (String, Vec<u8>, i64)>;

fn snapshot_of(keys: Vec<String>, c: &mut impl redis::ConnectionLike) -> Snapshot {
    keys.into_iter()
        .map(|k| {
            let t: String = redis::cmd("TYPE").arg(&k).query(c).unwrap();
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(c).unwrap();
            let ttl: i64 = redis::cmd("PTTL").arg(&k).query(c).unwrap();
            (k, (t, dump, ttl.signum()))
        })
        .collect()
}

impl RedisServer {
    /// Every key of the server, as [`Snapshot`] describes.
    pub fn snapshot(&self) -> Snapshot {
        snapshot_of(self.keys(), &mut self.conn())
    }
}

impl RedisCluster {
    /// Every key of every master, as [`Snapshot`] describes.
    pub fn snapshot(&self) -> Snapshot {
        snapshot_of(self.keys(), &mut self.conn())
    }
}

/// The key, after its namespace, recording a namespace's layout
/// (`Keys::check_layout`).
pub const LAYOUT_MARKER: &str = "@redis-entity:layout";

/// The end of a type's schema record (`item:@schema`, `User_@schema` for
/// the key template `User_{id}_Profile`), which a store writes with the
/// type's first write (`store.schema()`). No entity key ends so: a member
/// never starts with `@`.
pub const SCHEMA_RECORD: &str = "@schema";

/// A store on a fresh connection to `server` that counts its round trips.
pub async fn counted_store(
    server: &RedisServer,
) -> (
    redis_entity::Store<redis_entity::CountingConnection<redis::aio::MultiplexedConnection>>,
    redis_entity::RoundTrips,
) {
    let conn = server
        .client()
        .get_multiplexed_async_connection()
        .await
        .expect("connect to test redis");
    let conn = redis_entity::CountingConnection::new(conn);
    let trips = conn.counter();
    (redis_entity::Store::new(conn), trips)
}

/// A Redis Cluster of `redis-server` nodes on free ports (no replicas), for
/// the tests that prove which operations are single-slot.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts `n` (at least 3) cluster-enabled nodes, creates the cluster with
    /// `redis-cli --cluster create` and waits until every slot is served.
    pub fn start(n: usize) -> RedisCluster {
        Self::start_with_replicas(n, 0)
    }

    /// Starts `masters` (at least 3) masters with `replicas` replicas each.
    pub fn start_with_replicas(masters: usize, replicas: usize) -> RedisCluster {
        let n = masters.max(3) * (1 + replicas);
        let mut nodes: Vec<RedisServer> = (0..n)
            .map(|_| {
                RedisServer::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        let status = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli (package redis-tools) creates the cluster");
        assert!(status.success(), "redis-cli --cluster create failed");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = nodes.iter().all(|s| {
                redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query::<String>(&mut s.conn())
                    .map(|i| i.contains("cluster_state:ok"))
                    .unwrap_or(false)
            });
            if ok {
                let cluster = RedisCluster { nodes };
                // Replicas are known by gossip, a moment after the slots.
                let masters = cluster.roles().iter().filter(|r| r.2).count();
                if masters == n / (1 + replicas) {
                    return cluster;
                }
                let RedisCluster { nodes: back } = cluster;
                nodes = back;
            }
            assert!(Instant::now() < deadline, "cluster did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `redis://127.0.0.1:<port>/` of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The nodes.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// `(node id, port, is master)` of every node, from `CLUSTER NODES`.
    pub fn roles(&self) -> Vec<(String, u16, bool)> {
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.nodes[0].conn())
            .expect("CLUSTER NODES");
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let port = f.get(1)?.split(['@', ':']).nth(1)?.parse().ok()?;
                Some((f[0].to_owned(), port, f.get(2)?.contains("master")))
            })
            .collect()
    }

    /// Moves `slots` slots from the master on `from` to the master on `to`
    /// with `redis-cli --cluster reshard` (keys migrate one by one while
    /// clients keep writing: MOVED and ASK redirections).
    pub fn reshard(&self, from: u16, to: u16, slots: usize) {
        let roles = self.roles();
        let id = |port: u16| {
            roles
                .iter()
                .find(|r| r.1 == port)
                .expect("a node")
                .0
                .clone()
        };
        let status = Command::new("redis-cli")
            .arg("--cluster")
            .arg("reshard")
            .arg(format!("127.0.0.1:{from}"))
            .args(["--cluster-from", &id(from), "--cluster-to", &id(to)])
            .args(["--cluster-slots", &slots.to_string(), "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli reshards");
        assert!(status.success(), "redis-cli --cluster reshard failed");
    }
}

impl RedisCluster {
    /// Every key on every master, sorted (SCAN each; test clusters are
    /// small), without the layout marker and schema records, as [`RedisServer::keys`].
    pub fn keys(&self) -> Vec<String> {
        let masters: Vec<u16> = self
            .roles()
            .into_iter()
            .filter(|r| r.2)
            .map(|r| r.1)
            .collect();
        let mut keys: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| masters.contains(&n.port()))
            .flat_map(RedisServer::keys)
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// A blocking connection to the whole cluster.
    pub fn conn(&self) -> redis::cluster::ClusterConnection {
        redis::cluster::ClusterClient::new(self.urls())
            .and_then(|c| c.get_connection())
            .expect("connect to the test cluster")
    }
}

/// Set (to anything) by `scripts/test.sh --cluster`: the tests written
/// against a [`Target`] run on a private 3-master cluster instead of one
/// private server.
pub const CLUSTER_SWITCH: &str = "REDIS_ENTITY_TEST_CLUSTER";

/// What a test runs against: one private `redis-server`, or with
/// [`CLUSTER_SWITCH`] set, a private 3-master Redis Cluster. The same test
/// then checks the same behaviour in both key layouts; it names keys through
/// the store (`store.keys().of::<E>(pk)`), never by their standalone spelling.
pub enum Target {
    /// One server.
    Server(RedisServer),
    /// Three masters.
    Cluster(RedisCluster),
}

/// A blocking connection to a [`Target`], for inspecting what was written.
pub enum TargetConnection {
    /// To the one server.
    Server(redis::Connection),
    /// To the cluster (boxed: it is much bigger than a server connection).
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl redis::ConnectionLike for TargetConnection {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        match self {
            TargetConnection::Server(c) => c.req_packed_command(cmd),
            TargetConnection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        match self {
            TargetConnection::Server(c) => c.req_packed_commands(cmd, offset, count),
            TargetConnection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            TargetConnection::Server(c) => c.get_db(),
            TargetConnection::Cluster(c) => c.get_db(),
        }
    }

    fn check_connection(&mut self) -> bool {
        match self {
            TargetConnection::Server(c) => c.check_connection(),
            TargetConnection::Cluster(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            TargetConnection::Server(c) => c.is_open(),
            TargetConnection::Cluster(c) => c.is_open(),
        }
    }
}

impl Target {
    /// One server, or a cluster when [`CLUSTER_SWITCH`] is set.
    pub fn start() -> Target {
        if std::env::var_os(CLUSTER_SWITCH).is_some() {
            Target::Cluster(RedisCluster::start(3))
        } else {
            Target::Server(RedisServer::start())
        }
    }

    /// True on a cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self, Target::Cluster(_))
    }

    /// What `StoreBuilder::connect_any` takes: the server's URL, or the nodes'
    /// URLs separated by commas.
    pub fn url(&self) -> String {
        match self {
            Target::Server(s) => s.url(),
            Target::Cluster(c) => c.urls().join(","),
        }
    }

    /// A store on the target, in its key layout.
    pub async fn store(&self) -> redis_entity::Store<redis_entity::AnyConnection> {
        self.store_with(redis_entity::Store::builder()).await
    }

    /// A store with `settings`, connected to this target.
    pub async fn store_with(
        &self,
        settings: redis_entity::StoreBuilder<redis_entity::AnyConnection>,
    ) -> redis_entity::Store<redis_entity::AnyConnection> {
        settings
            .connect_any(&self.url())
            .await
            .expect("connect to the test target")
    }

    /// Every key, sorted, without the layout marker and schema records.
    pub fn keys(&self) -> Vec<String> {
        match self {
            Target::Server(s) => s.keys(),
            Target::Cluster(c) => c.keys(),
        }
    }

    /// Every key with its type, value and whether it has a TTL, as
    /// [`Snapshot`] describes: to show that a refused write wrote nothing.
    pub fn snapshot(&self) -> Snapshot {
        match self {
            Target::Server(s) => s.snapshot(),
            Target::Cluster(c) => c.snapshot(),
        }
    }

    /// A blocking connection for inspecting what was written.
    pub fn conn(&self) -> TargetConnection {
        match self {
            Target::Server(s) => TargetConnection::Server(s.conn()),
            Target::Cluster(c) => TargetConnection::Cluster(Box::new(c.conn())),
        }
    }
}
