#!/usr/bin/env bash
# Prints the folder of a `node` of the major this project runs on (package.json's engines): the
# machine's own when it is new enough, otherwise the npm registry's node-<os>-<arch> package,
# installed once into a cache folder (never over the machine's node).
#   export PATH="$(bash .ci/node.sh):$PATH"
set -euo pipefail
cd "$(dirname "$0")/.."
major=$(sed -n 's/.*"node": *">=\([0-9][0-9]*\).*/\1/p' package.json)
have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$have" -ge "$major" ]; then
  dirname "$(command -v node)"
  exit 0
fi
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "no Node.js $major package for $(uname -m): install Node.js $major by hand" >&2; exit 1 ;;
esac
os=$(uname -s | tr '[:upper:]' '[:lower:]')
prefix="${SECKILL_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/seckill/node-$major}"
if ! "$prefix/bin/node" --version 2>/dev/null | grep -q "^v$major\."; then
  echo "== node $(node --version 2>/dev/null || echo none) is older than $major: installing node-$os-$arch@$major into $prefix" >&2
  npm install --global --prefix "$prefix" --no-fund --no-audit --loglevel=error "node-$os-$arch@$major" >&2
fi
echo "$prefix/bin"
