//! The floor of a checked single write, measured in the same rounds: the
//! hand-written function with redis-entity's checks (`HAND_SAVE_FN`,
//! `HAND_CHANGE_FN`, `HAND_SCORE_FN`) against the minimal `MULTI`/`EXEC` of
//! the same write, each on a fresh server of its own holding the same users
//! and players (`cargo bench --bench workload -- --floors` runs this step
//! alone; a whole run ends its single writes with it). The 32-task mix has
//! floors of its own (`floor_mix_of_32`): the hand-written mix with the
//! checked level update, with that and the one-call lookup, and with every
//! check of redis-entity's, against the bare mix.
//!
//! The client target for single writes is 0.9x the minimal `EXEC`.
//! Where the function with the same checks is itself below that, the
//! target is above what a checked write allows, and redis-entity's ratio to
//! the function (its own rows, "vs hand-written function") is the one that
//! counts. Before this step the floor was read across two rows, whose rounds
//! ran at different moments of the machine (up to 20% apart on the VM).

use super::{
    hand_exec_country, hand_exec_score, hand_fn_call, hand_fn_save, hand_mix_of_32,
    hand_save_books, hand_save_players, hand_save_user, hand_users, pair, players, report, user,
    Book, HandMix, Pairs, Side, HAND_CHANGE_FN, HAND_SAVE_FN, HAND_SCORE_FN,
};

/// The three floors: save of a new user, change of its country (an equality
/// index), increment of a player's score (a sorted index).
pub async fn floor_steps(n_users: u64, n_changes: u64, n_incr: u64) {
    let (func, exec) = (Side::start().await, Side::start().await);
    // The same users and players on both servers, in the hand-written
    // layout (the functions and the `EXEC`s share it).
    for side in [&func, &exec] {
        let mut c = side.conn.clone();
        hand_users(&mut c, n_users).await;
        for chunk in players(n_users).chunks(500) {
            hand_save_players(&mut c, chunk).await;
        }
    }
    let (fc, ec) = (&func.conn, &exec.conn);

    let save_fn = redis::Script::new(HAND_SAVE_FN);
    let (a, b) = pair(
        &func,
        &exec,
        n_users,
        false,
        |r| {
            let (mut c, f) = (fc.clone(), &save_fn);
            async move {
                for id in r {
                    hand_fn_save(f, &mut c, &user(id + n_users)).await;
                }
            }
        },
        |r| {
            let mut c = ec.clone();
            async move {
                for id in r {
                    hand_save_user(&mut c, &user(id + n_users)).await;
                }
            }
        },
    )
    .await;
    report("floor: save user, hand-written function vs EXEC", &a, &b);

    // Each user's country moves one place along, generation by generation
    // (`user` gives generation 0); the `EXEC` is told the old one.
    let country = |id: u64, gen: u64| super::COUNTRIES[((id + gen) % 20) as usize];
    let change_fn = redis::Script::new(HAND_CHANGE_FN);
    let (a, b) = pair(
        &func,
        &exec,
        n_changes,
        false,
        |r| {
            let (mut c, f) = (fc.clone(), &change_fn);
            async move {
                for i in r {
                    let id = i % n_users;
                    let new = country(id, i / n_users + 1);
                    hand_fn_call(f, &mut c, format!("user:{{{id}}}"), id, new).await;
                }
            }
        },
        |r| {
            let mut c = ec.clone();
            async move {
                for i in r {
                    let id = i % n_users;
                    let (old, new) = (country(id, i / n_users), country(id, i / n_users + 1));
                    hand_exec_country(&mut c, id, old, new).await;
                }
            }
        },
    )
    .await;
    report(
        "floor: change country, hand-written function vs EXEC",
        &a,
        &b,
    );

    let score_fn = redis::Script::new(HAND_SCORE_FN);
    let delta = |i: u64| (i % 1000) as f64 / 10.0;
    let (a, b) = pair(
        &func,
        &exec,
        n_incr,
        false,
        |r| {
            let (mut c, f) = (fc.clone(), &score_fn);
            async move {
                for i in r {
                    let id = i % n_users;
                    hand_fn_call(f, &mut c, format!("player:{{{id}}}"), id, delta(i)).await;
                }
            }
        },
        |r| {
            let mut c = ec.clone();
            async move {
                for i in r {
                    hand_exec_score(&mut c, i % n_users, delta(i)).await;
                }
            }
        },
    )
    .await;
    report(
        "floor: score increment, hand-written function vs EXEC",
        &a,
        &b,
    );
}

/// The floors of the 32-task mix: the hand-written mix whose level update is
/// the function with redis-entity's checks (`HAND_LEVEL_FN`: the user must
/// exist), then that and its unique lookup in one call (`HAND_FIND_FN`, as
/// redis-entity's), then those and the tag query's checks (the expiry
/// set's `ZCARD` with the `SINTER`, every book checked to hold both tags),
/// then those with the records read by their fields (`HMGET`, as
/// redis-entity reads them), each against the same mix with a bare `HINCRBY`, a lookup in two round
/// trips and a bare `SINTER`, each side on a fresh server of its own
/// holding the same users and books: what the checks, and the single
/// caller's round trip saved, cost the mix. redis-entity's rows against the
/// same hand-written mixes are the ones to read against them.
pub async fn floor_mix_of_32(n_users: u64, books: &[Book], pairs: Pairs) {
    let (func, bare) = (Side::start().await, Side::start().await);
    for side in [&func, &bare] {
        let mut c = side.conn.clone();
        hand_users(&mut c, n_users).await;
        hand_save_books(&mut c, books).await;
    }
    for (name, how) in [
        (
            "floor: 32 tasks, checked level update vs HINCRBY",
            HandMix::CHECKED,
        ),
        (
            "floor: 32 tasks, checked update and one-call lookup vs bare",
            HandMix::CHECKED_ONE_CALL,
        ),
        ("floor: 32 tasks, every check vs bare", HandMix::EVERY_CHECK),
        (
            "floor: 32 tasks, every check reading by fields (HMGET) vs bare",
            HandMix::EVERY_CHECK_BY_FIELDS,
        ),
    ] {
        let (a, b) = pair(
            &func,
            &bare,
            n_users,
            false,
            |r| hand_mix_of_32(func.conn.clone(), pairs.clone(), r, n_users, how, None),
            |r| {
                hand_mix_of_32(
                    bare.conn.clone(),
                    pairs.clone(),
                    r,
                    n_users,
                    HandMix::BARE,
                    None,
                )
            },
        )
        .await;
        report(name, &a, &b);
    }
}
