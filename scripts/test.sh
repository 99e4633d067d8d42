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
# CPU seconds used so far by this shell's finished children (user and system): with the wall
# time, it tells whether a part computes or waits, which decides what can run beside it.
# Called as $(cpu): the command substitution's parent is the shell asking.
tick=$(getconf CLK_TCK)
cpu() {
  local stat
  read -r stat < "/proc/$BASHPID/stat"
  # shellcheck disable=SC2086 # the fields after the command's name
  set -- ${stat##*) }
  read -r stat < "/proc/$2/stat"
  # shellcheck disable=SC2086
  set -- ${stat##*) }
  echo $(( (${14} + ${15}) / tick ))
}
run() {
  echo "=== $*"
  local status=0 t0 c0
  t0=$(date +%s) c0=$(cpu)
  timeout -k 30 "$part_limit" "$@" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "$* did not finish within ${part_limit} s" >&2
  fi
  # Free disk after each part: the CI machine's disk has run out before (target/ is the bulk).
  timings+=("$(( $(date +%s) - t0 )) s, $(( $(cpu) - c0 )) CPU-s  $*  (target/ $(du -sh "${CARGO_TARGET_DIR:-target}" 2>/dev/null | cut -f1), $(df -h --output=avail . | tail -n1 | tr -d ' ') free)")
  return "$status"
}
# The user docs' text first (seconds): cargo install --locked, no history of ours; and one
# version in every face the sources state (the wheel and the relay: scripts/test-relay.sh).
run python3 scripts/check-docs.py --text
run python3 scripts/check-version.py
# Set-up that later parts need and no earlier part makes, started now as two chains of steps,
# one after another in each, at the lowest priority for CPU and disk: what is compiled, and what
# is fetched (which waits on the network, so it does not queue behind the compiling). They take
# what the parts in front leave idle while they wait on receivers and timers, and hold no lock
# they take (cbindgen and cargo-deb build in directories of their own, the fuzz harness in
# target/fuzz, the release wheel in target/release and target/<arch>/release, while the parts
# in front build dev; apt-get runs one at a time through scripts/apt.sh). A part waits for the
# steps it needs (the fuzz run on cargo's lock of target/fuzz); a step that failed is run again
# by its part, in front, where its error shows.
prebuilt="$(mktemp -d)"
chain() {
  local step name t0 c0 status
  for step in "$@"; do
    name=${step%% *} t0=$(date +%s) c0=$(cpu) status=0
    # shellcheck disable=SC2086 # each step is a script and its flags
    nice -n 19 ionice -c 3 timeout -k 30 "$part_limit" ${step#* } > "$prebuilt/$name.log" 2>&1 \
      || status=$?
    echo "$(( $(date +%s) - t0 )) s, $(( $(cpu) - c0 )) CPU-s  ${step#* } (set-up at low priority beside the parts; exit $status)" \
      > "$prebuilt/$name.time"
  done
}
chain "cbindgen scripts/cbindgen-env.sh" "wheel scripts/build-wheel.sh" \
  "deploy-build scripts/deploy-tools.sh --build" "fuzz scripts/fuzz-c.sh --build-only" &
compile_chain=$!
chain "relay-env scripts/relay-env.sh" "deploy-fetch scripts/deploy-tools.sh --fetch" &
fetch_chain=$!
# A part that fails ends the run: the set-up still going is stopped with it (timeout, the
# step's parent, stops the step's whole process group).
stop_setup() {
  local steps
  steps=$(pgrep -P "$compile_chain,$fetch_chain" || true)
  kill "$compile_chain" "$fetch_chain" 2>/dev/null || true
  # shellcheck disable=SC2086 # a list of pids
  [ -z "$steps" ] || kill $steps 2>/dev/null || true
}
trap stop_setup EXIT
setup_going() { kill -0 "$compile_chain" 2>/dev/null || kill -0 "$fetch_chain" 2>/dev/null; }
await() {
  local name
  for name in "$@"; do
    while [ ! -f "$prebuilt/$name.time" ] && setup_going; do sleep 1; done
    [ -f "$prebuilt/$name.time" ] || continue
    echo "=== set-up: $(cat "$prebuilt/$name.time")"
    cat "$prebuilt/$name.log"
    timings+=("$(cat "$prebuilt/$name.time")")
  done
}
# The C ABI's fuzz run is left for the smoke passes, beside which it runs: its harness is built
# last in the set-up, and the C part needs no more than cbindgen.
export OUTBOUND_C_FUZZ_LATER=1
for part in rust c go python relay; do
  case $part in
    c) await cbindgen ;;
    python) await wheel ;;
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
# four groups side by side, with the subscriptions' differential. The chaos receiver is built
# once before them (the scripts' own builds then find it up to date); the scripts that build the
# relay's load generator (relaybench) share a group. Each group's output is printed whole when
# all are done; a group stops at its first failure.
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
mkdir -p bench/.build
(cd bench/chaos && go build -o ../.build/chaos .)
# One soak pass with the webhook and the subscriptions behind a bearer token (and limited)
# covers both the endpoint settings and subscriptions under faults.
group chaos "scripts/soak.sh --smoke" "scripts/soak.sh --smoke --subscriptions --endpoint-auth" \
  "scripts/killtest.sh --smoke" "scripts/killtest-redis.sh --smoke" \
  "scripts/failover-redis.sh --smoke" &
chaos=$!
group relay-faults "scripts/relay-killtest.sh --smoke" "scripts/relay-killtest.sh --tenants --smoke" \
  "scripts/relay-killtest.sh --subscriptions --smoke" "scripts/relay-outage.sh --smoke" \
  "scripts/relay-control-plane.sh --smoke" &
relay_faults=$!
# The benchmarks' smoke pass installs the wheel the Python part built rather than building one.
wheel_built=(dist/outbound_events-*-cp310-abi3-manylinux2014_"$(uname -m)".*.whl)
[ -f "${wheel_built[0]}" ] && export OUTBOUND_BENCH_WHEEL="$PWD/${wheel_built[0]}"
group load "scripts/relay-bench.sh --smoke" "scripts/relay-soak.sh --smoke" \
  "scripts/relay-tenants.sh --smoke" "scripts/relay-hostile.sh --smoke" \
  "scripts/test-subscriptions.sh" &
load=$!
# The deploy tests (image, package, chart, compose fleet) on the dev build the relay tests
# made: they mostly wait on containers, so they run beside the smoke passes; then the
# benchmarks' smoke pass.
# Only this group needs the deploy tools: it waits for them (printed with the set-up's steps
# at the end), while the others start at once.
(
  while { [ ! -f "$prebuilt/deploy-fetch.time" ] || [ ! -f "$prebuilt/deploy-build.time" ]; } \
    && setup_going; do sleep 1; done
  group deploy "env OUTBOUND_DEPLOY_PROFILE=debug scripts/test-deploy.sh" \
    "scripts/bench.sh --smoke"
) &
deploy=$!
# It waits on cargo's lock of target/fuzz while the set-up still builds the harness.
group fuzz "scripts/fuzz-c.sh ${OUTBOUND_FUZZ_SECONDS:-60}" &
fuzz=$!
t0=$(date +%s)
failed=0
for pid in "$chaos" "$relay_faults" "$load" "$deploy" "$fuzz"; do wait "$pid" || failed=1; done
await deploy-fetch deploy-build fuzz
wait "$compile_chain" "$fetch_chain" || true
rm -rf "$prebuilt"
for name in chaos relay-faults load deploy fuzz; do
  cat "$smokes/$name.log"
  [ -f "$smokes/$name.timings" ] && mapfile -t -O "${#timings[@]}" timings < "$smokes/$name.timings"
done
timings+=("$(( $(date +%s) - t0 )) s  the smoke passes, the subscriptions, the deploy tests and the C fuzz run (five groups side by side)")
rm -rf "$smokes"
if [ "$failed" -ne 0 ]; then
  printf '%s\n' "${timings[@]}"
  echo "=== a smoke pass failed (its output is above)" >&2
  exit 1
fi
printf '%s\n' "${timings[@]}"
scripts/check-tree.sh compare "$tree_state"
rm -f "$tree_state"
echo "=== all test parts passed in $(( $(date +%s) - start )) s, $(cpu) CPU-s on $(nproc) cores"
