//! Every example runs unchanged against a 3-master Redis Cluster
//! (`Store::builder().connect_any` with the nodes' URLs, what `REDIS_CLUSTER_URLS`
//! gives them; the tour runs them all the same way).

#[allow(dead_code)]
#[path = "../examples/admin.rs"]
mod admin;

#[allow(dead_code)]
#[path = "../examples/book_tags.rs"]
mod book_tags;
#[allow(dead_code)]
#[path = "../examples/cache.rs"]
mod cache;
#[allow(dead_code)]
#[path = "../examples/leaderboard.rs"]
mod leaderboard;
#[allow(dead_code)]
#[path = "../examples/migrate.rs"]
mod migrate;
#[allow(dead_code)]
#[path = "../examples/pattern_query.rs"]
mod pattern_query;
#[allow(dead_code)]
#[path = "../examples/profile.rs"]
mod profile;
#[allow(dead_code)]
#[path = "../examples/red_packets.rs"]
mod red_packets;
#[allow(dead_code)]
#[path = "../examples/schema_evolution.rs"]
mod schema_evolution;
#[allow(dead_code)]
#[path = "../examples/users.rs"]
mod users;
#[allow(dead_code)]
#[path = "../examples/weibo.rs"]
mod weibo;

use support::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_examples_run_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    let urls = cluster.urls().join(",");
    users::run(&urls).await.expect("users");
    profile::run(&urls).await.expect("profile");
    book_tags::run(&urls).await.expect("book_tags");
    red_packets::run(&urls).await.expect("red_packets");
    pattern_query::run(&urls).await.expect("pattern_query");
    weibo::run(&urls).await.expect("weibo");
    leaderboard::run(&urls).await.expect("leaderboard");
    cache::run(&urls).await.expect("cache");
    migrate::run(&urls).await.expect("migrate");
    schema_evolution::run(&urls)
        .await
        .expect("schema_evolution");
    // The admin command line walks its own types on every master (the
    // examples above write none of them: this checks that it runs there).
    let report = admin::run(&urls, &["verify".to_owned()])
        .await
        .expect("admin");
    for t in ["Product: ", "Customer: "] {
        assert!(report.contains(t), "{report}");
    }
    assert!(report.contains("0 violations"), "{report}");
}
