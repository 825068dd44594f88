//! A Weibo-like model. Users follow users; a new post
//! is pushed to every follower's timeline. The equivalent SQL beside each call.
//! Run: `cargo run --example weibo`.

use redis_entity::relation::{Relation, Timeline};
use redis_entity::{RedisEntity, Store};

/// On Redis Cluster, users and posts share one slot (`group`), so a follow
/// and a push stay one atomic script there too; one server ignores it.
#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "user:userid:{userid}", group = "weibo")]
pub struct User {
    #[pk]
    pub userid: u64,
    pub username: String,
    pub email: String,
    /// Counters kept in step with the posts and follows, in the same units.
    pub post_count: u64,
    pub following_count: u64,
    pub follower_count: u64,
}

#[derive(RedisEntity, Debug, Clone, PartialEq)]
#[redis(layout = "strings", key = "post:postid:{postid}", group = "weibo")]
pub struct Post {
    #[pk]
    pub postid: u64,
    #[index]
    pub userid: u64,
    pub time: u64,
    pub content: String,
}

/// `follower:followerid:8 -> {9}` and `follower:userid:9 -> {8}` in the classic layout.
pub const FOLLOWS: Relation<User, User> = Relation::many_to_many("following", "followers");
/// `push:userid:8 -> [1]` in the classic layout, newest first, the last 1,000.
pub const PUSHED: Timeline<User, Post> = Timeline::new("pushed", 1000);

pub fn users() -> Vec<User> {
    [(9, "lisi"), (8, "zhangsan"), (7, "wangwu")]
        .into_iter()
        .map(|(userid, name)| User {
            userid,
            username: name.into(),
            email: format!("{name}@example.com"),
            post_count: 0,
            following_count: 0,
            follower_count: 0,
        })
        .collect()
}

/// `a` follows `b`: both sides of the relation and both counters, as one
/// unit (all of it or nothing, in one round trip).
pub async fn follow<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &Store<C>,
    a: u64,
    b: u64,
) -> redis_entity::Result<()> {
    store
        .transaction()
        .relate(&FOLLOWS, a, b)
        .update::<User>(a, |u| u.incr(User::FOLLOWING_COUNT, 1))
        .update::<User>(b, |u| u.incr(User::FOLLOWER_COUNT, 1))
        .exec()
        .await
}

/// A new post: the post, its push onto every follower's timeline and the
/// author's counter, as one unit.
pub async fn publish<C: redis::aio::ConnectionLike + Clone + Send + Sync>(
    store: &Store<C>,
    post: &Post,
) -> redis_entity::Result<usize> {
    let followers = store.relation(&FOLLOWS).related_back(post.userid).await?;
    store
        .transaction()
        .save(post)
        .push(&PUSHED, post.postid, &followers)
        .update::<User>(post.userid, |u| u.incr(User::POST_COUNT, 1))
        .exec()
        .await?;
    Ok(followers.len())
}

pub async fn run(url: &str) -> redis_entity::Result<()> {
    println!("== weibo: followers, following, pushed timeline");
    let store = Store::builder().connect_any(url).await?;
    store.save_all(&users()).await?;
    // insert into follower (userid, followerid) values (9, 8), (9, 7), (8, 9);
    // with the counters, in one transaction each.
    follow(&store, 8, 9).await?; // 8 follows 9
    follow(&store, 7, 9).await?;
    follow(&store, 9, 8).await?;
    let nine = store.get::<User>(&9).await?.expect("saved above");
    println!(
        "9: {} following, {} followers",
        nine.following_count, nine.follower_count
    );

    // select distinct userid from follower where followerid = 9;   (people 9 follows)
    println!(
        "9 follows           -> {:?}",
        store.relation(&FOLLOWS).related(&9).await?
    );
    // select distinct followerid from follower where userid = 9;   (people following 9)
    println!(
        "followers of 9      -> {:?}",
        store.relation(&FOLLOWS).related_back(&9).await?
    );
    println!(
        "mutual with 9       -> {:?}   (SINTER)",
        store.relation(&FOLLOWS).mutual(&9).await?
    );

    // 9 posts; the post is pushed to every follower (insert into push ...).
    let post = Post {
        postid: 1,
        userid: 9,
        time: 1_596_338_654_824,
        content: "test".into(),
    };
    let pushed_to = publish(&store, &post).await?;
    println!("post 1 pushed to    -> {pushed_to} followers (post, pushes and counter: one unit)");
    // select postid from push where userid=8 order by time desc;
    let timeline = store.timeline(&PUSHED).page(&8, 0, 10).await?;
    let posts: Vec<(u64, &str)> = timeline
        .iter()
        .map(|p| (p.postid, p.content.as_str()))
        .collect();
    println!("timeline of 8       -> {posts:?}");
    // select * from post where userid = 9;
    println!(
        "posts of 9          -> {:?}",
        store.query::<Post>().eq(Post::USERID, 9u64).ids().await?
    );

    // 7 unfollows 9; then 8 deletes the account: gone from every relation.
    store.relation(&FOLLOWS).unrelate(&7, &9).await?;
    store.delete::<User>(&8).await?;
    println!(
        "after unfollow and delete -> followers of 9 {:?}, 9 follows {:?}",
        store.relation(&FOLLOWS).related_back(&9).await?,
        store.relation(&FOLLOWS).related(&9).await?
    );
    println!("keys -> {:?}\n", store.keys().scan("user:*").await?);
    for u in users() {
        store.delete::<User>(&u.userid).await?;
    }
    store.delete::<Post>(&1).await?;
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> redis_entity::Result<()> {
    // The server to run against: `REDIS_URL`, or a local one; or a Redis
    // Cluster: `REDIS_CLUSTER_URLS` (node URLs separated by commas).
    let url = std::env::var("REDIS_CLUSTER_URLS")
        .or_else(|_| std::env::var("REDIS_URL"))
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    run(&url).await
}
