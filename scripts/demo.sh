#!/usr/bin/env bash
# Runs the tour: every seed scenario against a private redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-redis.sh
cargo run --quiet --example tour
