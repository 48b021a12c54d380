#!/usr/bin/env bash
# npm run test:soak [-- RUNS] : the whole suite RUNS times in a row (default 5) on a fresh clone of
# this checkout's HEAD, with a CPU hog of two busy loops beside it, as a loaded CI machine would be.
# Prints a line per run, a summary (failed test names per run) and one JSON line; exit 1 if any
# run failed. SOAK_FILTER=<vitest filter> runs a part of the suite (to try the script quickly).
set -uo pipefail
runs=${1:-5}
case "$runs" in '' | *[!0-9]*) echo "usage: npm run test:soak [-- RUNS]  (RUNS: a whole number, got \"$runs\")" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/seckill-soak-XXXXXX")
hogs=()
cleanup() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
  :
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export PATH="$(bash "$here/.ci/node.sh"):$PATH"
echo "== soak: $runs run(s) of the suite on a fresh clone of $(git -C "$here" rev-parse --short HEAD), beside two busy loops; logs in $work"
git clone -q "$here" "$work/clone" && git -C "$work/clone" checkout -q "$(git -C "$here" rev-parse HEAD)"
(cd "$work/clone" && npm ci --no-fund --no-audit >"$work/npm-ci.log" 2>&1) || { echo "npm ci failed: $work/npm-ci.log"; exit 1; }

if command -v stress >/dev/null 2>&1; then
  stress --cpu 2 >/dev/null 2>&1 &
  hogs+=($!)
else
  for _ in 1 2; do node -e 'for (;;) {}' & hogs+=($!); done
fi

passed=0
results=()
for i in $(seq 1 "$runs"); do
  log="$work/run-$i.log"
  started=$(date +%s)
  if [ -n "${SOAK_FILTER:-}" ]; then
    (cd "$work/clone" && npx vitest run $SOAK_FILTER) >"$log" 2>&1
  else
    (cd "$work/clone" && npm test) >"$log" 2>&1
  fi
  code=$?
  secs=$(( $(date +%s) - started ))
  tests=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ +Tests ' | tail -1 | sed 's/^ *Tests *//')
  failed=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ FAIL ' | sed 's/^ FAIL *//' | sort -u | paste -sd ';' -)
  if [ "$code" -eq 0 ]; then passed=$((passed + 1)); verdict=pass; else verdict=FAIL; fi
  echo "run $i/$runs: $verdict in ${secs}s  ($tests)${failed:+  failed: $failed}"
  results+=("{\"run\":$i,\"ok\":$([ "$code" -eq 0 ] && echo true || echo false),\"seconds\":$secs,\"failed\":$(node -e 'process.stdout.write(JSON.stringify(process.argv[1] ? process.argv[1].split(";") : []))' "$failed")}")
done
echo "== $passed of $runs runs passed"
echo "{\"soak\":{\"runs\":$runs,\"passed\":$passed,\"hog\":\"$(command -v stress >/dev/null && echo 'stress --cpu 2' || echo '2 node busy loops')\",\"results\":[$(IFS=,; echo "${results[*]}")]}}"
[ "$passed" -eq "$runs" ]
