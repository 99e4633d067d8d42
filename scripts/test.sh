#!/usr/bin/env bash
# Runs every test of the project, installing what it needs first. `.ci/run` calls this.
# Each part can also be run alone: scripts/test-rust.sh, scripts/test-c.sh, scripts/test-go.sh,
# scripts/test-python.sh, scripts/test-relay.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# A CI clone is built once: incremental caches would only add to target/ (0.85 GB of it once).
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
# A backstop: a part that hangs fails here, named, long before CI's own limit.
part_limit="${OUTBOUND_PART_TIMEOUT:-1500}"
echo "=== $(df -h --output=avail . | tail -n1 | tr -d ' ') of disk free at the start"
# No step may change a tracked file (a stale lock file, a regenerated header): checked at the end.
tree_state="$(mktemp)"
scripts/check-tree.sh save "$tree_state"
timings=()
run() {
  echo "=== $*"
  local status=0 t0
  t0=$(date +%s)
  timeout -k 30 "$part_limit" "$@" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "$* did not finish within ${part_limit} s" >&2
  fi
  # Free disk after each part: the CI machine's disk has run out before (target/ is the bulk).
  timings+=("$(( $(date +%s) - t0 )) s  $*  (target/ $(du -sh "${CARGO_TARGET_DIR:-target}" 2>/dev/null | cut -f1), $(df -h --output=avail . | tail -n1 | tr -d ' ') free)")
  return "$status"
}
# The user docs' text first (seconds): cargo install --locked, no history of ours; and one
# version in every face the sources state (the wheel and the relay: scripts/test-relay.sh).
run python3 scripts/check-docs.py --text
run python3 scripts/check-version.py
# Set-up that later parts need and no earlier part makes, started now, one step after another
# at the lowest priority for CPU and disk: it takes what the parts in front leave idle while
# they wait on receivers and timers, and holds no lock they take (cbindgen and cargo-deb build
# in directories of their own, the fuzz harness in target/fuzz, the release wheel in
# target/release and target/<arch>/release, while the parts in front build dev; apt-get runs
# one at a time through scripts/apt.sh). A part waits for the steps it needs (the fuzz step
# also on cargo's lock of target/fuzz); a step that failed is run again by its part, in front,
# where its error shows.
prebuilt="$(mktemp -d)"
prebuild_steps=(
  "cbindgen scripts/cbindgen-env.sh"
  "fuzz scripts/fuzz-c.sh --build-only"
  "wheel scripts/build-wheel.sh"
  "relay-env scripts/relay-env.sh"
  "deploy-tools scripts/deploy-tools.sh"
)
(
  for step in "${prebuild_steps[@]}"; do
    name=${step%% *} t0=$(date +%s) status=0
    # shellcheck disable=SC2086 # each step is a script and its flags
    nice -n 19 ionice -c 3 timeout -k 30 "$part_limit" ${step#* } > "$prebuilt/$name.log" 2>&1 \
      || status=$?
    echo "$(( $(date +%s) - t0 )) s  ${step#* } (set-up at low priority beside the parts; exit $status)" \
      > "$prebuilt/$name.time"
  done
) &
prebuild_chain=$!
# A part that fails ends the run: the set-up still going is stopped with it (timeout, the
# step's parent, stops the step's whole process group).
stop_setup() {
  local steps
  steps=$(pgrep -P "$prebuild_chain" || true)
  kill "$prebuild_chain" 2>/dev/null || true
  # shellcheck disable=SC2086 # a list of pids
  [ -z "$steps" ] || kill $steps 2>/dev/null || true
}
trap stop_setup EXIT
await() {
  local name
  for name in "$@"; do
    while [ ! -f "$prebuilt/$name.time" ] && kill -0 "$prebuild_chain" 2>/dev/null; do sleep 1; done
    [ -f "$prebuilt/$name.time" ] || continue
    echo "=== set-up: $(cat "$prebuilt/$name.time")"
    cat "$prebuilt/$name.log"
    timings+=("$(cat "$prebuilt/$name.time")")
  done
}
for part in rust c go python relay subscriptions; do
  case $part in
    c) await cbindgen ;;
    python) await fuzz wheel ;;
    relay) await relay-env ;;
  esac
  run "scripts/test-$part.sh"
done
# The fault soak, the kill tests (the library's, the relay's, Redis's), Redis's failover, the
# relay's speed benchmark, soak, tenants and hostile-input costs, and the benchmarks run here
# only as smoke passes (the full runs' figures are in BENCHMARKS.md and bench/results/): the
# soak still checks 0 lost and one outcome per message, the relay's kill tests 0 acknowledged
# events lost, the hostile pass that the relay answers every shape.
# They wait on receivers' stalls, retries and timeouts far more than they compute, so they run as
# two groups side by side (about half the time in a row). Scripts that build the same tool into
# bench/.build (chaos; relaybench) share a group, so no binary is rebuilt while another runs it.
# Each group's output is printed whole when both are done; a group stops at its first failure.
smokes="$(mktemp -d)"
group() {
  local name=$1 status=0
  shift
  (
    timings=()
    for cmd in "$@"; do
      # shellcheck disable=SC2086 # each entry is a script and its flags
      run $cmd || { status=$?; break; }
    done
    printf '%s\n' "${timings[@]}" > "$smokes/$name.timings"
    exit "$status"
  ) > "$smokes/$name.log" 2>&1
}
await deploy-tools
wait "$prebuild_chain" || true
rm -rf "$prebuilt"
# One soak pass with the webhook and the subscriptions behind a bearer token (and limited)
# covers both the endpoint settings and subscriptions under faults.
group chaos "scripts/soak.sh --smoke" "scripts/soak.sh --smoke --subscriptions --endpoint-auth" \
  "scripts/killtest.sh --smoke" \
  "scripts/relay-killtest.sh --smoke" "scripts/relay-killtest.sh --tenants --smoke" \
  "scripts/relay-killtest.sh --subscriptions --smoke" \
  "scripts/killtest-redis.sh --smoke" "scripts/failover-redis.sh --smoke" &
chaos=$!
# The benchmarks' smoke pass installs the wheel the Python part built rather than building one.
wheel_built=(dist/outbound_events-*-cp310-abi3-manylinux2014_"$(uname -m)".*.whl)
[ -f "${wheel_built[0]}" ] && export OUTBOUND_BENCH_WHEEL="$PWD/${wheel_built[0]}"
group load "scripts/relay-bench.sh --smoke" "scripts/relay-soak.sh --smoke" \
  "scripts/relay-tenants.sh --smoke" "scripts/relay-hostile.sh --smoke" \
  "scripts/relay-control-plane.sh --smoke" "scripts/bench.sh --smoke" &
load=$!
# The deploy tests (image, package, chart, compose fleet) on the dev build the relay tests
# made: they mostly wait on containers, so they run beside the smoke passes; then a
# receiver's outage (it mostly waits too).
group deploy "env OUTBOUND_DEPLOY_PROFILE=debug scripts/test-deploy.sh" \
  "scripts/relay-outage.sh --smoke" &
deploy=$!
t0=$(date +%s)
failed=0
wait "$chaos" || failed=1
wait "$load" || failed=1
wait "$deploy" || failed=1
for name in chaos load deploy; do
  cat "$smokes/$name.log"
  [ -f "$smokes/$name.timings" ] && mapfile -t -O "${#timings[@]}" timings < "$smokes/$name.timings"
done
timings+=("$(( $(date +%s) - t0 )) s  the smoke passes and the deploy tests (three groups side by side)")
rm -rf "$smokes"
if [ "$failed" -ne 0 ]; then
  printf '%s\n' "${timings[@]}"
  echo "=== a smoke pass failed (its output is above)" >&2
  exit 1
fi
printf '%s\n' "${timings[@]}"
scripts/check-tree.sh compare "$tree_state"
rm -f "$tree_state"
echo "=== all test parts passed in $(( $(date +%s) - start )) s"
