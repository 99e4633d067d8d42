#!/usr/bin/env bash
# Fuzzes the C ABI: every JSON-taking entry point, the calls' and the options' text arguments
# (a webhook's endpoint settings included), and outbound_sign / outbound_verify and their
# _sha256 forms (bindings/c/fuzz/fuzz_targets/entry_points.rs).
#
# libFuzzer through the libfuzzer-sys crate, built with the flags `cargo fuzz build` uses
# (SanitizerCoverage + AddressSanitizer). There is no nightly Rust here, so RUSTC_BOOTSTRAP=1
# lets stable rustc accept -Zsanitizer=address (its ASan runtime ships with stable).
#
# Usage: scripts/fuzz-c.sh [SECONDS]   (default 60). Corpus: .fuzz-corpus/entry_points
# (kept between runs, git-ignored). A finding is saved as .fuzz-corpus/crash-* and fails.
#        scripts/fuzz-c.sh --build-only   builds the harness and stops (scripts/test.sh starts
#                                         it early, at low priority)
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=false
if [ "${1:-}" = --build-only ]; then build_only=true; shift; fi
seconds=${1:-60}
root=$PWD
host=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR="$root/target/fuzz"
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cllvm-args=-simplifycfg-branch-fold-threshold=0 \
--cfg fuzzing -Zsanitizer=address -Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers"
# --target keeps the instrumentation off build scripts and proc-macros (as cargo fuzz does).
(cd bindings/c/fuzz && cargo build --release --target "$host" --bin entry_points)
bin="$CARGO_TARGET_DIR/$host/release/entry_points"
if $build_only; then exit 0; fi

corpus="$root/.fuzz-corpus/entry_points"
mkdir -p "$corpus"
# Seeds: the first byte picks the entry point (see the target), the rest is its input.
seed() { printf "$2" > "$corpus/seed-$1"; }
seed json '\x00{"type":"track","userId":"u1","event":"E","properties":{"a":[1,2.5,null,"x"]},"timestamp":"2026-11-21T09:30:00.123Z"}'
# The same selector feeds the bytes to outbound_enqueue_packed too: a packed track with properties
# {"a":7,"l":[true,"x"]} (the form is in bindings/c/src/packed.rs).
seed packed '\x00\x01\x05\x00\x00\x00track\x04\x02\x00\x00\x00u1\x07\x01\x00\x00\x00E\x0d\x24\x00\x00\x00{\x02\x00\x00\x00\x01\x00\x00\x00a\x69\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00l[\x02\x00\x00\x00ts\x01\x00\x00\x00x'
seed props '\x01{"plan":"pro","n":1e21,"nested":{"k":[true,false]}}'
seed context '\x02{"ip":"10.0.0.1","library":{"name":"x"}}'
seed integrations '\x03{"All":false,"Webhooks":true}'
seed traits '\x04{"email":"a@b.c"}'
seed headers '\x09{"X-Team":"growth","Authorization":"Bearer t"}'
seed subscription '\x09{"name":"s","subscribe":"type = \\"track\\"","mapping":{"url":"http://127.0.0.1:9/s","data":{"t":{"@path":"$.properties.total"}}}}'
seed verify '\x0a\x06abc1235099cab379b3be52908387457007040cc934ef86{"cool":true}'
seed text '\x0c2026-11-21T09:30:00+02:00'

# ASan's ODR check misfires on two function-local statics of the bundled SQLite C code
# (a dependency of the core); nothing of ours is involved, so that one check is off.
export ASAN_OPTIONS="detect_odr_violation=0:abort_on_error=1:symbolize=1"
log="$CARGO_TARGET_DIR/entry_points.log"
echo "fuzzing the C ABI for ${seconds}s ..."
if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$root/.fuzz-corpus/" "$corpus" > "$log" 2>&1; then
  tail -n 60 "$log"
  echo "fuzz: the harness found a problem (input saved under .fuzz-corpus/, log $log)" >&2
  exit 1
fi
grep -E '^Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added' "$log"
echo "fuzz: nothing found"
# A CI clone needs the instrumented build no more (~600 MB): its disk has run out before.
if [ "${CI:-}" = true ]; then rm -rf "$CARGO_TARGET_DIR"; fi
