#!/usr/bin/env bash
# `npm start`: the Node.js version first, before anything is built or loaded; on an older Node.js a
# private Node.js of package.json's major (.ci/node.sh: the npm registry's node-<os>-<arch>
# package in ~/.cache/seckill, the machine's node untouched), said in one line. Then the build,
# only when a source changed since the last one (a hash of the build's inputs kept in dist/), and
# `seckill up`, which takes every variable and signal from here.
set -euo pipefail
cd "$(dirname "$0")/.."

major=$(sed -n 's/.*"node": *">=\([0-9][0-9]*\).*/\1/p' package.json)
have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$have" -lt "$major" ]; then
  echo "[seckill] Node.js $(node --version 2>/dev/null || echo none) is older than $major: running on a private Node.js $major (bash .ci/node.sh; the machine's node is left as it is)" >&2
  node_bin=$(bash .ci/node.sh) || {
    echo "[seckill] could not install Node.js $major: install Node.js $major LTS (https://nodejs.org, or: nvm install $major) and run npm start again" >&2
    exit 1
  }
  PATH="$node_bin:$PATH"
  export PATH
fi

# What the build reads (tsconfig.build.json's include, lua/ and examples/ it copies, the configs): a change to
# any of these (or a missing dist/) builds again.
stamp=dist/.build-inputs
inputs=$(find src migrations lua examples tsconfig.json tsconfig.build.json package.json package-lock.json -type f -print0 |
  sort -z | xargs -0 sha1sum | sha1sum | cut -d' ' -f1)
if [ ! -f dist/src/cli.js ] || [ "$(cat "$stamp" 2>/dev/null)" != "$inputs" ]; then
  npm run build --silent
  echo "$inputs" >"$stamp"
fi

exec node dist/src/cli.js up
