#!/usr/bin/env bash
# The benchmarks (see BENCHMARKS.md), one command from a clean clone:
#
#   scripts/bench.sh           the full measured run (about 10 minutes on 2 cores; run it on a
#                              quiet machine), release build of outbound
#   scripts/bench.sh --smoke   every case, tiny (1,000 messages), debug build (or the wheel
#                              OUTBOUND_BENCH_WHEEL names); checks that the benchmark still
#                              works: exits non-zero if any case breaks
#   scripts/bench.sh --go      only the end-to-end rows of the Go clients (the two Go packages
#                              over liboutbound, release, and analytics-go v3 and v2), full
#                              counts; writes bench/results/go-latest.json (no venv, no wheel)
#
# It makes its own venv (.venv-bench/), pip-installs the pinned peers and matplotlib, builds
# the outbound wheel with maturin and installs it there, builds the receiver/load generator,
# the analytics-go peer and the outbound Go program (bench/outbound-go, linked statically
# against liboutbound), then runs bench/run.py: every case for every library in
# alternation against one receiver on 127.0.0.1. Every comparison with a peer runs at equal
# batch sizes (outbound's flush_at set to the peer's: 100 for the Python peers, 250 for
# analytics-go v3 and v2), with default against default as a second, labelled row.
# Results: bench/results/latest.json and
# bench/results/ratios.png (the smoke run writes to bench/.build/smoke-results/ instead, so it
# never overwrites the measured results).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  --go) MODE=go ;;
  -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
  *) echo "usage: scripts/bench.sh [--smoke | --go]" >&2; exit 2 ;;
esac

# Pinned from PyPI (and the Go module proxy for the Go peer, pinned in bench/go/go.mod).
PEERS=(segment-analytics-python==2.4.0 posthog==7.91.1)
TOOLS=(matplotlib==3.11.2)
# The same maturin as scripts/venv.sh (the Python scripts' pins), so both build alike.
MATURIN="$(grep -o 'maturin==[0-9.]*' scripts/venv.sh 2>/dev/null | head -n1 || true)"
MATURIN="${MATURIN:-maturin==1.16.0}"

for tool in cargo go; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done
PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "bench: python3 (3.10 or newer) is required" >&2; exit 1; }

BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
if [ "$MODE" != go ]; then
VENV="$ROOT/.venv-bench"
if [ ! -x "$VENV/bin/python" ]; then
  echo "--- creating .venv-bench with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
fi
# Never committed, even before .gitignore lists it.
[ -f "$VENV/.gitignore" ] || echo '*' > "$VENV/.gitignore"
PY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
echo "--- pip install ${PEERS[*]} ${TOOLS[*]} $MATURIN"
"$PY" -m pip install --quiet "${PEERS[@]}" "${TOOLS[@]}" "$MATURIN"

# The full run measures a release build; the smoke run only checks the script works, so it
# takes the debug profile and reuses the workspace's debug artifacts (CI has 2 cores).
WHEELS="$BUILD/wheel"
rm -rf "$WHEELS"
if [ "$MODE" = full ]; then
  echo "--- building the outbound wheel (maturin, release)"
  "$PY" -m maturin build --release --interpreter "$PY" --out "$WHEELS"
elif [ -n "${OUTBOUND_BENCH_WHEEL:-}" ]; then
  # The test command hands over the wheel its Python part built from the same tree.
  echo "--- the outbound wheel: $OUTBOUND_BENCH_WHEEL (smoke mode)"
  mkdir -p "$WHEELS" && cp "$OUTBOUND_BENCH_WHEEL" "$WHEELS/"
else
  echo "--- building the outbound wheel (maturin, debug: smoke mode)"
  "$PY" -m maturin build --interpreter "$PY" --out "$WHEELS"
fi
shopt -s nullglob
wheels=("$WHEELS"/outbound_events-*.whl)
[ "${#wheels[@]}" -eq 1 ] || { echo "bench: expected one outbound wheel in $WHEELS" >&2; exit 1; }
"$PY" -m pip install --quiet --force-reinstall --no-deps "${wheels[0]}"
fi

# liboutbound for the Go program: release for measured runs, the workspace's debug build for
# the smoke run.
if [ "$MODE" = smoke ]; then
  echo "--- building liboutbound (debug: smoke mode)"
  cargo build -p outbound-c
  LIBDIR="$(cd "$ROOT" && realpath -m "${CARGO_TARGET_DIR:-target}")/debug"
else
  echo "--- building liboutbound (release)"
  cargo build -p outbound-c --release
  LIBDIR="$(cd "$ROOT" && realpath -m "${CARGO_TARGET_DIR:-target}")/release"
fi

echo "--- building the receiver / load generator, the analytics-go peer and the outbound Go program"
(cd bench/receiver && go build -o "$BUILD/receiver" .)
(cd bench/go && go build -o "$BUILD/analytics-go-peer" .)
(cd bench/go-v2 && go build -o "$BUILD/analytics-go-v2-peer" .)
# cgo's build cache does not look at liboutbound.a: its digest goes into the flags.
LIBSUM="$(sha256sum "$LIBDIR/liboutbound.a" | cut -c1-16)"
(cd bench/outbound-go && CGO_ENABLED=1 CGO_CFLAGS="-g -O2 -DOUTBOUND_BUILD=$LIBSUM" CGO_LDFLAGS="-L$LIBDIR" \
  go build -buildvcs=false -o "$BUILD/outbound-go" .)

# The loopback limit is the best of our load generator and wrk (Debian's package), when wrk
# can be had; the smoke run never installs anything.
if [ "$MODE" = full ] && ! command -v wrk >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "--- apt-get install wrk"
  scripts/apt.sh install -y -qq wrk >/dev/null 2>&1 \
    || { scripts/apt.sh update -qq >/dev/null 2>&1 && scripts/apt.sh install -y -qq wrk >/dev/null 2>&1; } \
    || echo "bench: wrk not available; the loopback limit comes from the bench load generator alone"
fi

if [ "$MODE" = go ]; then
  PY="$PYTHON"
  VERSIONS="$(printf '{"outbound": "%s", "analytics-go": "%s", "analytics-go-v2": "%s", "go": "%s", "rustc": "%s"}' \
    "$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)" \
    "$(awk '/segmentio\/analytics-go\/v3 /{print $NF; exit}' bench/go/go.mod)" \
    "$(awk '/segmentio\/analytics-go /{print $NF; exit}' bench/go-v2/go.mod)" \
    "$(go version)" "$(rustc --version)")"
else
VERSIONS="$("$PY" - <<'EOF'
import json, subprocess
from importlib.metadata import version
def cmd(*a):
    try:
        return subprocess.run(a, capture_output=True, text=True).stdout.strip().splitlines()[0]
    except Exception:
        return None
print(json.dumps({
    "outbound": version("outbound-events"),
    "segment-analytics-python": version("segment-analytics-python"),
    "posthog": version("posthog"),
    "matplotlib": version("matplotlib"),
    "analytics-go": next((l.split()[-1] for l in open("bench/go/go.mod") if "segmentio/analytics-go/v3 " in l), None),
    "analytics-go-v2": next((l.split()[-1] for l in open("bench/go-v2/go.mod") if "segmentio/analytics-go " in l), None),
    "go": cmd("go", "version"),
    "rustc": cmd("rustc", "--version"),
    "wrk": (cmd("sh", "-c", "wrk -v 2>&1") or "").split(" [")[0] or None,
}))
EOF
)"
fi

case "$MODE" in
  full) OUT="$ROOT/bench/results"; ARGS=() ;;
  go) OUT="$ROOT/bench/results"; ARGS=(--only-go) ;;
  smoke) OUT="$BUILD/smoke-results"; ARGS=(--smoke) ;;
esac
echo "--- bench/run.py ${ARGS[*]:-} (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
exec "$PY" bench/run.py "${ARGS[@]}" --receiver-bin "$BUILD/receiver" \
  --go-bin "$BUILD/analytics-go-peer" --outbound-go-bin "$BUILD/outbound-go" \
  --go-v2-bin "$BUILD/analytics-go-v2-peer" --out "$OUT" \
  --versions "$VERSIONS" </dev/null
