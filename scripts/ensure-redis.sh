#!/usr/bin/env bash
# Makes sure `redis-server` is installed. Tests and examples start their own
# server on a free port; nothing here starts or touches a shared one.
set -euo pipefail
# redis-cli (package redis-tools, a dependency of redis-server) creates the
# test cluster; openssl makes the certificate of the TLS test.
if command -v "${REDIS_SERVER_BIN:-redis-server}" >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 \
  && command -v openssl >/dev/null 2>&1; then
  exit 0
fi
echo "redis-server, redis-cli or openssl is not installed; installing them (Debian packages redis-server, redis-tools, openssl)..." >&2
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools openssl >/dev/null
elif command -v sudo >/dev/null 2>&1; then
  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools openssl >/dev/null
else
  echo "cannot install: run 'apt-get install -y redis-server redis-tools openssl' as root, then retry" >&2
  exit 1
fi
command -v redis-server >/dev/null && command -v redis-cli >/dev/null && command -v openssl >/dev/null
