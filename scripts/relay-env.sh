#!/usr/bin/env bash
# Installs what the relay tests need (scripts/test-relay.sh runs it; idempotent, each step
# skipped when already done). Everything comes from package registries by name, into
# gitignored .tools/relay/:
#   chromium                              Debian's package (apt-get, only when missing)
#   @segment/analytics-next               npm, into .tools/relay/node (analytics.js, loaded from
#   @segment/analytics-node                 node_modules by a local page, never from a CDN)
#   puppeteer-core                        npm, drives the system chromium (no browser download)
#   axe-core                              npm, the accessibility rules the console test runs in the page
#   segment-analytics-python, pytest      PyPI, into .tools/relay/venv (with outbound's wheel:
#                                           scripts/test-relay.sh installs it there)
#   analytics-go v3                       the Go module proxy (tests/relay/go has its go.mod)
#   com.segment.analytics.kotlin:core     Maven Central, with Maven (apt-get when missing),
#                                           into .tools/relay/m2 (tests/relay/kotlin/pom.xml)
# `--demo` installs only segment-analytics-python into the venv: what scripts/demo.sh runs (no
# browser, no pytest).
# Works with CI=true, as root, without standard input. Exits non-zero when an install fails.
set -euo pipefail
DEMO=
[ "${1:-}" = --demo ] && DEMO=1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
T="$ROOT/.tools/relay"
mkdir -p "$T"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# Pinned; bump together with the tests.
NPM_PKGS=(@segment/analytics-next@1.84.3 @segment/analytics-node@3.1.0 puppeteer-core@25.16.0 axe-core@4.14.1)
PY_DEMO_PKGS=(segment-analytics-python==2.4.0)
PY_PKGS=("${PY_DEMO_PKGS[@]}" pytest==9.2.0 pytest-timeout==2.4.0 pytest-xdist==3.8.0 openapi-spec-validator==0.9.0
  openapi-python-client==0.29.1)
[ -n "$DEMO" ] && PY_PKGS=("${PY_DEMO_PKGS[@]}")

apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then "$ROOT/scripts/apt.sh" update -qq </dev/null; apt_updated=1; fi
  "$ROOT/scripts/apt.sh" install -y -qq --no-install-recommends "$@" </dev/null >/dev/null
}

# 1. The Python venv of the relay tests (segment-analytics-python; pytest).
if [ ! -x "$T/venv/bin/python" ]; then
  echo "--- relay-env: creating $T/venv"
  "${PYTHON:-python3}" -m venv "$T/venv"
fi
# .installed lists the pins installed so far: pip runs only for a missing one.
installed=" $(cat "$T/venv/.installed" 2>/dev/null || true) "
missing=()
for pkg in "${PY_PKGS[@]}"; do
  [[ "$installed" == *" $pkg "* ]] || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "--- relay-env: pip install ${missing[*]}"
  "$T/venv/bin/python" -m pip install --quiet "${missing[@]}"
  printf '%s\n' $installed "${missing[@]}" | sort -u | tr '\n' ' ' >"$T/venv/.installed"
fi

if [ -n "$DEMO" ]; then echo "--- relay-env: ready (the demo's SDK only)"; exit 0; fi

# sqlite3, the command docs/operations.md backs control.db up with (tests/relay/test_operations.py).
if ! command -v sqlite3 >/dev/null; then
  echo "--- relay-env: apt-get install sqlite3"
  apt_install sqlite3
fi

# 2. Chromium (Debian's build; puppeteer-core drives it, nothing is downloaded by npm).
if ! command -v chromium >/dev/null; then
  echo "--- relay-env: apt-get install chromium"
  apt_install chromium
fi
chromium --version 2>/dev/null || { echo "relay-env: chromium does not run" >&2; exit 1; }

# 3. npm packages (analytics.js, analytics-node, puppeteer-core) into .tools/relay/node.
for tool in node npm go java; do
  command -v "$tool" >/dev/null || { echo "relay-env: $tool is required" >&2; exit 1; }
done
mkdir -p "$T/node"
want="${NPM_PKGS[*]}"
if [ "$(cat "$T/node/.installed" 2>/dev/null)" != "$want" ]; then
  echo "--- relay-env: npm install ${NPM_PKGS[*]}"
  [ -f "$T/node/package.json" ] || echo '{"name":"outbound-relay-tests","private":true}' >"$T/node/package.json"
  (cd "$T/node" && PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROME_DOWNLOAD=1 \
    npm install --no-audit --no-fund --loglevel=error "${NPM_PKGS[@]}" </dev/null)
  echo "$want" >"$T/node/.installed"
fi

# 4. analytics-go v3 (module cache; the program is built by the tests' set-up).
echo "--- relay-env: go mod download (tests/relay/go)"
(cd tests/relay/go && go mod download)

# 5. analytics-kotlin's JVM core from Maven Central (Maven from apt-get when missing).
if ! command -v mvn >/dev/null; then
  echo "--- relay-env: apt-get install maven"
  apt_install maven
fi
if [ -f tests/relay/kotlin/pom.xml ]; then
  stamp="$(sha256sum tests/relay/kotlin/pom.xml tests/relay/kotlin/src/main/kotlin/*.kt | sha256sum | cut -c1-16)"
  if [ "$(cat "$T/kotlin.built" 2>/dev/null)" != "$stamp" ] || [ ! -f "$T/kotlin/classpath.txt" ]; then
    echo "--- relay-env: mvn package (tests/relay/kotlin, analytics-kotlin core)"
    mkdir -p "$T/kotlin"
    (cd tests/relay/kotlin && mvn -q -B -Dmaven.repo.local="$T/m2" \
      -DbuildDir="$T/kotlin/target" package dependency:build-classpath \
      -Dmdep.outputFile="$T/kotlin/classpath.txt" </dev/null)
    echo "$stamp" >"$T/kotlin.built"
  fi
fi
echo "--- relay-env: ready ($T)"
