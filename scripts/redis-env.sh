#!/usr/bin/env bash
# Makes sure `redis-server` (6.2 or newer: the Redis spool needs XAUTOCLAIM) and
# `redis-sentinel` (the failover tests) are on PATH, installing Debian's packages when they
# are missing (CI is a clean machine, root). Sourced by the test scripts or run alone. The
# tests start their own servers and Sentinels on 127.0.0.1 (free ports, AOF and config in
# temp dirs) and stop them; nothing here starts a server.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-sentinel >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "redis-server (6.2+) and redis-sentinel are required: install Debian's redis-server" \
      "and redis-sentinel packages" >&2
    exit 1
  fi
  echo "--- installing redis-server and redis-sentinel (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt="$(dirname "${BASH_SOURCE[0]}")/apt.sh"
  "$apt" update -qq
  "$apt" install -y -qq --no-install-recommends redis-server redis-sentinel >/dev/null
  # The packages start a system server on 6379 and a Sentinel on 26379; the tests use
  # neither.
  (command -v systemctl >/dev/null \
    && systemctl disable --now redis-server redis-sentinel) >/dev/null 2>&1 || true
fi
redis-server --version
