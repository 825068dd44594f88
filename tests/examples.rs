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
