#!/usr/bin/env bash
# The whole test suite: formatting, lints, rustdoc links, unit, integration
# (each test starts its own redis-server on a free port), doc and compile-fail
# (trybuild) tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-redis.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet
cargo test --workspace --all-features
