#!/usr/bin/env bash
# The checks `npm test` makes before the tests: eslint, prettier and the type check. Each is one
# thread and none needs another, so they run side by side (on two cores, about eslint's time instead
# of the sum of the three); each one's output is printed whole when it ends, and the script fails
# if any of them failed. Usage: scripts/checks.sh (npm test runs it).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
checks=(lint:code lint:format typecheck)
pids=()
for check in "${checks[@]}"; do
  npm run --silent "$check" >"$out/$check" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!checks[@]}"; do
  if ! wait "${pids[$i]}"; then failed+=("${checks[$i]}"); fi
  cat "$out/${checks[$i]}"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "voxbridge: failed: ${failed[*]} (npm run ${failed[0]} to see it alone)" >&2
  exit 1
fi
