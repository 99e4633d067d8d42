#!/usr/bin/env bash
# The Rust gates and tests: fmt, clippy (-D warnings), then every crate's tests, which
# include the Node round-trip and signature interop tests (Node must be on PATH) and the Redis
# spool's tests against a real redis-server (scripts/redis-env.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)"; exit 1; }
command -v node >/dev/null || { echo "node is required for the JSON and signature interop tests"; exit 1; }
# The Redis spool's tests start their own redis-server (installed here when missing).
scripts/redis-env.sh
# Each step's time, printed at the end (the part's total is in scripts/test.sh's table).
steps=()
step() {
  local t0=$SECONDS
  "$@"
  steps+=("$(( SECONDS - t0 )) s  $*")
}
step python3 scripts/check-msrv.py
step python3 scripts/check-features.py
step cargo fmt --all --check
step cargo clippy --workspace --all-targets -- -D warnings
# The relay's fuzz loop runs in scripts/test-relay.sh, where its time and count are printed.
step cargo test --workspace -- --skip random_requests_never_crash_the_relay
# The core without its optional parts (the SQLite and Redis spools, audience sync): it builds,
# and its unit tests pass, among them those of what stands in for the missing parts (the
# integration tests need none of the cfg'd code and ran above).
step cargo build -p outbound --no-default-features
step cargo test -p outbound --no-default-features --lib
# The Rust blocks of README.md and docs/rust.md, compiled against the crate and run as written.
step python3 scripts/check-docs.py --part rust
printf 'rust: %s\n' "${steps[@]}"
