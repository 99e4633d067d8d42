#!/usr/bin/env bash
# Makes sure `redis-server` (6.2 or newer: the Redis spool needs XAUTOCLAIM) is on PATH,
# installing Debian's package when it is missing (CI is a clean machine, root). Sourced by the
# test scripts or run alone. The tests start their own servers on 127.0.0.1 (a free port,
# AOF in a temp dir) and stop them; nothing here starts a server.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "redis-server (6.2+) is required: install Debian's redis-server package" >&2
    exit 1
  fi
  echo "--- installing redis-server (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  # The package starts a system server on 6379; the tests never use it.
  (command -v systemctl >/dev/null && systemctl disable --now redis-server) >/dev/null 2>&1 || true
fi
redis-server --version
