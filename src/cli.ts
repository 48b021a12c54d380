#!/usr/bin/env node
/**
 * `seckill`: checks the Node.js version before anything else loads (a dependency needing a newer
 * Node would fail with a SyntaxError or a missing API, far from the cause), then runs the CLI.
 */

/** The Node.js major this runs on; package.json's engines says the same (test/project/cli.test.ts). */
const MIN_NODE_MAJOR = 24;

const running = process.versions.node;
if (Number(running.split('.')[0]) < MIN_NODE_MAJOR) {
  process.stderr.write(
    `seckill: Node.js ${MIN_NODE_MAJOR} or newer is needed; this is ${running} (${process.execPath}). ` +
      `Install Node.js ${MIN_NODE_MAJOR} LTS (https://nodejs.org, or: nvm install ${MIN_NODE_MAJOR}), or in a checkout ` +
      `put a private one first: export PATH="$(bash .ci/node.sh):$PATH" (npm start does that itself).\n`,
  );
  process.exit(1);
}

await import('./cli/main.js');
