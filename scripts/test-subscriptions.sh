#!/usr/bin/env bash
# The subscriptions' differential test: Segment's own code, pinned from npm (tests/subscriptions/:
# @segment/destination-subscriptions, @segment/actions-core and the webhook destination of
# @segment/action-destinations), runs on generated cases, and the core's subscription engine on the
# same cases (crates/outbound/examples/subscriptions_diff.rs); any difference not listed in
# tests/subscriptions/known-differences.json fails. 10,000 cases of a fixed seed and 3,000 of a
# random one, printed to reproduce a failure:
#
#   scripts/test-subscriptions.sh [--seed S] [--count N] [--random-count N]
#   node tests/subscriptions/gen.mjs --seed S --from INDEX --count 1    # one case again
#
# Nothing is sent anywhere but npm's registry (the install): Segment's requests are captured by
# a fake fetch.
set -euo pipefail
cd "$(dirname "$0")/.."
seed=20261129
count=10000
random_count=3000
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --random-count) random_count=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v node >/dev/null || { echo "node (20 or later) is required"; exit 1; }
dir=tests/subscriptions

# Segment's packages, installed again only when package-lock.json changes.
lock=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$dir/node_modules/.lock-sha256" 2>/dev/null)" != "$lock" ]; then
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$lock" > "$dir/node_modules/.lock-sha256"
fi

# The webhook destination: two files of @segment/action-destinations, whose package depends on
# every destination's SDKs (the AWS ones among them), too much to install for a test. Its
# tarball (npm pack, from npm's cache after the first time) is checked against the pinned
# integrity before they are taken.
webhook_version=3.497.0
webhook_integrity=sha512-b9DztTrR1XrfBu/0UyUgTXNfv7s5gpjBPO/w7C8aW6IHsSMSMte7wNdVHzGsujJ4P43g7cKsWb5zuV2BdVn/UA==
if [ "$(cat "$dir/vendor/.integrity" 2>/dev/null)" != "$webhook_integrity" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack "@segment/action-destinations@$webhook_version" --loglevel=error >/dev/null)
  tarball="$tmp/segment-action-destinations-$webhook_version.tgz"
  got=$(node -e 'const c=require("crypto"),f=require("fs");console.log("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tarball")
  if [ "$got" != "$webhook_integrity" ]; then
    echo "@segment/action-destinations@$webhook_version: integrity $got, expected $webhook_integrity" >&2
    exit 1
  fi
  rm -rf "$dir/vendor"
  mkdir -p "$dir/vendor/webhook"
  tar xzf "$tarball" -C "$dir/vendor/webhook" --strip-components=4 \
    package/dist/destinations/webhook/index.js package/dist/destinations/webhook/send/index.js
  echo "$webhook_integrity" > "$dir/vendor/.integrity"
fi

cargo build -q -p outbound --example subscriptions_diff
random=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
echo "cases: seed $seed ($count), random seed $random ($random_count)"
out=$(mktemp -d)
trap 'rm -rf "$out" "${tmp:-}"' EXIT
# Each case depends only on its seed and index: the fixed seed's cases are made in two halves,
# one per core.
half=$((count / 2))
node "$dir/gen.mjs" --seed "$seed" --from 0 --count "$half" --out "$out/a.jsonl" &
first=$!
node "$dir/gen.mjs" --seed "$seed" --from "$half" --count "$((count - half))" --out "$out/b.jsonl"
wait "$first"
node "$dir/gen.mjs" --seed "$random" --count "$random_count" --out "$out/r.jsonl"
"${CARGO_TARGET_DIR:-target}/debug/examples/subscriptions_diff" "$out/a.jsonl" "$out/b.jsonl" "$out/r.jsonl" \
  --known "$dir/known-differences.json"
