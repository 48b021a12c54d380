/**
 * `npm run chaos`: a whole sale on the production shape (a Redis Cluster of 3 masters with a
 * replica each, or one Redis; 2 API and 2 worker processes; PostgreSQL) while a nemesis drawn
 * from `--seed` injects faults; then the checker proves every invariant from what the clients
 * saw. Prints progress, the invariants, the faults with recovery times, one JSON line; writes
 * the history and a report (markdown + SVG timeline). Exit 1 when an invariant breaks, 2 for
 * bad arguments.
 */
import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDb } from '../../src/db/index.js';
import { answersAfterFaults, check, type AfterFaultsProbe } from './checker.js';
import type { HistoryEntry, PurchaseOp } from './history.js';
import { readFinalState, type ReconcileAnswer } from './final-state.js';
import { inject, kindsFor, schedule, FAULT_KINDS, type FaultKind } from './nemesis.js';
import calculateSlot from 'cluster-key-slot';
import { homeSegment } from '../../src/inventory/layout.js';
import { Keys } from '../../src/redis/keys.js';
import { markdownReport, resultNote, timelineSvg, type AppliedFault } from './report.js';
import { checkEvents } from './event-checks.js';
import { startFlakyReceiver, type FlakyReceiver } from './receiver.js';
import { checkRoom } from './room-checks.js';
import { checkDraw, type DrawTranscript } from './draw-checks.js';
import { drawProduct, drawSeed, startDrawShoppers } from './draw-shoppers.js';
import { noSaleWhilePaused, pauseWindows } from './pause-checks.js';
import { pauseAndResume } from './room-pause.js';
import { roomProduct, roomSeed, roomTokens, startRoomShoppers } from './room-shoppers.js';
import { availabilityLines, availabilityOf, livenessOf, pct } from './windows.js';
import { attempt, settlesKey, startShoppers } from './shoppers.js';
import {
  ADMIN_TOKEN,
  WEBHOOK_SECRET,
  startChaosStack,
  type ChaosStack,
  type Topology,
} from './stack.js';

const USAGE = `usage: npm run chaos -- [--seed N] [--duration S] [--topology cluster|single]
                      [--mode durable|default] [--faults kind,kind] [--rate N] [--out DIR]
  --seed N        the nemesis's schedule (same seed, same faults)          default 1
  --duration S    seconds of sale with faults (then a quiet settle phase)   default 120
  --topology      cluster: 3 masters + 1 replica each; single: one Redis    default cluster
  --mode          durable: REDIS_WAIT_REPLICAS=1 (no acknowledged sale may be lost);
                  default: no WAIT (a failover may lose acknowledged sales: counted, and
                  reconciliation must list exactly those)                    default durable
  --faults        kinds to draw from (default: every kind of the topology but
                  lag-kill-master, which loses acknowledged sales in default mode):
                  ${Object.keys(FAULT_KINDS).join(', ')}
  --rate N        purchases started per second                              default 40
  --out DIR       history, final state and report                           default chaos-report
The waiting-room product (${roomProduct.id}) is paused at 15 % of the run for 10 % of it (at
least at 8 s, for 4 s) and resumed, by the admin API: no sale may happen in between.`;

function usage(problem: string): never {
  console.error(`chaos: ${problem}\n\n${USAGE}`);
  process.exit(2);
}

let args: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      seed: { type: 'string', default: '1' },
      duration: { type: 'string', default: '120' },
      faults: { type: 'string' },
      topology: { type: 'string', default: 'cluster' },
      mode: { type: 'string', default: 'durable' },
      rate: { type: 'string', default: '40' },
      out: { type: 'string', default: 'chaos-report' },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;
}
try {
  args = parse();
} catch (err) {
  usage((err as Error).message.split('. ')[0]!);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const whole = (name: string, v: string, min: number) => {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < min) usage(`--${name} must be a whole number >= ${min} (got "${v}")`);
  return n;
};
const seed = whole('seed', args.seed!, 0);
const durationS = whole('duration', args.duration!, 20);
const rate = whole('rate', args.rate!, 1);
if (args.topology !== 'cluster' && args.topology !== 'single')
  usage(`--topology is cluster or single (got "${args.topology}")`);
if (args.mode !== 'durable' && args.mode !== 'default')
  usage(`--mode is durable or default (got "${args.mode}")`);
const topology = args.topology as Topology;
const durable = topology === 'single' || args.mode === 'durable';
const possible = kindsFor(topology, true);
const kinds = (
  args.faults ? args.faults.split(',').filter(Boolean) : kindsFor(topology)
) as FaultKind[];
for (const k of kinds)
  if (!possible.includes(k))
    usage(`fault "${k}" is not one of the ${topology} topology's: ${possible.join(', ')}`);

const durationMs = durationS * 1000;
// each product sells out at about 70 % of the run at this rate: faults land on sales, and on
// refusals after the sell-out too
const stock = Math.max(20, Math.round(((rate * durationS) / 4) * 0.7));
const PRODUCTS = [
  { id: 'chaos-global', strategy: 'global', segments: 1, payment: false },
  { id: 'chaos-segmented', strategy: 'segmented', segments: 4, payment: false },
  { id: 'chaos-lockfree', strategy: 'lockfree', segments: 4, payment: false },
  { id: 'chaos-pay', strategy: 'segmented', segments: 4, payment: true },
  roomProduct,
  drawProduct,
].map((p) => ({ ...p, total: stock, limitPerUser: 2 }));
/** Products whose purchases need a sale token: no plain shopper or probe buys them. */
const TOKENED = new Set([roomProduct.id, drawProduct.id]);
const PAY_WITHIN_S = 6;
/** Purchases asked of each process and product once the faults healed (5 s each, 1 s apart). */
const AFTER_FAULTS_TRIES = 5;

const outDir = resolve(args.out!);
mkdirSync(outDir, { recursive: true });
const historyFile = join(outDir, 'history.jsonl');
writeFileSync(historyFile, '');
const history: HistoryEntry[] = [];
const record = (h: HistoryEntry) => {
  history.push(h);
  appendFileSync(historyFile, JSON.stringify(h) + '\n');
};

let t0 = Date.now();
const now = () => Date.now() - t0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (phase: string, line: string) =>
  console.log(`[${phase}] ${String(Math.floor(now() / 1000)).padStart(4)} s  ${line}`);

async function admin<T>(stack: ChaosStack, method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.apis[0]!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** Retries an admin read while the stack settles (an API restarting, a shard failing over). */
async function adminSettled<T>(stack: ChaosStack, method: string, path: string): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      const r = await admin<T>(stack, method, path);
      if (r.status === 200) return r.body;
      if (i >= 60) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    } catch (err) {
      if (i >= 60) throw err;
    }
    await sleep(1000);
  }
}

/**
 * The flaky receiver of the order events (receiver.ts), registered for every type: it records
 * each request with the order's row version at its arrival.
 */
async function startEventReceiver(stack: ChaosStack): Promise<FlakyReceiver> {
  const db = createDb(stack.databaseUrl, { max: 16 });
  const receiver = await startFlakyReceiver({
    seed,
    now,
    record,
    rowVersion: async (orderId) =>
      (await db.selectFrom('orders').select('version').where('id', '=', orderId).executeTakeFirst())
        ?.version ?? null,
  });
  const r = await admin<{ secret: string }>(stack, 'POST', '/admin/webhook-endpoints', {
    url: receiver.url,
    events: ['*'],
  });
  if (r.status !== 201) throw new Error(`registering the receiver: ${r.status}`);
  receiver.secret = r.body.secret;
  const close = receiver.close;
  receiver.close = async () => {
    await close();
    await db.destroy();
  };
  return receiver;
}

/**
 * Bounded: waits until the receiver acknowledged every order's last version (events-complete is
 * then the checker's to judge on what came).
 */
async function eventsSettled(stack: ChaosStack): Promise<void> {
  say('settle', "waiting for the receiver to acknowledge every order's last event");
  const db = createDb(stack.databaseUrl, { max: 1 });
  try {
    for (let i = 0; i < 180; i++) {
      const rows = await db
        .selectFrom('orders')
        .select(['id', 'version'])
        .where(
          'product_id',
          'in',
          PRODUCTS.map((p) => p.id),
        )
        .execute();
      const acked = new Set(
        history.flatMap((h) =>
          h.type === 'delivery' && h.answered >= 200 && h.answered < 300
            ? [`${h.orderId} ${h.version}`]
            : [],
        ),
      );
      const behind = rows.filter((r) => !acked.has(`${r.id} ${r.version}`)).length;
      if (behind === 0) return;
      if (i % 10 === 0) say('settle', `${behind} orders' last events not acknowledged yet`);
      await sleep(1_000);
    }
  } finally {
    await db.destroy();
  }
}

/** The draw product's transcript once drawn (bounded: a draw not drawn is the checks' to name). */
async function drawnTranscript(stack: ChaosStack): Promise<DrawTranscript> {
  let last: DrawTranscript | undefined;
  for (let i = 0; i < 60; i++) {
    const url = stack.apis[i % stack.apis.length]!.url;
    const res = await fetch(`${url}/products/${drawProduct.id}/draw`).catch(() => undefined);
    if (res?.status === 200) {
      last = (await res.json()) as DrawTranscript;
      if (last.state === 'drawn') return last;
    }
    await sleep(1_000);
  }
  return (
    last ??
    ({
      state: 'unknown',
      chain: stack.chain,
      winners: [],
      waitlist: [],
      offered: 0,
      bought: [],
      frozenAt: null,
      round: null,
    } as DrawTranscript)
  );
}

async function main(stack: ChaosStack): Promise<number> {
  // the waiting-room product opens 5 s into the sale: its first shoppers form the lobby
  const roomOpensAt = Date.now() + 5_000;
  // the draw closes at 30 % of the run: drawn within seconds, its cascade runs in the rest
  const drawCloseAt = Date.now() + 5_000 + durationMs * 0.3;
  for (const { id, payment, ...spec } of PRODUCTS) {
    const r = await admin(stack, 'PUT', `/admin/products/${id}`, {
      total: spec.total,
      segments: spec.segments,
      strategy: spec.strategy,
      limitPerUser: spec.limitPerUser,
      ...(payment && { payWithinSeconds: PAY_WITHIN_S }),
      ...(id === roomProduct.id && roomSeed(roomOpensAt, stock, durationS)),
      ...(id === drawProduct.id && drawSeed(drawCloseAt)),
    });
    if (r.status !== 201 && r.status !== 200)
      throw new Error(`seeding ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const receiver = await startEventReceiver(stack);
  const faults: AppliedFault[] = schedule(seed, durationMs, kinds).map((f) => ({
    ...f,
    applied: false,
  }));
  say(
    'sale',
    `${faults.length} faults of ${new Set(faults.map((f) => f.kind)).size} kinds scheduled; ${PRODUCTS.length} products of ${stock} units, ${rate} purchases/s`,
  );
  const answers = new Map<string, number>();
  t0 = Date.now();
  const shoppers = startShoppers({
    urls: () => stack.apis.map((a) => a.url),
    products: PRODUCTS.filter((p) => !TOKENED.has(p.id)),
    users: stock * 2,
    concurrency: 24,
    rate,
    seed,
    timeoutMs: 5_000,
    webhookSecret: WEBHOOK_SECRET,
    now,
    record: (op) => {
      record(op);
      if (op.type !== 'purchase') return;
      const k =
        op.outcome === 'fail'
          ? String(op.status)
          : op.outcome === 'ok'
            ? '202'
            : op.status
              ? String(op.status)
              : 'timeout';
      answers.set(k, (answers.get(k) ?? 0) + 1);
    },
  });
  const room = startRoomShoppers({
    urls: () => stack.apis.map((a) => a.url),
    product: roomProduct.id,
    shoppers: Math.ceil(stock * 1.5),
    skippers: 20,
    arriveOverMs: durationMs / 3,
    maxPollMs: 5_000,
    seed,
    timeoutMs: 5_000,
    now,
    record,
  });
  const draw = startDrawShoppers({
    urls: () => stack.apis.map((a) => a.url),
    product: drawProduct.id,
    shoppers: stock,
    late: 10,
    closeMs: drawCloseAt - t0,
    maxPollMs: 3_000,
    seed,
    timeoutMs: 5_000,
    now,
    record,
  });
  // the operator pauses the room product while it sells, then resumes it
  const operator = pauseAndResume({
    urls: () => stack.apis.map((a) => a.url),
    adminToken: ADMIN_TOKEN,
    product: roomProduct.id,
    durationMs,
    now,
    record,
    say: (line) => say('pause', line),
  });
  let injected = 0;
  const running = faults.map(async (f) => {
    await sleep(f.at - now());
    injected++;
    say('fault', `${f.kind} for ${f.lasts} ms${f.delayMs ? ` (${f.delayMs} ms delay)` : ''}`);
    const struck = await inject(stack, f).catch((err: unknown) => {
      say('fault', `${f.kind} could not be applied: ${(err as Error).message}`);
      return { applied: false };
    });
    f.applied = struck.applied;
    if ('sickSlots' in struck) f.sickSlots = struck.sickSlots;
    if ('lagged' in struck && struck.lagged)
      f.lagged = { from: struck.lagged.from - t0, killed: struck.lagged.killed - t0 };
    f.healedAt = now();
    say('heal', `${f.kind} healed`);
  });
  const progress = setInterval(() => {
    const seen = [...answers]
      .sort()
      .map(([k, v]) => `${k}:${v}`)
      .join(' ');
    say('sale', `faults ${injected}/${faults.length}, answers ${seen}`);
  }, 5_000);
  await sleep(durationMs - now());
  await Promise.all([...running, operator]);
  await Promise.all([shoppers.stop(), room.stop(), draw.stop()]);
  clearInterval(progress);
  // the faults healed: so does the receiver (its deliveries go through from now on)
  receiver.calm();
  const saleEndMs = now();
  const remainingAtEnd = await Promise.all(
    PRODUCTS.map(
      async (p) =>
        (await adminSettled<{ remaining: number }>(stack, 'GET', `/admin/products/${p.id}`))
          .remaining,
    ),
  );

  // every fault has healed: each process must answer a purchase of each product again
  const probes: AfterFaultsProbe[] = [];
  for (const [api, { url }] of stack.apis.entries()) {
    for (const p of PRODUCTS.filter((p) => !TOKENED.has(p.id))) {
      const probe: AfterFaultsProbe = { api, product: p.id, tries: [] };
      probes.push(probe);
      for (let t = 0; t < AFTER_FAULTS_TRIES; t++) {
        const user = `probe${api}`;
        const a = await attempt(url, {
          user,
          key: `probe-${api}-${p.id}`,
          product: p.id,
          timeoutMs: 5_000,
          now,
        });
        record(a);
        probe.tries.push(a);
        if (a.status !== 0) break;
        await sleep(1_000);
      }
    }
  }
  const silent = probes.filter((p) => p.tries.every((t) => t.status === 0));
  say(
    'settle',
    `${probes.length - silent.length}/${probes.length} (process, product) pairs answered a purchase after the faults${silent.length ? `; no answer from ${silent.map((p) => `process ${p.api} for ${p.product}`).join(', ')}` : ''}`,
  );

  say('settle', 'resolving each unknown purchase with its own Idempotency-Key');
  const unknown = history.filter(
    (h): h is PurchaseOp => h.type === 'purchase' && h.outcome === 'unknown',
  );
  const isUnknownOf = (key: string) => (h: HistoryEntry) =>
    h.type === 'purchase' && h.key === key && h.outcome === 'unknown';
  // a key is one purchase however often it was tried: one answer settles all its unknown tries,
  // those of the sale and those made here
  const keys = [...new Set(unknown.map((u) => u.key))];
  const unresolved = keys.filter(
    (k) => !history.some((h) => h.type === 'purchase' && h.key === k && settlesKey(h)),
  );
  let unresolvedLeft = 0;
  for (const key of keys) {
    const first = unknown.find((u) => u.key === key)!;
    let answer = history.find(
      (h): h is PurchaseOp =>
        h.type === 'purchase' && h.key === key && settlesKey(h) && h.op > first.op,
    );
    for (let tries = 0; !answer && tries < 30; tries++) {
      const a = await attempt(stack.apis[tries % stack.apis.length]!.url, {
        user: first.user,
        key,
        product: first.product,
        timeoutMs: 5_000,
        now,
        ...(roomTokens.has(key) && { saleToken: roomTokens.get(key)! }),
      });
      record(a);
      if (settlesKey(a)) answer = a;
      else await sleep(1_000);
    }
    if (!answer) {
      unresolvedLeft++;
      continue;
    }
    for (const u of history.filter(isUnknownOf(key)))
      record({
        type: 'resolve',
        op: u.op,
        answer: answer.outcome === 'ok' ? 'order' : 'none',
        ...(answer.orderId && { orderId: answer.orderId }),
      });
  }
  say(
    'settle',
    `${unknown.length} unknown answers for ${keys.length} keys (${unresolved.length} never answered during the sale), ${unresolvedLeft} keys still unknown`,
  );

  // bounded: what is still in flight after it is the checker's to name (a lost return, ...)
  say(
    'settle',
    'waiting for the outboxes to drain, the payment windows to close and returns to land',
  );
  for (let i = 0; i < 180; i++) {
    const reports = await Promise.all(
      PRODUCTS.map((p) =>
        adminSettled<{ segments: Array<{ pending: number }> }>(
          stack,
          'GET',
          `/admin/products/${p.id}`,
        ),
      ),
    );
    const pending = reports.reduce((n, r) => n + r.segments.reduce((a, s) => a + s.pending, 0), 0);
    const db = createDb(stack.databaseUrl, { max: 1 });
    const waiting = await db
      .selectFrom('orders')
      .select(db.fn.countAll<string>().as('n'))
      .where('status', '=', 'awaiting_payment')
      .executeTakeFirstOrThrow();
    // closed, units not back yet: a return cut short, finished by its job's retry or the sweep
    const returning = await db
      .selectFrom('orders')
      .select(db.fn.countAll<string>().as('n'))
      .where('status', 'in', ['cancelled', 'expired'])
      .where('restocked_at', 'is', null)
      .executeTakeFirstOrThrow();
    await db.destroy();
    if (pending === 0 && Number(waiting.n) === 0 && Number(returning.n) === 0) break;
    if (i % 10 === 0)
      say(
        'settle',
        `${pending} units pending in outboxes, ${waiting.n} orders awaiting payment, ${returning.n} returns in flight`,
      );
    await sleep(1_000);
  }

  await eventsSettled(stack);
  await receiver.close();
  const db = createDb(stack.databaseUrl, { max: 2 });
  const { final, reports } = await readFinalState({
    durable,
    products: PRODUCTS,
    reconcile: (id) =>
      adminSettled<ReconcileAnswer>(stack, 'POST', `/admin/products/${id}/reconcile`),
    db,
    history,
    startMs: t0,
  });
  await db.destroy();
  // the shard of a shopper's home segment for that product (the struck one, or another)
  const segmentsOf = new Map(PRODUCTS.map((p) => [p.id, p.segments]));
  const chaosKeys = new Keys('chaos');
  const homeSlot = (p: PurchaseOp) =>
    calculateSlot(
      chaosKeys.segment(p.product, homeSegment(p.user, segmentsOf.get(p.product)!)).state,
    );
  // default mode's window: a lagged master killed took its unreplicated sales and jobs with it
  const killedSlots = faults.flatMap((f) =>
    f.applied && f.kind === 'lag-kill-master' ? (f.sickSlots ?? []) : [],
  );
  if (killedSlots.length > 0) {
    const acked = history.filter((h): h is PurchaseOp => h.type === 'purchase' && !!h.orderId);
    final.killed = {
      slots: killedSlots,
      // the stack runs with the default QUEUE_PREFIX, {skq}: every job of the queue in its slot
      queueSlot: calculateSlot('{skq}:orders'),
      homeSlotOf: Object.fromEntries(acked.map((h) => [h.orderId!, homeSlot(h)])),
    };
  }
  writeFileSync(join(outDir, 'final.json'), JSON.stringify({ final, reports }, null, 2));
  // every key of a room shares the product's hash tag: one slot (docs/waiting-room.md)
  const roomSlot = calculateSlot(chaosKeys.room(roomProduct.id, 1).room);
  const drawSlot = calculateSlot(chaosKeys.room(drawProduct.id, 1).room);
  const drawTranscript = await drawnTranscript(stack);
  const { admitPerSecond } = roomSeed(roomOpensAt, stock, durationS).waitingRoom;
  const roomAdmissions = (ms: number) => Math.ceil(admitPerSecond * (1 + ms / 1_000));
  const inSlots = (slots: Array<[number, number]>, slot: number) =>
    slots.some(([lo, hi]) => slot >= lo && slot <= hi);
  const results = [
    ...check(history, final),
    answersAfterFaults(probes),
    ...checkEvents(history, final.orders),
    ...checkRoom(history, {
      product: roomProduct.id,
      opensAtMs: roomOpensAt - t0,
      orders: final.orders,
      // default mode's window for the room: its slot on a master killed after a replication lag
      lostPlaceWindows: durable
        ? []
        : faults.flatMap((f) =>
            f.applied && f.lagged && inSlots(f.sickSlots ?? [], roomSlot)
              ? [{ ...f.lagged, admissions: roomAdmissions(f.lagged.killed - f.lagged.from) }]
              : [],
          ),
    }),
    noSaleWhilePaused(history, { product: roomProduct.id, orders: final.orders }),
    ...checkDraw(history, {
      product: drawProduct.id,
      transcript: drawTranscript,
      t0,
      // default mode: a master of the draw's slot killed after a lag may take admissions back
      rewindsAfter: durable
        ? []
        : faults.flatMap((f) =>
            f.applied && f.lagged && inSlots(f.sickSlots ?? [], drawSlot) ? [f.lagged.killed] : [],
          ),
    }),
  ];

  console.log('\ninvariant               | result | first counter-example');
  for (const r of results)
    console.log(`${r.name.padEnd(23)} | ${r.ok ? 'ok    ' : 'BROKEN'} | ${resultNote(r)}`);
  const purchases = history.filter(
    (h): h is PurchaseOp => h.type === 'purchase' && h.completeMs <= saleEndMs,
  );
  const liveness = livenessOf(faults, purchases);
  faults.forEach((f) => {
    const to = f.healedAt ?? f.at + f.lasts;
    const firstOk = purchases.find((p) => p.outcome === 'ok' && p.invokeMs >= to);
    f.recoveryMs = firstOk ? firstOk.completeMs - to : undefined;
  });
  console.log(
    '\n  # | fault           |   at s | lasts ms | overlaps  | alone /s | shared | recovery ms | answers started alone',
  );
  faults.forEach((f, i) => {
    const l = liveness[i]!;
    console.log(
      `${String(i + 1).padStart(3)} | ${(f.kind + (f.applied ? '' : '*')).padEnd(15)} | ${(f.at / 1000).toFixed(1).padStart(6)} | ${String(f.lasts).padStart(8)} | ${(l.overlaps.map((n) => `#${n}`).join(' ') || '-').padEnd(9)} | ${l.perSecond.toFixed(0).padStart(8)} | ${String(l.shared).padStart(6)} | ${String(f.recoveryMs ?? '-').padStart(11)} | ${l.kinds}`,
    );
  });
  const availability = availabilityOf(faults, purchases, homeSlot);
  console.log('\navailability: purchases started while one fault alone was under way');
  for (const line of availabilityLines(availability)) console.log(line);
  if (faults.some((f) => !f.applied)) console.log('* not applied: no target up at the time');
  const ops = history.filter((h): h is PurchaseOp => h.type === 'purchase');
  const figures = {
    seed,
    topology,
    mode: durable ? 'durable' : 'default',
    durationS,
    rate,
    faults: faults.filter((f) => f.applied).length,
    faultKinds: new Set(faults.filter((f) => f.applied).map((f) => f.kind)).size,
    operations: ops.length,
    ok: ops.filter((o) => o.outcome === 'ok').length,
    fail: ops.filter((o) => o.outcome === 'fail').length,
    unknown: ops.filter((o) => o.outcome === 'unknown').length,
    unknownUnresolved: unresolvedLeft,
    paid: history.filter((h) => h.type === 'pay' && h.outcome === 'ok').length,
    cancelled: history.filter((h) => h.type === 'cancel' && h.outcome === 'ok').length,
    expired: final.orders.filter((o) => o.status === 'expired').length,
    orders: final.orders.length,
    lostAcknowledged: results.find((r) => r.name === 'no-lost-ack')?.lost ?? 0,
    lostNamed: results.find((r) => r.name === 'no-lost-ack')?.named ?? 0,
    lostWithoutTrace: results.find((r) => r.name === 'no-lost-ack')?.traceless ?? 0,
    roomPlacesLost: results.find((r) => r.name === 'room-one-place')?.placesLost ?? 0,
    roomPlacesRewound: results.find((r) => r.name === 'room-one-place')?.rewound ?? 0,
    roomPaused: results.find((r) => r.name === 'no-sale-while-paused')?.paused ?? null,
    unsoldAtSaleEnd: remainingAtEnd.reduce((a, b) => a + b, 0),
    invariantsBroken: results.filter((r) => !r.ok).map((r) => r.name),
    recoveryMs: faults.map((f) => f.recoveryMs ?? null),
    lateReturns: results.find((r) => r.name === 'restock-once')?.late ?? null,
    // the flaky receiver: requests, 500s, hangs, restarts; events acknowledged (once each)
    webhook: {
      ...receiver.stats(),
      acknowledged: new Set(
        history.flatMap((h) => (h.type === 'delivery' && h.answered === 204 ? [h.id] : [])),
      ).size,
    },
    // API and worker processes that exited by themselves (each started again, as a supervisor
    // would): not a broken invariant, but a fact of the run worth reading the logs for
    selfExits: stack.selfExits.map(
      (e) => `${e.role} ${e.n} (${e.how}) at ${(e.atMs / 1000).toFixed(1)} s`,
    ),
    // per fault kind: the share answered 202/409/410 of the purchases started while it alone lasted
    availability: Object.fromEntries(
      Object.entries(availability).map(([kind, a]) => [
        kind,
        {
          first3s: {
            all: pct(a.first3s.all),
            sickHome: pct(a.first3s.sickHome),
            otherHome: pct(a.first3s.otherHome),
            purchases: a.first3s.all.n,
          },
          perSecond: a.perSecond.all.map(pct),
        },
      ]),
    ),
  };
  const title = `chaos run: seed ${seed}, ${topology}, ${figures.mode}, ${durationS} s`;
  writeFileSync(
    join(outDir, 'timeline.svg'),
    timelineSvg(
      history,
      faults,
      Math.ceil(saleEndMs / 1000),
      title,
      pauseWindows(history, roomProduct.id),
    ),
  );
  writeFileSync(
    join(outDir, 'index.md'),
    markdownReport({
      title,
      command: `npm run chaos -- --seed ${seed} --duration ${durationS} --topology ${topology} --mode ${figures.mode} --rate ${rate}${args.faults ? ` --faults ${args.faults}` : ''}`,
      results,
      faults,
      figures,
      liveness,
      availability,
    }),
  );
  console.log(`\nreport: ${join(outDir, 'index.md')} (timeline.svg), history: ${historyFile}`);
  console.log(JSON.stringify(figures));
  return results.every((r) => r.ok) ? 0 : 1;
}

const dir = mkdtempSync(join(tmpdir(), 'seckill-chaos-'));
console.log(
  `chaos: seed ${seed}, ${durationS} s, ${topology} topology, ${durable ? 'durable' : 'default'} mode, faults ${kinds.join(',')}; stack in ${dir}`,
);
let stopStack: (() => Promise<string[]>) | undefined;
let stopping: Promise<void> | undefined;
const stopAll = () =>
  (stopping ??= (async () => {
    const left = (await stopStack?.()) ?? [];
    if (left.length) {
      console.error(`chaos: still running after the stop: ${left.join(', ')}`);
      process.exitCode = 1;
    } else say('stop', 'nothing left running');
    // the processes' logs go with the report (a failed run is read from them)
    mkdirSync(join(outDir, 'logs'), { recursive: true });
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.log')))
      copyFileSync(join(dir, f), join(outDir, 'logs', f));
    rmSync(dir, { recursive: true, force: true });
  })());
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => {
    console.error(`chaos: ${sig}: stopping the stack`);
    void stopAll().then(() => process.exit(130));
  });
let code = 1;
try {
  const stack = await startChaosStack({
    topology,
    durable,
    dir,
    progress: (l) => say('start', l),
    onStop: (stop) => (stopStack = stop),
  });
  code = await main(stack);
} catch (err) {
  console.error(`chaos: ${(err as Error).stack ?? err}`);
  code = 1;
} finally {
  say('stop', 'stopping the stack');
  await stopAll();
}
process.exit(process.exitCode === 1 ? 1 : code);
