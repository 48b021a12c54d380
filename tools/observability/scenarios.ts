/**
 * What the operator is shown, checked against what is true: each scenario produces a real
 * condition on the observed stack (a healthy sale, a paused queue, a held lock, PostgreSQL
 * refusing the orders, Redis frozen, a worker killed) and waits for Prometheus to show it. A
 * scenario throws with what it waited for and what it saw last; nothing is timed.
 */
import pg from 'pg';
import { LockClient } from '../../src/lock/index.js';
import { createRedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';
import type { Observed } from './observe.js';
import { contend } from './contender.js';
import { FOREIGN_JOB, FOREIGN_STATUS, FOREIGN_WOULD_FIRE, unselected } from './foreign.js';
import { healthyRoom, roomFull, roomStalled } from './room-scenarios.js';
import { backlog, buy, product, sale, seed, shoppers } from './sale.js';
import { panel, waitFiring } from './shown.js';
import { ADMIN_TOKEN } from './stack.js';
import { waitFor } from './wait.js';

const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const;

/** Alerts no scenario can produce here, with the reason (unit-tested with promtool only). */
export const NOT_YET_PRODUCED: Record<string, string> = {
  SeckillWebhookDeadLetters:
    'needs a webhook endpoint whose receiver fails its whole retry schedule; promtool tests it, test/events/webhooks.test.ts the gauge and counter it reads',
  SeckillWebhookDeliveryLag:
    'needs an order event unacknowledged for 15 minutes; promtool tests it, test/events/webhooks.test.ts the backlog it reads',
  SeckillPaymentNoticesRefused:
    "needs a payment provider's signed notice an order cannot take; promtool tests it, test/orders/refunds-disputes.test.ts the counter it reads",
};

export interface Scenario {
  name: string;
  /** the alerts it makes fire */
  fires: string[];
  run(o: Observed): Promise<string>;
}

/** The stock panel shows, for `productId`, what the admin API says remains. */
export async function stockPanelIsTrue(
  o: Observed,
  productId: string,
  timeoutMs = 30_000,
): Promise<number> {
  let last = '';
  return waitFor(
    `the "Stock remaining" panel to equal GET /admin/products/${productId}`,
    async () => {
      const truth = (await product(o.stack, productId)).remaining;
      const shown = (await o.prom.query(panel(o, 'Stock remaining').expr)).find(
        (s) => s.labels.product === productId,
      );
      last = `panel ${shown?.value}, admin API ${truth}`;
      return shown?.value === truth && truth > 0 && truth;
    },
    timeoutMs,
    500,
    () => last,
  );
}

/** The queue panel shows every state's count as BullMQ counts it. */
async function queuePanelIsTrue(o: Observed): Promise<Record<string, number>> {
  let last = '';
  return waitFor(
    'the "Order queue jobs" panel to equal the queue\'s counts',
    async () => {
      const truth = await o.queue.getJobCounts(...JOB_STATES);
      const shown = Object.fromEntries(
        (await o.prom.query(panel(o, 'Order queue jobs').expr)).map((s) => [
          s.labels.state,
          s.value,
        ]),
      );
      last = `panel ${JSON.stringify(shown)}, queue ${JSON.stringify(truth)}`;
      return JOB_STATES.every((s) => shown[s] === (truth[s] ?? 0)) && truth;
    },
    30_000,
    500,
    () => last,
  );
}

const healthy: Scenario = {
  name: 'a healthy sale: panels equal the truth, every panel has data, no alert',
  fires: [],
  async run(o) {
    const started = Date.now();
    await seed(o.stack, 'obs-healthy', { total: 100, segments: 4, strategy: 'segmented' });
    const load = await sale(o.stack, 'obs-healthy', { concurrency: 6, max: 60, users: 'healthy' });
    const answers = Object.fromEntries(load.answers);
    if (answers['202'] !== 60 || load.answers.size !== 1) {
      throw new Error(`expected 60 x 202, got ${JSON.stringify(answers)}`);
    }
    await waitFor(
      'every sold order persisted',
      async () => backlog(await product(o.stack, 'obs-healthy')) === 0,
      60_000,
    );
    const remaining = await stockPanelIsTrue(o, 'obs-healthy');
    if (remaining !== 40) throw new Error(`admin API says ${remaining} remain, not 40`);
    // two workers export it: a sum shows twice the stock (what the panel must not do)
    // (waited for: each worker's series is its own latest scrape, and a scrape whose bounded read
    // of Redis timed out leaves that worker's series out for a moment)
    let summed: number | undefined;
    await waitFor(
      'the sum over workers to show 80',
      async () => {
        const q = 'sum by (product) (seckill_stock_remaining{product="obs-healthy"})';
        summed = (await o.prom.query(q))[0]?.value;
        return summed === 80;
      },
      30_000,
      500,
      () => String(summed),
    );
    const queue = await queuePanelIsTrue(o);
    // a product behind a waiting room, for the room panels
    const room = await healthyRoom(o);
    // a rate needs two scrapes of a series: the sale may have been over between two
    for (const p of o.panels) {
      await waitFor(
        `panel "${p.title}" to show data: ${p.expr}`,
        async () => (await o.prom.query(p.expr)).length > 0,
        30_000,
      );
    }
    for (const r of o.rules) {
      const hits = await o.prom.query(r.expr);
      if (hits.length > 0) {
        throw new Error(`${r.alert} condition holds on a healthy sale: ${JSON.stringify(hits)}`);
      }
    }
    // never fired while it ran (Prometheus's own ALERTS series), and nothing left pending (a
    // lowered test threshold may go pending for a moment while the outbox is being emptied)
    const secs = Math.ceil((Date.now() - started) / 1000) + 2;
    const fired = await o.prom.query(`max_over_time(ALERTS{alertstate="firing"}[${secs}s])`);
    if (fired.length > 0) {
      throw new Error(`alerts fired on a healthy sale: ${fired.map((a) => a.labels.alertname)}`);
    }
    await waitFor('no alert pending', async () => (await o.prom.alerts()).length === 0, 30_000);
    return `60 sold, panel stock ${remaining} (sum over workers 80), queue ${JSON.stringify(queue)}, ${room}; ${o.panels.length} panels with data, ${o.rules.length} rules silent`;
  },
};

const foreign: Scenario = {
  name: `another service (${FOREIGN_JOB}) with the same metric names: no rule or panel takes it in`,
  fires: [],
  async run(o) {
    // the job variable lists seckill's jobs only, so Grafana's "All" is those two
    if (o.variables['job:found'] !== 'seckill-api,seckill-worker') {
      throw new Error(`the job variable found ${o.variables['job:found']}`);
    }
    // what a rule without the job matcher would do with the foreign series: fire
    let holding: string[] = [];
    await waitFor(
      `the rules without their job matchers to hold on ${FOREIGN_JOB}'s series`,
      async () => {
        holding = [];
        for (const r of o.rules) {
          if ((await o.prom.query(unselected(r.expr))).length > 0) holding.push(r.alert);
        }
        return FOREIGN_WOULD_FIRE.every((a) => holding.includes(a));
      },
      30_000,
      500,
      () => holding.join(', '),
    );
    // as shipped: none holds (the healthy sale before this left nothing that should)
    for (const r of o.rules) {
      const hits = await o.prom.query(r.expr);
      if (hits.length > 0) throw new Error(`${r.alert} holds: ${JSON.stringify(hits)}`);
    }
    // the status panel: the foreign 500s show only without the selectors
    const status = panel(o, 'Answers by status');
    const statuses = async (expr: string) =>
      (await o.prom.query(expr)).map((x) => x.labels.status).sort();
    const mixed = await statuses(unselected(status.expr));
    const shown = await statuses(status.expr);
    if (!mixed.includes(FOREIGN_STATUS) || shown.includes(FOREIGN_STATUS)) {
      throw new Error(`status panel: ${shown} (unselected: ${mixed})`);
    }
    return `unselected, ${holding.join(', ')} would hold and the status panel would show ${FOREIGN_STATUS}; as shipped, no rule holds and the panel shows ${shown.join(', ')}`;
  },
};

const queueDepth: Scenario = {
  name: 'a paused queue: the queue panel equals its counts, SeckillQueueDepth fires',
  fires: ['SeckillQueueDepth'],
  async run(o) {
    await seed(o.stack, 'obs-queue', { total: 100, segments: 4, strategy: 'segmented' });
    await o.queue.pause();
    try {
      // one purchase at a time, each its own batch job: the queue grows by construction
      for (let i = 0; ((await o.queue.getJobCounts('waiting')).waiting ?? 0) < 8; i++) {
        const before = (await o.queue.getJobCounts('waiting')).waiting ?? 0;
        const a = await buy(o.stack.apis[i % 2]!.url, 'obs-queue', `queue-${i}`);
        if (a.status !== 202) throw new Error(`purchase ${i}: ${a.status} ${a.code}`);
        await waitFor(
          'the batch job to wait in the paused queue',
          async () => ((await o.queue.getJobCounts('waiting')).waiting ?? 0) > before,
          10_000,
        );
      }
      const counts = await queuePanelIsTrue(o);
      // two workers export it: a sum doubles the depth (what the panel and alert must not do)
      await waitFor(
        'the sum over workers to be twice the waiting jobs',
        async () => {
          const truth = (await o.queue.getJobCounts('waiting')).waiting ?? 0;
          const summed = await o.prom.query('sum(seckill_queue_jobs{state="waiting"})');
          return summed[0]?.value === 2 * truth;
        },
        30_000,
      );
      await waitFiring(o, 'SeckillQueueDepth');
      return `queue ${JSON.stringify(counts)} on the panel; SeckillQueueDepth firing`;
    } finally {
      await o.queue.resume();
      await waitFor(
        'the queue to drain',
        async () => backlog(await product(o.stack, 'obs-queue')) === 0,
        60_000,
      );
    }
  },
};

const lockHeld: Scenario = {
  name: 'a segment lock held: SeckillLockTimeouts fires',
  fires: ['SeckillLockTimeouts'],
  async run(o) {
    await seed(o.stack, 'obs-lock', { total: 50, segments: 1, strategy: 'segmented' });
    const keys = new Keys(o.stack.env.KEY_PREFIX!);
    const redis = createRedisClient({ url: o.stack.redis.url }, { name: 'obs-lock' });
    const sub = createRedisClient(
      { url: o.stack.redis.url },
      { name: 'obs-sub', role: 'subscriber' },
    );
    const pubsub = new PubSub(sub);
    const locks = new LockClient({ redis, pubsub, keys });
    const held = await locks.acquire(keys.segmentLockName('obs-lock', 0), { leaseMs: 300_000 });
    if (!held) throw new Error('could not take the segment lock');
    const load = shoppers(o.stack, 'obs-lock', { concurrency: 4, users: 'lock' });
    try {
      await waitFiring(o, 'SeckillLockTimeouts');
    } finally {
      await load.stop();
      await held.release();
      await locks.close();
      pubsub.close();
      redis.disconnect();
      sub.disconnect();
    }
    const answers = Object.fromEntries(load.answers);
    if (!answers['503 lock-timeout'] || answers['202']) {
      throw new Error(
        `expected only lock timeouts while the lock was held: ${JSON.stringify(answers)}`,
      );
    }
    return `answers ${JSON.stringify(answers)}; SeckillLockTimeouts firing`;
  },
};

const stalledRoom: Scenario = {
  name: 'a waiting room whose seats are all held while more wait and stock remains: SeckillRoomStalled fires',
  fires: ['SeckillRoomStalled'],
  run: roomStalled,
};

const fullRoom: Scenario = {
  name: 'a waiting room whose line holds ROOM_MAX_PLACES: new shoppers get 409 room-full, SeckillRoomFull fires',
  fires: ['SeckillRoomFull'],
  run: roomFull,
};

const ordersRefused: Scenario = {
  name: 'PostgreSQL refuses the orders (table renamed): jobs fail, outbox grows, 500s',
  fires: ['SeckillOrderJobsFailing', 'SeckillOutboxLag', 'SeckillFailedJobs', 'SeckillHigh5xxRate'],
  async run(o) {
    await seed(o.stack, 'obs-pg', { total: 1000, segments: 4, strategy: 'segmented' });
    // one persisted order, read back while its table is away
    const first = await buy(o.stack.apis[0]!.url, 'obs-pg', 'pg-first');
    if (first.status !== 202) throw new Error(`first purchase: ${first.status}`);
    await waitFor(
      'the first order persisted',
      async () => backlog(await product(o.stack, 'obs-pg')) === 0,
      60_000,
    );
    const db = new pg.Client({ connectionString: o.stack.databaseUrl });
    await db.connect();
    await db.query('alter table orders rename to orders_away');
    // a job no worker can run, failed for good at its only attempt
    const unrunnable = await o.queue.add(
      'obs-unrunnable',
      {},
      { attempts: 1, removeOnFail: false },
    );
    let lookups500 = 0;
    const load = shoppers(o.stack, 'obs-pg', {
      concurrency: 2,
      users: 'pg',
      extra: async () => {
        const r = await fetch(`${o.stack.apis[1]!.url}/orders/${first.orderId}`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        if (r.status === 500) lookups500++;
      },
    });
    try {
      for (const a of ordersRefused.fires) await waitFiring(o, a);
    } finally {
      await load.stop();
      await unrunnable.remove().catch(() => undefined);
      await db.query('alter table orders_away rename to orders');
      await db.end();
    }
    const sold = load.accepted.length;
    await waitFor(
      'the outbox to drain once the table is back',
      async () => backlog(await product(o.stack, 'obs-pg')) === 0,
      90_000,
    );
    if (lookups500 === 0) throw new Error('no GET /orders/:id answered 500');
    return `${sold} sold while refused, ${lookups500} lookups answered 500; all four firing; drained after`;
  },
};

/** lock_lost_total summed over the API processes, read from their own /metrics. */
async function lockLostTotal(o: Observed): Promise<number> {
  let n = 0;
  for (const p of o.stack.apis) {
    const text = await (await fetch(`${p.url}/metrics`)).text();
    n += Number(/^lock_lost_total (\d+)/m.exec(text)?.[1] ?? 0);
  }
  return n;
}

const redisFrozen: Scenario = {
  name: 'Redis frozen (SIGSTOP) during a sale: store outage, not ready, locks lost, slow purchases; targets stay up',
  fires: [
    'SeckillStoreUnavailable',
    'SeckillNotReady',
    'SeckillLockLost',
    'SeckillPurchaseLatency',
  ],
  async run(o) {
    // One global lock that 16 shoppers and a holder in this process contend for. Uncontended, a
    // purchase takes and gives back the lock inside its deduct script (lua/deductFree-11.lua): no
    // hold to see, none to lose. The contender makes purchases find the lock busy, so they take it
    // the full way (a watchdog lease), and someone holds it nearly all the time.
    await seed(o.stack, 'obs-redis', { total: 100_000, segments: 1, strategy: 'global' });
    const contender = contend({
      redisUrl: o.stack.redis.url,
      keyPrefix: o.stack.env.KEY_PREFIX!,
      productId: 'obs-redis',
      segment: 0,
    });
    const load = shoppers(o.stack, 'obs-redis', { concurrency: 16, users: 'redis' });
    const watch = createRedisClient({ url: o.stack.redis.url }, { name: 'obs-watch' });
    const lockKey = new Keys(o.stack.env.KEY_PREFIX!).segment('obs-redis', 0).lock.lock;
    let up = '';
    let froze = 0;
    const lostBefore = await lockLostTotal(o);
    try {
      // A lock is lost when a purchase holds one as Redis freezes (the stack's lease is shorter
      // than its command timeout). With 16 shoppers on one global lock someone nearly always
      // does; should a freeze catch the lock between holders, freeze again (at most 10 times).
      for (let freezes = 1; ; freezes++) {
        const sold = load.accepted.length;
        await waitFor('the sale to sell', async () => load.accepted.length >= sold + 20, 30_000);
        const refused = load.answers.get('503 store-unavailable') ?? 0;
        // freeze the moment the lock is seen held by a purchase (its release then cannot land)
        await waitFor(
          'the lock held by a purchase',
          async () => !contender.holding() && (await watch.exists(lockKey)) === 1,
          10_000,
          1,
        );
        o.stack.freezeRedis();
        // a store-unavailable answer comes after the command timeout, past any lease held
        await waitFor(
          'purchases answered 503 store-unavailable',
          async () => (load.answers.get('503 store-unavailable') ?? 0) >= refused + 8,
          30_000,
        );
        froze = freezes;
        // against the count before this scenario: an earlier one may have lost a lock already, and
        // its increase is out of the alert's 1m window by now (CI waited for a firing that never came)
        if ((await lockLostTotal(o)) > lostBefore) break;
        if (freezes === 10) throw new Error('no purchase held a lock at any of 10 freezes');
        o.stack.thawRedis();
      }
      // Prometheus must see the loss in its own scrapes first (named apart when it does not)
      let promView = '';
      await waitFor(
        'Prometheus to see a lock lost',
        async () => {
          const [series, inc] = await Promise.all([
            o.prom.query('lock_lost_total{job="seckill-api"}'),
            o.prom.query('sum(increase(lock_lost_total{job="seckill-api"}[1m]))'),
          ]);
          promView =
            `lock_lost_total ${JSON.stringify(series.map((x) => [x.labels.instance, x.value]))}, ` +
            `increase ${inc[0]?.value}; the processes say ${await lockLostTotal(o)} (before: ${lostBefore})`;
          return (inc[0]?.value ?? 0) > 0;
        },
        60_000,
        500,
        () => promView,
      );
      // all at once: waited for one after another, a slow machine let the lock-lost alert (a 1m
      // increase) resolve while the store-outage alerts were still pending
      await Promise.all(redisFrozen.fires.map((a) => waitFiring(o, a)));
      // the workers' /metrics still answer (their Redis-backed series left out)
      const targets = await o.prom.query('up{job=~"seckill-api|seckill-worker"}');
      up = JSON.stringify(targets.map((t) => [t.labels.instance, t.value]));
      if (targets.length !== 4 || targets.some((t) => t.value !== 1)) {
        throw new Error(`a target went down while Redis was frozen: ${up}`);
      }
    } finally {
      o.stack.thawRedis();
      await load.stop();
      await contender.stop();
      watch.disconnect();
    }
    await waitFor(
      'every process ready again',
      async () => {
        for (const p of [...o.stack.apis, ...o.stack.workers]) {
          if (!(await fetch(`${p.url}/readyz`)).ok) return false;
        }
        return true;
      },
      60_000,
    );
    return `answers ${JSON.stringify(Object.fromEntries(load.answers))}; froze ${froze} time(s); contender held ${contender.holds()} time(s); up ${up}`;
  },
};

const targetsDown: Scenario = {
  name: 'a worker killed, then no worker discovered: SeckillTargetDown, then SeckillJobDown',
  fires: ['SeckillTargetDown', 'SeckillJobDown'],
  async run(o) {
    const [alive, dead] = o.stack.workers as [
      (typeof o.stack.workers)[0],
      (typeof o.stack.workers)[0],
    ];
    await o.stack.kill(dead);
    await waitFiring(o, 'SeckillTargetDown', { instance: dead.target });
    const early = (await o.prom.alerts()).filter((a) => a.labels.alertname === 'SeckillJobDown');
    if (early.length > 0) throw new Error('SeckillJobDown while a worker is still up');
    o.prom.setTargets('seckill-worker', []);
    try {
      await waitFiring(o, 'SeckillJobDown', { job: 'seckill-worker' });
    } finally {
      o.prom.setTargets('seckill-worker', [alive.target]);
    }
    return `${dead.target} down: TargetDown; no worker target: JobDown`;
  },
};

/** In this order: each leaves the stack serving (the last one with one worker). */
const redisMemory: Scenario = {
  name: 'Redis memory near its limit: SeckillRedisMemoryHigh and SeckillRedisMemoryCritical fire',
  fires: ['SeckillRedisMemoryHigh', 'SeckillRedisMemoryCritical'],
  async run(o) {
    const redis = createRedisClient({ url: o.stack.redis.url }, { name: 'obs-memory' });
    const [, before] = (await redis.config('GET', 'maxmemory')) as [string, string];
    let pinning: NodeJS.Timeout | undefined;
    let inFlight: Promise<unknown> = Promise.resolve();
    try {
      // A limit that puts the ratio near 0.95: past both thresholds, with room left for writes.
      // Held there each second: used memory moves (buffers of the previous scenario freed), and a
      // one-off limit once left the ratio between the two thresholds for good.
      let limit = 0;
      let used = 0;
      const pin = async () => {
        const info = await redis.info('memory');
        used = Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
        limit = Math.ceil(used / 0.95);
        await redis.config('SET', 'maxmemory', String(limit));
      };
      await pin();
      pinning = setInterval(() => {
        inFlight = pin().catch(() => undefined);
      }, 1_000);
      for (const a of redisMemory.fires) await waitFiring(o, a);
      return `maxmemory ${limit} for ${used} used bytes: both firing`;
    } finally {
      clearInterval(pinning);
      await inFlight; // a pin landing after the restore would leave the limit down
      await redis.config('SET', 'maxmemory', before);
      redis.disconnect();
    }
  },
};

export const SCENARIOS: Scenario[] = [
  healthy,
  foreign,
  queueDepth,
  lockHeld,
  stalledRoom,
  fullRoom,
  ordersRefused,
  redisFrozen,
  redisMemory,
  targetsDown,
];

/** Alerts a scenario waits for that `rules` do not have (a rule deleted or renamed). */
export function missingRules(rules: Array<{ alert: string }>): string[] {
  const have = new Set(rules.map((r) => r.alert));
  return [...new Set(SCENARIOS.flatMap((s) => s.fires))].filter((a) => !have.has(a));
}

/** Alerts of `rules` that no scenario makes fire (and that are not waiting for their metric). */
export function unproduced(rules: Array<{ alert: string }>): string[] {
  const fired = new Set(SCENARIOS.flatMap((s) => s.fires));
  return rules.map((r) => r.alert).filter((a) => !fired.has(a) && !NOT_YET_PRODUCED[a]);
}
