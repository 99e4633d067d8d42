#!/usr/bin/env bash
# The Go packages' tests (bindings/go and bindings/go/v2, analytics-go v2's API), from a clean
# clone:
#   1. cargo build -p outbound-c  -> liboutbound.a / .so (debug profile)
#   2. gofmt and go vet on bindings/go and examples/go
#   3. go test -race in bindings/go and its v2 package against real receivers on 127.0.0.1
#      (Node checks the bodies and signatures; the quickstart example is built statically and
#      dynamically and run; v2's own programs run unchanged but for the import path), then
#      the allocation counts without -race
#   4. the README's Go quickstart is examples/go/main.go, and docs/go.md's "Testing your
#      application" block is the marked test in bindings/go/testing_test.go
#   5. the docs' Go blocks, run as written (scripts/check-docs.py --part go)
# Needs go (1.22 or newer), cargo, a C compiler and node. Works with CI=true, no stdin.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

step() { echo; echo "--- go: $*"; }
die() { echo "go: FAILED: $*" >&2; exit 1; }

step "tools"
for tool in go cargo gcc node; do
  command -v "$tool" >/dev/null || die "$tool is required"
done
go version

step "build liboutbound"
cargo build -p outbound-c
# CARGO_TARGET_DIR may be relative (to the root) or absolute.
libdir="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/debug"
ls -l "$libdir/liboutbound.a" "$libdir/liboutbound.so"
# A program linked against liboutbound.so asks for its SONAME (liboutbound.so.0.<minor>);
# cargo writes only liboutbound.so, so link the SONAME to it (as scripts/test-c.sh does).
soname=$(readelf -d "$libdir/liboutbound.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -n "$soname" ] && ln -sfn liboutbound.so "$libdir/$soname"

# The package links liboutbound.a from here. cgo's build cache does not look at the header
# or the library, so their digests go into the flags: a changed library is always relinked.
sum=$(cat include/outbound.h "$libdir/liboutbound.a" | sha256sum | cut -c1-16)
export CGO_ENABLED=1
export CGO_CFLAGS="-g -O2 -DOUTBOUND_BUILD=$sum"
export CGO_LDFLAGS="-L$libdir"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

step "gofmt and go vet"
unformatted=$(gofmt -l bindings/go examples/go)
[ -z "$unformatted" ] || die "not gofmt'ed: $unformatted"
(cd bindings/go && go vet ./...)
(cd examples/go && go vet ./...)
echo "gofmt, go vet: clean"

step "go test -race (real receivers on 127.0.0.1)"
out=$(mktemp)
# A redis-server for the Redis spool test (OUTBOUND_TEST_REDIS), stopped on exit.
scripts/redis-env.sh
redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis_dir=$(mktemp -d)
redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$redis_dir" --save "" \
  --appendonly yes --appendfsync everysec --daemonize no >/dev/null &
redis_pid=$!
trap 'rm -f "$out" "$out.test"; kill "$redis_pid" 2>/dev/null || true; rm -rf "$redis_dir"' EXIT
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.05; done
export OUTBOUND_TEST_REDIS="redis://127.0.0.1:$redis_port/0"
if ! (cd bindings/go && go test -race -count=1 -v ./... < /dev/null) > "$out" 2>&1; then
  grep -vE '^(=== (RUN|PAUSE|CONT))' "$out" | tail -n 80
  die "go test"
fi
passed=$(grep -cE '^--- PASS' "$out" || true)
failed=$(grep -cE '^--- FAIL' "$out" || true)
grep -E '^(--- |ok )' "$out" | sed 's/^/  /'

step "go test (allocation counts: without -race, whose instrumentation allocates)"
if ! (cd bindings/go && go test -count=1 -v -run 'Allocate' ./... < /dev/null) > "$out" 2>&1; then
  grep -vE '^(=== (RUN|PAUSE|CONT))' "$out" | tail -n 40
  die "go test (allocation counts)"
fi
grep -qE '^--- PASS' "$out" || die "no allocation test ran"
passed=$((passed + $(grep -cE '^--- PASS' "$out")))
grep -E '^(--- |ok )' "$out" | sed 's/^/  /'

step "the README's Go quickstart is examples/go/main.go"
awk '/^## Use from Go/{s=1} s&&/^```go$/{c=1;next} c&&/^```$/{exit} c{print}' README.md > "$out"
cmp -s "$out" examples/go/main.go || die "the Go example in README.md (## Use from Go) differs from examples/go/main.go"
echo "README.md: same as examples/go/main.go"
# Built as its header says (go build -o quickstart ., in examples/go): the binary must not
# show in git status (.gitignore), so following the README leaves the clone clean.
rm -f examples/go/quickstart
(cd examples/go && go build -o quickstart .) || die "examples/go: go build -o quickstart . fails"
shown=$(git status --porcelain -- examples/go)
rm -f examples/go/quickstart
[ -z "$shown" ] || die "examples/go: after go build -o quickstart ., git status shows: $shown"
echo "examples/go: go build -o quickstart . leaves git status clean"

step "docs/go.md's Testing your application block is a test in bindings/go/testing_test.go"
awk '/^## Testing your application/{s=1} s&&/^```go$/{c=1;next} c&&/^```$/{exit} c{print}' docs/go.md > "$out"
awk '/^\/\/ --- docs\/go.md "Testing your application" begins/{c=1;next}
     /^\/\/ --- docs\/go.md "Testing your application" ends/{c=0} c{print}' bindings/go/testing_test.go \
  | sed -e '1{/^$/d}' | sed -e '${/^$/d}' > "$out.test"
[ -s "$out" ] || die "no Go block in docs/go.md, Testing your application"
cmp -s "$out" "$out.test" || { diff -u "$out.test" "$out" | head -n 20; die "docs/go.md (Testing your application) differs from the marked test in bindings/go/testing_test.go"; }
echo "docs/go.md: same as the test in bindings/go/testing_test.go"
passed=$((passed + 3)) # gofmt/vet, the README example and the docs' test

step "the docs' Go blocks, run as written (scripts/check-docs.py)"
OUTBOUND_C_LIBDIR="$libdir" python3 scripts/check-docs.py --part go || die "a Go block of the docs"
passed=$((passed + 1))

echo
echo "go: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
