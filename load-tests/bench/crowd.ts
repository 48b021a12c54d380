/**
 * `npm run bench:crowd`: a flash crowd against the same sale without and with the waiting room,
 * in ONE run on the same servers (one API process, one worker, built from dist/):
 *   - shoppers: `--shoppers` (1 000), each from an address of their own, arriving at random from
 *     1 s before the opening to 2 s after it; each keeps trying (honouring Retry-After, or the
 *     room's pollAfterSeconds) until they buy one unit or learn the item sold out;
 *   - bots: `--bots` (10), each opening `--connections` (10) connections from 1 s before the
 *     opening and buying back to back on every one; in the room they also join and poll from
 *     every connection without waiting, and try POST /seckill without a sale token.
 * Side by side: units bought by bots, Spearman's rank correlation between the arrival order of
 * the shoppers who arrived after the opening and their purchase order, requests reaching the API
 * per unit sold, API CPU per waiting shopper per minute, purchase p99, and whether the books
 * reconcile. A table, then exactly one JSON line.
 *
 * Options: --shoppers 1000 --bots 10 --connections 10 --stock 100 --limit-per-user 4
 *          --admit-per-second 100 --max-active 200 --admitted-for 10
 *          --only 'no room'|room --no-build --no-write --update-report
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { cpuSeconds } from './cpu.js';
import { crowd, p99, spearman, type CrowdHistory } from './crowd-clients.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const LEAD_MS = 3_000;
const ARRIVE_BEFORE_MS = 1_000;
const ARRIVE_AFTER_MS = 2_000;
const SALE_LIMIT_MS = 60_000;

interface Side {
  variant: 'no room' | 'room';
  history: CrowdHistory;
  apiCpuS: number;
  sold: number;
  reconciled: boolean;
}

async function main() {
  const { values } = parseArgs({
    options: {
      shoppers: { type: 'string', default: '1000' },
      bots: { type: 'string', default: '10' },
      connections: { type: 'string', default: '10' },
      stock: { type: 'string', default: '100' },
      'limit-per-user': { type: 'string', default: '4' },
      'admit-per-second': { type: 'string', default: '100' },
      'max-active': { type: 'string', default: '200' },
      'admitted-for': { type: 'string', default: '10' },
      only: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const n = {
    shoppers: Number(values.shoppers),
    bots: Number(values.bots),
    connectionsPerBot: Number(values.connections),
    stock: Number(values.stock),
    limitPerUser: Number(values['limit-per-user']),
  };
  const waitingRoom = {
    admitPerSecond: Number(values['admit-per-second']),
    maxActive: Number(values['max-active']),
    admittedForSeconds: Number(values['admitted-for']),
  };
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({});
  const run = randomBytes(3).toString('hex');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `crowd${run}`,
    QUEUE_PREFIX: `{crowd${run}}`,
    AUTH_MODE: 'dev',
    ADMIN_TOKEN,
    TRUST_PROXY: 'true',
    SALE_TOKEN_SECRET: randomBytes(24).toString('hex'),
    LOG_LEVEL: 'error',
    PORT: String(port),
    API_PROCESSES: '1',
  };
  const procs: ChildProcess[] = [];
  const sides: Side[] = [];
  try {
    const api = child(cli('serve'), env, 'API');
    procs.push(api, child(cli('worker'), env, 'worker'));
    const base = `http://127.0.0.1:${port}`;
    await until('the API', async () => (await fetch(`${base}/readyz`)).ok, 60_000);
    const variants = (['no room', 'room'] as const).filter(
      (v) => !values.only || v === values.only,
    );
    for (const variant of variants) {
      const productId = `crowd-${variant === 'room' ? 'room' : 'plain'}-${run}`;
      const opensAt = Date.now() + LEAD_MS;
      const seeded = await admin(base, 'PUT', `/admin/products/${productId}`, {
        total: n.stock,
        strategy: 'lockfree',
        limitPerUser: n.limitPerUser,
        startsAt: new Date(opensAt).toISOString(),
        ...(variant === 'room' && { waitingRoom }),
      });
      if (!seeded.ok) throw new Error(`seeding: ${seeded.status} ${await seeded.text()}`);
      progress(
        `${variant}: ${n.shoppers} shoppers and ${n.bots} bots x ${n.connectionsPerBot} connections`,
      );
      const before = cpuSeconds({ API: api.pid }).API ?? 0;
      const history = await crowd({
        base,
        productId,
        opensAt,
        ...n,
        arriveBeforeMs: ARRIVE_BEFORE_MS,
        arriveAfterMs: ARRIVE_AFTER_MS,
        stopAt: opensAt + SALE_LIMIT_MS,
        room: variant === 'room',
      });
      const apiCpuS = (cpuSeconds({ API: api.pid }).API ?? 0) - before;
      const r = await persistedAndReconciled(base, productId);
      sides.push({
        variant,
        history,
        apiCpuS,
        sold: r.total - r.remaining,
        reconciled: r.ok && r.persisted + r.remaining === n.stock,
      });
    }
  } finally {
    await stopAll(procs);
    await stack.stop();
  }
  const rows = sides.map((s) => figuresOf(s));
  const off = rows.find((r) => r.variant === 'no room');
  const on = rows.find((r) => r.variant === 'room');
  const figures = {
    bench: 'crowd',
    machine: machine(),
    ...n,
    waitingRoom,
    results: rows,
    ratios: on &&
      off && {
        botUnitsRoomVsNone: ratio(on.botUnits, off.botUnits),
        requestsPerUnitRoomVsNone: ratio(on.requestsPerUnit, off.requestsPerUnit),
        cpuPerWaitingShopperRoomVsNone: ratio(
          on.apiCpuMsPerWaitingShopperMinute,
          off.apiCpuMsPerWaitingShopperMinute,
        ),
      },
  };
  const text = [
    `Flash crowd: ${n.stock} units (${n.limitPerUser} per shopper), ${n.shoppers} shoppers ` +
      `(arriving from ${ARRIVE_BEFORE_MS / 1000} s before to ${ARRIVE_AFTER_MS / 1000} s after the opening), ` +
      `${n.bots} bots x ${n.connectionsPerBot} connections; room: ${JSON.stringify(waitingRoom)}; ` +
      `1 API process, ${machine().cpus} cores`,
    '',
    table(rows.map((r) => ({ ...r }))),
    '',
    ...sides.map((s) => `${s.variant}: answers ${JSON.stringify(s.history.statuses)}`),
    '',
    JSON.stringify(figures),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (!values['no-write']) saveRun('crowd', text, values['update-report']);
  if (sides.some((s) => !s.reconciled || s.sold > n.stock)) process.exitCode = 1;
}

function figuresOf(s: Side) {
  const h = s.history;
  const waitingMinutes = h.waitingShopperMs / 60_000;
  return {
    variant: s.variant,
    sold: s.sold,
    botUnits: h.botUnits,
    shopperUnits: h.shopperUnits,
    arrivalVsPurchaseRho:
      Math.round(spearman(h.lateBuyers.map((b) => ({ a: b.arrivedAt, b: b.boughtAt }))) * 100) /
      100,
    lateBuyers: h.lateBuyers.length,
    requests: h.requests,
    requestsPerUnit: ratio(h.requests, s.sold),
    purchaseRequestsPerUnit: ratio(h.purchaseRequests, s.sold),
    apiCpuS: Math.round(s.apiCpuS * 100) / 100,
    apiCpuMsPerWaitingShopperMinute: ratio(s.apiCpuS * 1_000, waitingMinutes),
    purchaseP99Ms: Math.round(p99(h.purchaseMs)),
    reconciled: s.reconciled ? 'clean' : 'NO',
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:crowd failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
