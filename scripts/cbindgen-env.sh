#!/usr/bin/env bash
# Installs the pinned cbindgen into .tools/bin when it is not there yet (scripts/test-c.sh's
# header drift check; scripts/test.sh starts it early, at low priority).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! [ -x .tools/bin/cbindgen ] || [ "$(.tools/bin/cbindgen --version)" != "cbindgen 0.29.4" ]; then
  # A debug build: it makes one small header, and compiles in half the time of a release one.
  cargo install cbindgen --version 0.29.4 --locked --debug --root .tools < /dev/null
fi
