#!/usr/bin/env bash
# The C ABI's tests, from a clean clone:
#   1. tools: cbindgen 0.29.4 (pinned, into .tools/), gcc/g++/valgrind/pkg-config (apt-get,
#      only when missing)
#   2. cargo build -p outbound-c  -> liboutbound.so, liboutbound.a (debug profile)
#   3. include/outbound.h has no drift from a fresh cbindgen run
#   4. tests/c/test_outbound.c built with -std=c11 -Wall -Wextra -Wpedantic -Werror, linked
#      once against the shared and once against the static library; the header also
#      compiled and linked as C++
#   5. both test programs run, then again under valgrind (0 bytes lost of any kind)
#   6. the fuzz harness for about a minute (scripts/fuzz-c.sh; OUTBOUND_FUZZ_SECONDS)
#   7. docs/c.md's "Testing your application" program built, run, and run under valgrind
#   8. scripts/install-c.sh into a temporary prefix; examples/c/quickstart.c built with
#      `pkg-config --cflags --libs outbound` (and outbound-static) and run against a
#      local receiver on 127.0.0.1
#   9. the docs' C blocks, run as written (scripts/check-docs.py --part c)
# Exits non-zero on any failure. Works with CI=true and no standard input.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=tests/c/build
mkdir -p "$build"
export DEBIAN_FRONTEND=noninteractive

step() { echo; echo "--- c: $*"; }
die() { echo "c: FAILED: $*" >&2; exit 1; }

step "tools"
command -v cargo >/dev/null || die "cargo is required (https://rustup.rs)"
missing=()
for tool in gcc:gcc g++:g++ valgrind:valgrind pkg-config:pkg-config cmp:diffutils; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} with apt-get"
  scripts/apt.sh update -q < /dev/null
  scripts/apt.sh install -y -q "${missing[@]}" < /dev/null
fi
export PATH="$root/.tools/bin:$PATH"
scripts/cbindgen-env.sh
cbindgen --version

step "build liboutbound"
cargo build -p outbound-c
libdir=${CARGO_TARGET_DIR:-target}/debug
# The programs' rpath: absolute whether CARGO_TARGET_DIR is relative or absolute.
libdir_abs="$(cd "$libdir" && pwd)"
ls -l "$libdir/liboutbound.so" "$libdir/liboutbound.a"

step "SONAME (docs/c.md, Versions and the ABI)"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
IFS=. read -r major minor _ <<<"$version"
if [ "$major" = 0 ]; then soname="liboutbound.so.0.$minor"; else soname="liboutbound.so.$major"; fi
soname_of() { readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p'; }
needed_of() { readelf -d "$1" | sed -n 's/.*Shared library: \[\(liboutbound[^]]*\)\]/\1/p'; }
[ "$(soname_of "$libdir/liboutbound.so")" = "$soname" ] \
  || die "liboutbound.so $version has SONAME '$(soname_of "$libdir/liboutbound.so")', expected $soname"
echo "liboutbound.so $version: SONAME $soname"
# Programs linked here ask for the SONAME; cargo only writes liboutbound.so.
ln -sfn liboutbound.so "$libdir/$soname"

step "header drift"
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
# The same command as the one that made the checked-in header, output to a temp file.
cbindgen --quiet --config bindings/c/cbindgen.toml --output "$fresh" bindings/c
if ! cmp -s "$fresh" include/outbound.h; then
  diff -u include/outbound.h "$fresh" | head -n 40 || true
  die "include/outbound.h is out of date with bindings/c. Regenerate it with:
  cbindgen --quiet --config bindings/c/cbindgen.toml --output include/outbound.h bindings/c"
fi
echo "include/outbound.h matches bindings/c"

step "compile the C tests (C11, -Werror), shared and static, and the header as C++"
CFLAGS=(-std=c11 -Wall -Wextra -Wpedantic -Werror -g -O1 -Iinclude -Itests/c)
STATIC_LIBS=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
gcc "${CFLAGS[@]}" -c tests/c/receiver.c -o "$build/receiver.o"
gcc "${CFLAGS[@]}" tests/c/test_outbound.c "$build/receiver.o" \
  -L"$libdir" -Wl,-rpath,"$libdir_abs" -loutbound -lpthread -o "$build/test_shared"
gcc "${CFLAGS[@]}" tests/c/test_outbound.c "$build/receiver.o" \
  "$libdir/liboutbound.a" "${STATIC_LIBS[@]}" -o "$build/test_static"
gcc "${CFLAGS[@]}" tests/c/receiver_main.c "$build/receiver.o" -lpthread -o "$build/receiver"
g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -Iinclude tests/c/header_cpp.cpp \
  -L"$libdir" -Wl,-rpath,"$libdir_abs" -loutbound -o "$build/header_cpp"
"$build/header_cpp"
# The header alone, as strict C11 and C++17, with nothing else included before it.
echo '#include "outbound.h"' | gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude -x c -fsyntax-only -
echo '#include "outbound.h"' | g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude -x c++ -fsyntax-only -

passed=0
failed=0
count() { # adds the "N passed, N failed" of a test run's output file
  local line p f
  line=$(tail -n 1 "$1")
  p=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' <<<"$line")
  f=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' <<<"$line")
  [ -n "$p" ] && [ -n "$f" ] || die "no 'N passed, N failed' line in $1"
  passed=$((passed + p))
  failed=$((failed + f))
}

step "a redis-server for the Redis spool test (OUTBOUND_TEST_REDIS)"
scripts/redis-env.sh
redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$build/redis"
redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$build/redis" --save "" \
  --appendonly yes --appendfsync everysec --daemonize no >/dev/null &
redis_pid=$!
stop_redis() { kill "$redis_pid" 2>/dev/null || true; }
trap 'rm -f "$fresh"; stop_redis' EXIT
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.05; done
export OUTBOUND_TEST_REDIS="redis://127.0.0.1:$redis_port/0"

step "run the C tests"
for kind in shared static; do
  echo "test_$kind:"
  if ! "$build/test_$kind" > "$build/test_$kind.out" 2>&1; then
    cat "$build/test_$kind.out"
    die "test_$kind failed"
  fi
  tail -n 1 "$build/test_$kind.out"
  count "$build/test_$kind.out"
done

step "run the C tests under valgrind"
for kind in shared static; do
  echo "test_$kind under valgrind:"
  # The fork test is skipped here: a forked child inherits every allocation of the parent
  # (the test's receiver threads' buffers included), which a leak check in the child reports.
  if ! OUTBOUND_TEST_SKIP_FORK=1 valgrind --error-exitcode=1 --leak-check=full \
      --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
      --suppressions=tests/c/valgrind.supp --log-file="$build/valgrind_$kind.log" \
      "$build/test_$kind" > "$build/test_${kind}_vg.out" 2>&1; then
    cat "$build/test_${kind}_vg.out"
    tail -n 40 "$build/valgrind_$kind.log"
    die "test_$kind under valgrind failed"
  fi
  tail -n 1 "$build/test_${kind}_vg.out"
  for kind_lost in "definitely lost" "indirectly lost" "possibly lost"; do
    if grep -q "$kind_lost:" "$build/valgrind_$kind.log"; then
      grep -q "$kind_lost: 0 bytes in 0 blocks" "$build/valgrind_$kind.log" \
        || die "valgrind: $kind_lost is not 0 (see $build/valgrind_$kind.log)"
    fi
  done
  grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|All heap blocks" \
    "$build/valgrind_$kind.log" | sed 's/^==[0-9]*== */  /'
  count "$build/test_${kind}_vg.out"
done

step "fuzz"
if [ "${OUTBOUND_C_FUZZ_LATER:-}" = 1 ]; then
  # scripts/test.sh runs it beside the smoke passes, where a core is idle.
  echo "fuzz: run later by scripts/test.sh"
  passed=$((passed - 1))
else
  scripts/fuzz-c.sh "${OUTBOUND_FUZZ_SECONDS:-60}"
fi

step "the docs' \"Use from C\" example is examples/c/quickstart.c"
# The program CI builds below must be the one the docs show: compare the first C block
# after "## Use from C" in each doc that has that section.
for doc in README.md docs/c.md; do
  [ -f "$doc" ] && grep -q '^## Use from C' "$doc" || continue
  awk '/^## Use from C/{s=1} s&&/^```c$/{c=1;next} c&&/^```$/{exit} c{print}' "$doc" > "$build/doc_example.c"
  cmp -s "$build/doc_example.c" examples/c/quickstart.c \
    || die "the C example in $doc (## Use from C) differs from examples/c/quickstart.c"
  echo "$doc: same as examples/c/quickstart.c"
done

step "the docs' \"Testing your application\" program builds and runs (under valgrind too)"
# The first C block of that section in docs/c.md is a complete program: a recording client.
awk '/^## Testing your application/{s=1} s&&/^```c$/{c=1;next} c&&/^```$/{exit} c{print}' docs/c.md \
  > "$build/doc_testing.c"
[ -s "$build/doc_testing.c" ] || die "no C block in docs/c.md, Testing your application"
gcc "${CFLAGS[@]}" "$build/doc_testing.c" -L"$libdir" -Wl,-rpath,"$libdir_abs" -loutbound \
  -o "$build/doc_testing"
"$build/doc_testing" || die "the docs/c.md Testing your application program failed"
valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
  --show-leak-kinds=definite,indirect,possible --suppressions=tests/c/valgrind.supp \
  "$build/doc_testing" > /dev/null || die "the docs/c.md Testing your application program under valgrind"
echo "docs/c.md: the Testing your application program builds and runs, valgrind clean"

step "install into a prefix, build the example with pkg-config, run it"
prefix=$(mktemp -d)
trap 'rm -f "$fresh"; rm -rf "$prefix"; stop_redis' EXIT
OUTBOUND_C_PROFILE=debug scripts/install-c.sh "$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
for pc in outbound outbound-static; do
  # shellcheck disable=SC2046
  gcc -std=c11 -Wall -Wextra -Wpedantic -Werror examples/c/quickstart.c -o "$build/quickstart-$pc" \
    $(pkg-config --cflags --libs "$pc")
  portfile="$build/receiver.port"
  rm -f "$portfile"
  "$build/receiver" "$portfile" 1 60000 > "$build/receiver-$pc.out" 2>&1 &
  rx_pid=$!
  for _ in $(seq 100); do [ -s "$portfile" ] && break; sleep 0.1; done
  [ -s "$portfile" ] || die "the example's receiver did not start"
  port=$(cat "$portfile")
  echo "quickstart ($pc):"
  if ! LD_LIBRARY_PATH="$prefix/lib" OUTBOUND_WRITE_KEY=example-key \
      OUTBOUND_ENDPOINT="http://127.0.0.1:$port" "$build/quickstart-$pc" > "$build/quickstart-$pc.out" 2>&1; then
    cat "$build/quickstart-$pc.out"
    kill "$rx_pid" 2>/dev/null || true
    die "examples/c/quickstart.c ($pc) failed"
  fi
  wait "$rx_pid" || die "the example's receiver got nothing"
  sed 's/^/  /' "$build/quickstart-$pc.out"
  grep -q "delivered 2, failed 0, dropped 0" "$build/quickstart-$pc.out" || die "example did not deliver"
  grep -q '"event":"Order Completed"' "$build/receiver-$pc.out" || die "receiver did not get the track"
  grep -q 'Basic ZXhhbXBsZS1rZXk6' "$build/receiver-$pc.out" || die "receiver did not get the write key"
done

step "installed names: the library, its SONAME link and the -loutbound link"
[ -f "$prefix/lib/liboutbound.so.$version" ] && [ ! -L "$prefix/lib/liboutbound.so.$version" ] \
  || die "$prefix/lib/liboutbound.so.$version is not the installed library"
[ "$(readlink "$prefix/lib/$soname")" = "liboutbound.so.$version" ] || die "$soname does not point to liboutbound.so.$version"
[ "$(readlink "$prefix/lib/liboutbound.so")" = "$soname" ] || die "liboutbound.so does not point to $soname"
[ "$(needed_of "$build/quickstart-outbound")" = "$soname" ] \
  || die "a program linked with pkg-config outbound needs '$(needed_of "$build/quickstart-outbound")', not $soname"
[ -z "$(needed_of "$build/quickstart-outbound-static")" ] || die "the static build needs liboutbound.so"
(cd "$prefix/lib" && for f in liboutbound.so*; do
  if [ -L "$f" ]; then echo "  $f -> $(readlink "$f")"; else echo "  $f"; fi
done)
echo "quickstart (shared) needs $soname; quickstart (static) needs no liboutbound"

step "the docs' C build lines, as written, from the repository root"
# The second sh block of "## Use from C" (the one that builds quickstart), with the docs'
# prefix replaced by the temporary one; each line writes ./quickstart, removed after.
trap 'rm -f "$fresh" quickstart; rm -rf "$prefix"; stop_redis' EXIT
for doc in README.md docs/c.md; do
  awk '/^## Use from C/{s=1} s&&/^```sh$/{n++; c=(n==2); next} c&&/^```$/{exit} c{print}' "$doc" \
    | grep '^cc ' | sed "s#\$HOME/.local/outbound#$prefix#g" > "$build/doc_cc.sh" || true
  [ "$(wc -l < "$build/doc_cc.sh")" -ge 2 ] || die "no cc lines found in $doc's Use from C section"
  while read -r line; do
    rm -f quickstart
    bash -c "$line" || die "$doc: this line fails from the repository root: $line"
    [ -x quickstart ] || die "$doc: $line made no ./quickstart"
    # Following the docs from the root leaves the clone clean: ./quickstart is ignored.
    [ -z "$(git status --porcelain -- quickstart)" ] || die "$doc: ./quickstart shows in git status"
  done < "$build/doc_cc.sh"
  rm -f quickstart
  echo "$doc: its $(wc -l < "$build/doc_cc.sh") cc lines build from the repository root"
done

step "the docs' C blocks, run as written (scripts/check-docs.py)"
OUTBOUND_C_LIBDIR="$libdir" python3 scripts/check-docs.py --part c || die "a C block of the docs"

# Beyond the C test programs' own counts: header drift, C++ header, fuzzing, docs example,
# the docs' testing program, the example built and run with each of the two pkg-config
# files, the SONAME, the installed names, the README's build lines, and the docs' C blocks.
passed=$((passed + 11))

echo
echo "c: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
