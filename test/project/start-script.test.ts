/**
 * `npm start` (tools/start.sh) before `seckill up`: on an older Node.js it says
 * so in one line and runs on a private Node.js 24 (.ci/node.sh), and it builds only when a build
 * input changed. Run in a copy of the script beside stand-ins for `npm run build` and the built
 * CLI, so the checkout's dist/ is left alone. And `npm test` on an older Node.js: the same private
 * Node.js 24 runs the type check and the suite.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/servers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = tempDir('start-script');
afterAll(() => dir.remove());
const work = join(dir.path, 'checkout');
const shims = join(dir.path, 'shims');
const oldNode = join(dir.path, 'old-node');
const builds = join(dir.path, 'builds.log');

function file(path: string, text: string, mode = 0o644) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, mode);
}

for (const f of ['tools/start.sh', '.ci/node.sh', 'package.json']) {
  mkdirSync(dirname(join(work, f)), { recursive: true });
  copyFileSync(join(ROOT, f), join(work, f));
}
for (const f of ['package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'lua/a-1.lua']) {
  file(join(work, f), `${f}\n`);
}
file(join(work, 'src/a.ts'), 'export const a = 1;\n');
file(join(work, 'migrations/a.ts'), 'export const up = 1;\n');
file(join(work, 'examples/storefront/index.html'), '<!doctype html>\n');
// `npm run build` stand-in: counts builds and writes a CLI that says which node runs it
file(
  join(shims, 'npm'),
  `#!/bin/sh\necho "$*" >> ${builds}\nrm -rf dist && mkdir -p dist/src && echo 'console.log("up on", process.version, process.argv[2])' > dist/src/cli.js\n`,
  0o755,
);
// a Node.js 20 as far as a version check can tell (enough for start.sh and .ci/node.sh)
file(
  join(oldNode, 'node'),
  `#!/bin/sh\ncase "$1" in -p) echo 20 ;; --version) echo v20.19.0 ;; *) exit 9 ;; esac\n`,
  0o755,
);

function start(path: string[]) {
  const r = spawnSync('bash', ['tools/start.sh'], {
    cwd: work,
    encoding: 'utf8',
    env: {
      HOME: process.env.HOME ?? '/root',
      PATH: [...path, shims, process.env.PATH].join(':'),
      // .ci/node.sh's private Node.js: the one running this suite (24), so nothing is installed
      SECKILL_NODE_DIR: dirname(dirname(process.execPath)),
    },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const buildCount = () => readFileSync(builds, 'utf8').trim().split('\n').length;

describe('npm start', () => {
  it('on Node.js 20 says so in one line, then runs on the private Node.js 24', () => {
    const r = start([oldNode]);
    expect(r.err).toBe(
      '[seckill] Node.js v20.19.0 is older than 24: running on a private Node.js 24 ' +
        "(bash .ci/node.sh; the machine's node is left as it is)\n",
    );
    expect(r.code).toBe(0);
    expect(r.out).toBe(`up on ${process.version} up\n`);
  });

  it('builds only when an input of the build changed', () => {
    const before = buildCount();
    expect(start([dirname(process.execPath)]).out).toBe(`up on ${process.version} up\n`);
    expect(buildCount()).toBe(before); // nothing changed since the run above
    file(join(work, 'src/a.ts'), 'export const a = 2;\n');
    start([dirname(process.execPath)]);
    expect(buildCount()).toBe(before + 1);
    file(join(work, 'lua/a-1.lua'), 'return 2\n');
    start([dirname(process.execPath)]);
    expect(buildCount()).toBe(before + 2);
    start([dirname(process.execPath)]);
    expect(buildCount()).toBe(before + 2);
    // a new migration is built too, or `up` would migrate with the old ones
    file(join(work, 'migrations/b.ts'), 'export const up = 2;\n');
    start([dirname(process.execPath)]);
    expect(buildCount()).toBe(before + 3);
  });

  it('hashes every folder the build compiles', () => {
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
      include: string[];
    };
    const hashed = /inputs=\$\(find ([^\n]*?) -type f/
      .exec(readFileSync(join(ROOT, 'tools/start.sh'), 'utf8'))![1]!
      .split(' ');
    for (const folder of [...build.include, 'lua']) expect(hashed).toContain(folder);
  });
});

describe('npm test', () => {
  it('on Node.js 20 runs the type check and the suite on the private Node.js 24', () => {
    // package.json's own test script, with stand-ins for npm and vitest that say which node runs
    const script = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts.test!;
    const said = join(dir.path, 'test-script.log');
    const standIns = join(dir.path, 'test-shims');
    for (const tool of ['npm', 'vitest']) {
      file(
        join(standIns, tool),
        `#!/bin/sh\necho "${tool} $* on $(node --version)" >> ${said}\n`,
        0o755,
      );
    }
    const r = spawnSync('sh', ['-c', `${script} "$@"`, 'npm-test', 'test/x.test.ts'], {
      cwd: work,
      encoding: 'utf8',
      env: {
        HOME: process.env.HOME ?? '/root',
        PATH: [oldNode, standIns, '/usr/bin', '/bin'].join(':'),
        SECKILL_NODE_DIR: dirname(dirname(process.execPath)),
      },
    });
    expect(r.status).toBe(0);
    expect(readFileSync(said, 'utf8')).toBe(
      `npm run typecheck on ${process.version}\nvitest run test/x.test.ts on ${process.version}\n`,
    );
  });
});
