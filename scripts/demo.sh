#!/usr/bin/env bash
# Runs the tour: every scenario, against a private redis-server that this
# script starts on a free port and stops at the end (a Redis you run is
# never touched).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-redis.sh
echo "building the examples (the first build takes a minute or two)..." >&2
cargo build --quiet --example tour
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
"${REDIS_SERVER_BIN:-redis-server}" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$dir" >"$dir/redis.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.05
done
echo "running the tour against a private redis-server on 127.0.0.1:$port..." >&2
REDIS_URL="redis://127.0.0.1:$port/" cargo run --quiet --example tour
