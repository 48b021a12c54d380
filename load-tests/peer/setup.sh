#!/usr/bin/env bash
# The peer of `npm run bench:peer`: chanesteves/flash-sale-system (NestJS 11 + Express, ioredis,
# BullMQ, TypeORM + pg), checked out at a pinned commit OUTSIDE this repository (it is someone
# else's code, kept for reference only), its server installed and built.
#
#   load-tests/peer/setup.sh [<git-dir-or-url>] [<out-dir>]
#     git-dir-or-url  default: the local mirror if present, else the GitHub URL
#     out-dir         default: ${XDG_CACHE_HOME:-~/.cache}/seckill/peer
#
# One edit of the checked-out copy, and only one (docs/benchmarks.md#npm-run-benchpeer-beside-a-nestjs-peer):
#   throttle-out-of-reach: every `limit: <n>` of @nestjs/throttler (ThrottlerModule.forRoot in
#   src/app.module.ts, @Throttle in src/purchase/purchase.controller.ts) becomes 1000000000.
#   The per-IP throttler (3 req/s, 10 per 10 s on the purchase) would refuse a load generator on
#   one address at once; the guard still runs on every request, it just never refuses.
# Nothing else of the peer changes. Its sale window, stock and stores are set by env at start.
set -euo pipefail

PEER_COMMIT=5b008904f0bdad65162abaada09ddf4299d9661e
MIRROR=/work/.mirror/chanesteves+flash-sale-system/repo
SRC=${1:-}
if [[ -z "$SRC" ]]; then
  if [[ -d "$MIRROR" ]]; then SRC=$MIRROR; else SRC=https://github.com/chanesteves/flash-sale-system.git; fi
fi
OUT=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/seckill/peer}
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)

OUT_ABS=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
case "$OUT_ABS/" in
  "$REPO_ROOT"/*) echo "setup.sh: $OUT is inside this repository; the peer must be built outside it" >&2; exit 2 ;;
esac

echo "[peer] checking out $PEER_COMMIT from $SRC into $OUT_ABS" >&2
if [[ ! -d "$OUT_ABS/.git" ]]; then
  git init -q "$OUT_ABS"
fi
git -C "$OUT_ABS" fetch -q --depth 1 "$SRC" "$PEER_COMMIT" 2>/dev/null ||
  git -C "$OUT_ABS" fetch -q "$SRC"
git -C "$OUT_ABS" -c advice.detachedHead=false checkout -q --force "$PEER_COMMIT"
git -C "$OUT_ABS" clean -qfdx -e node_modules -e package-lock.json

# the edit, counted: exactly four limits (two in forRoot, two in @Throttle) or stop
edited=0
for f in server/src/app.module.ts server/src/purchase/purchase.controller.ts; do
  n=$(grep -Eo 'limit: [0-9]+' "$OUT_ABS/$f" | wc -l)
  sed -Ei 's/limit: [0-9]+/limit: 1000000000/g' "$OUT_ABS/$f"
  edited=$((edited + n))
done
if [[ $edited -ne 4 ]]; then
  echo "setup.sh: expected 4 throttler limits to raise, found $edited" >&2
  exit 1
fi
git -C "$OUT_ABS" --no-pager diff --stat >&2

# an npm workspace (server, client, stress-test): only the server's dependencies, hoisted to the
# root. The peer has no lockfile: the first install resolves its package.json ranges (the
# versions are printed below) and its package-lock.json is kept for the next runs.
cd "$OUT_ABS"
echo "[peer] npm install -w server in $OUT_ABS (node $(node --version))" >&2
npm install -w server --no-audit --no-fund --loglevel=error >&2
cd server
npx nest build >&2
test -f dist/main.js || { echo "setup.sh: no dist/main.js after nest build" >&2; exit 1; }
npm ls --depth=0 2>/dev/null | grep -E '@nestjs/(core|throttler|bullmq|typeorm)|bullmq@|ioredis@|typeorm@|pg@|express' >&2 || true
echo "[peer] built: $OUT_ABS/server/dist/main.js" >&2
echo "$OUT_ABS"
