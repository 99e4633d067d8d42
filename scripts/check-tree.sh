#!/usr/bin/env bash
# Fails when a build or test step changed a tracked file: scripts/test.sh saves the state
# of the tracked files at its start and compares at its end, so a fresh clone stays clean
# (a stale Cargo.lock, a regenerated header, a formatter's rewrite are caught, named).
#
#   scripts/check-tree.sh save FILE      records every tracked file that differs from HEAD,
#                                        with its content's hash
#   scripts/check-tree.sh compare FILE   exit 1, naming each file, if that record changed
#
# Local edits made before the run are in the record, so they do not count; only what the
# run itself changed does. Untracked files (build output) are not looked at.
set -euo pipefail
cd "$(dirname "$0")/.."
state() {
  git diff --name-only HEAD -- | while IFS= read -r f; do
    printf '%s %s\n' "$(git hash-object -- "$f" 2>/dev/null || echo deleted)" "$f"
  done
}
case "${1:-} ${2:-}" in
  "save "?*) state > "$2" ;;
  "compare "?*)
    changed=$( (state | diff "$2" - || true) | sed -n 's/^[<>] [^ ]* //p' | sort -u)
    if [ -n "$changed" ]; then
      echo "=== the run changed tracked files (a fresh clone must stay clean):" >&2
      while IFS= read -r f; do
        echo "  $f" >&2
        git diff --stat HEAD -- "$f" | sed -n '1p' | sed 's/^/    /' >&2
      done <<< "$changed"
      exit 1
    fi
    echo "tracked files: unchanged by the run" ;;
  *) echo "usage: scripts/check-tree.sh save|compare FILE" >&2; exit 2 ;;
esac
