/**
 * bench:draw's app: the real API (as `seckill serve` wires it) in this process, with the draw's
 * steps driven directly (the freeze and the draw timed apart), entries written through the entry
 * script, and the crowd's draws and race.
 */
import type { AddressInfo } from 'node:net';
import type { Config } from '../../src/config/index.js';
import { createCore } from '../../src/composition/core.js';
import { apiServices, serveApi, startOrderQueue } from '../../src/composition/roles.js';
import { DrawPhase, DrawStore, type ProductView } from '../../src/inventory/index.js';
import type { FreezePhases } from '../../src/inventory/draw/phase.js';
import { createLogger } from '../../src/log.js';
import { progress } from './report.js';

const ADMIN = 'bench-admin-token-0123456789';
/** Entries written at once when entering directly. */
const ENTER_AT_ONCE = 2_000;

export interface BenchApp {
  httpEntries(n: number, concurrency: number): Promise<number>;
  seedDraw(productId: string, o: { total: number }): Promise<ProductView>;
  enterDirect(
    productId: string,
    view: ProductView,
    n: number,
    users?: string[],
  ): Promise<Map<string, string>>;
  /** the freeze until one came in time for its round (its attempts' phases), then the draw */
  freezeAndDraw(
    view: ProductView,
  ): Promise<{ freezeMs: number; drawMs: number; attempts: FreezePhases[] }>;
  transcript(productId: string): Promise<{ winners: string[]; waitlist: string[] }>;
  crowd(o: {
    humans: number;
    bots: number;
    identities: number;
    units: number;
    draws: number;
  }): Promise<{
    drawMean: number;
    draws: number[];
    race: number;
  }>;
  close(): Promise<void>;
}

async function pool<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
}

export async function startApp(config: Config): Promise<BenchApp> {
  const core = createCore({ ...config, http: { ...config.http, port: 0 } }, createLogger(config));
  const queue = startOrderQueue(core);
  const services = apiServices(core, queue);
  const server = await serveApi(core, services, [queue]);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = new DrawStore(core.redis, core.keys);
  const timed: FreezePhases[] = [];
  const phase = new DrawPhase({
    store,
    db: core.db,
    beacon: config.draw,
    onFreezeTimed: (_, phases) => {
      timed.push(phases);
      progress(`freeze phases (ms): ${JSON.stringify(phases)}`);
    },
  });
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  let fence = Date.now();

  async function seed(productId: string, body: Record<string, unknown>) {
    const res = await fetch(`${url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ strategy: 'segmented', segments: 4, ...body }),
    });
    if (res.status !== 201) throw new Error(`seed ${productId}: ${res.status} ${await res.text()}`);
    return (await core.inventory.catalogue.get(productId))!;
  }

  const app: BenchApp = {
    async httpEntries(n, concurrency) {
      const productId = `http${Date.now().toString(36)}`;
      await app.seedDraw(productId, { total: 10 });
      const users = Array.from({ length: n }, (_, i) => `h${i}`);
      const started = performance.now();
      await pool(users, concurrency, async (u) => {
        const res = await fetch(`${url}/products/${productId}/draw/entry`, {
          method: 'POST',
          headers: { 'x-user-id': u },
        });
        await res.arrayBuffer();
        if (res.status !== 201) throw new Error(`entry: ${res.status}`);
      });
      return n / ((performance.now() - started) / 1_000);
    },

    seedDraw: (productId, o) =>
      seed(productId, {
        total: o.total,
        draw: {
          entriesOpenAt: new Date(Date.now() - 1_000).toISOString(),
          entriesCloseAt: new Date(Date.now() + 3_600_000).toISOString(),
          buyWithinSeconds: 600,
        },
      }),

    async enterDirect(productId, view, n, given) {
      const users = given ?? Array.from({ length: n }, (_, i) => `u${i}`);
      const ids = new Map<string, string>();
      const sale = { epoch: view.epoch, endsAt: view.endsAt, draw: view.draw! };
      for (let from = 0; from < users.length; from += ENTER_AT_ONCE) {
        await Promise.all(
          users.slice(from, from + ENTER_AT_ONCE).map(async (userId, i) => {
            const block = `10.${(from + i) >> 16}.${((from + i) >> 8) & 255}.0/24`;
            const r = await store.enter(productId, sale, { userId, block }, 10_000_000);
            if (r.code !== 'entered') throw new Error(`entry ${userId}: ${r.code}`);
            ids.set(userId, r.entryId);
          }),
        );
      }
      return ids;
    },

    async freezeAndDraw(view) {
      // the window closes now (the seeded close is an hour away): the steps as the admitter takes them
      const closing = { ...view, draw: { ...view.draw!, entriesCloseAt: Date.now() } };
      fence += 1;
      // frozen once a freeze came in time for its round: one that came late counts too
      const from = timed.length;
      const t0 = performance.now();
      let frozen = null;
      while (!frozen) {
        if ((await phase.prepare(closing, fence)).ready) throw new Error('drawn at the freeze');
        frozen = await phase.record(view.id, view.epoch);
      }
      const freezeMs = Math.round(performance.now() - t0);
      const attempts = timed.slice(from);
      await new Promise((r) => setTimeout(r, Math.max(0, frozen.roundAt.getTime() - Date.now())));
      const t1 = performance.now();
      for (;;) {
        const step = await phase.prepare(closing, fence);
        if (step.ready) break;
        await new Promise((r) => setTimeout(r, Math.max(10, step.at - Date.now())));
      }
      return { freezeMs, drawMs: Math.round(performance.now() - t1), attempts };
    },

    async transcript(productId) {
      const a = await services.draws!.transcripts.transcript(productId);
      if (a.kind !== 'transcript') throw new Error(a.kind);
      return a.transcript;
    },

    async crowd(o) {
      const bots = Array.from({ length: o.bots }, (_, b) =>
        Array.from({ length: o.identities }, (_, k) => `bot${b}-id${k}`),
      );
      const botIds = new Set(bots.flat());
      const humans = Array.from({ length: o.humans }, (_, i) => `human${i}`);
      const draws: number[] = [];
      for (let d = 0; d < o.draws; d++) {
        const productId = `crowd${d}x${Date.now().toString(36)}`;
        const view = await app.seedDraw(productId, { total: o.units });
        const ids = await app.enterDirect(productId, view, 0, [...humans, ...botIds]);
        const botEntries = new Set([...botIds].map((u) => ids.get(u)!));
        await app.freezeAndDraw(view);
        const t = await app.transcript(productId);
        draws.push(t.winners.filter((id) => botEntries.has(id)).length);
      }
      const race = await raceOf(o.units, humans, bots);
      return { drawMean: draws.reduce((a, b) => a + b, 0) / draws.length, draws, race };
    },

    async close() {
      await core.lifecycle.close();
    },
  };

  /** A first-come sale: the bots fire every identity at the opening, the shoppers over 2 s. */
  async function raceOf(units: number, humans: string[], bots: string[][]): Promise<number> {
    const productId = `race${Date.now().toString(36)}`;
    const opensAt = Date.now() + 2_000;
    await seed(productId, { total: units, startsAt: new Date(opensAt).toISOString() });
    let botUnits = 0;
    let soldOut = false;
    // a kept-alive socket the server closed meanwhile resets: the client tries again, as a 503
    const buy = async (userId: string): Promise<number> => {
      try {
        const res = await fetch(`${url}/seckill`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user-id': userId },
          body: JSON.stringify({ productId }),
        });
        await res.arrayBuffer();
        return res.status;
      } catch {
        return 503;
      }
    };
    const until = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
    const botRuns = bots.map(async (identities) => {
      await until(opensAt - 50);
      await pool(identities, 10, async (u) => {
        for (;;) {
          if (soldOut) return;
          const status = await buy(u);
          if (status === 202) botUnits++;
          if (status === 409) soldOut = true;
          if (status !== 425 && status !== 503) return;
        }
      });
    });
    const humanRuns = humans.map(async (u) => {
      await until(opensAt + Math.random() * 2_000);
      for (;;) {
        const status = await buy(u);
        if (status !== 425 && status !== 503) return;
      }
    });
    await Promise.all([...botRuns, ...humanRuns]);
    return botUnits;
  }

  return app;
}
