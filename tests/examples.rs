//! Every example runs to the end against a private server (the demo command
//! runs them too, through the tour).
//!
//! One server; tests/examples_on_cluster.rs runs every example on a cluster.

#[allow(dead_code)]
#[path = "../examples/cache.rs"]
mod cache;
#[allow(dead_code)]
#[path = "../examples/profile.rs"]
mod profile;
#[allow(dead_code)]
#[path = "../examples/schema_evolution.rs"]
mod schema_evolution;
#[allow(dead_code)]
#[path = "../examples/users.rs"]
mod users;

use support::RedisServer;

#[tokio::test]
async fn users_example_runs_and_cleans_up() {
    let server = RedisServer::start();
    users::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

#[tokio::test]
async fn profile_example_runs_and_cleans_up() {
    let server = RedisServer::start();
    profile::run(&server.url()).await.unwrap();
    assert!(server.keys().is_empty(), "{:?}", server.keys());
}

#[tokio::test]
async fn cache_example_runs() {
    let server = RedisServer::start();
    cache::run(&server.url()).await.unwrap();
}

#[tokio::test]
async fn schema_evolution_example_runs_and_cleans_up() {
    let server = RedisServer::start();
    schema_evolution::run(&server.url()).await.unwrap();
    let mut c = server.conn();
    let left: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert!(left.is_empty(), "{left:?}");
}
