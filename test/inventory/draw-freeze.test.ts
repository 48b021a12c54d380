/**
 * A freeze that comes after its beacon round's time is rolled back and done again; the next
 * attempt takes a margin of four times what the late one took, so a list whose write is slower
 * than the configured margin freezes at the next try instead of missing its round each time.
 * The write is made slow on purpose: a second connection holds the frozen list's table while
 * each attempt waits on it, past the round a 0 ms margin on 1 s rounds would take.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { firstRoundAtOrAfter, roundTime } from '../../src/draw/chain.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DrawPhase, DrawStore } from '../../src/inventory/index.js';
import type { FreezePhases } from '../../src/inventory/draw/phase.js';
import { startApp, type RunningApp } from '../support/app.js';
import { startTestChain, type TestChain } from '../support/beacon.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
let chain: TestChain;
let app: RunningApp;

beforeAll(async () => {
  chain = await startTestChain(1, 0);
  app = await startApp(
    ns.config({ SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789', ...chain.env }),
  );
});
afterAll(async () => {
  await app?.close();
  await chain?.close();
});

/**
 * Holds draw_entries (no insert passes) on a connection of its own until half a second past the
 * time of any round a freeze starting about now with no margin would take: that freeze is late.
 * @returns how long it holds (ms), and its end
 */
async function holdPastTheRound(): Promise<{ ms: number; held: Promise<void> }> {
  let locked!: () => void;
  const taken = new Promise<void>((resolve) => (locked = resolve));
  const now = Date.now();
  // the freeze starts a little after `now`: the round after `now`'s covers a boundary crossed
  const until =
    roundTime(chain.chain.info, firstRoundAtOrAfter(chain.chain.info, now + 1_000)) + 500;
  const ms = until - now;
  const held = app.rt.db.connection().execute(async (conn) => {
    await sql`begin`.execute(conn);
    await sql`lock table draw_entries in exclusive mode`.execute(conn);
    locked();
    await waitFor('the hold to end', async () => Date.now() >= until, ms + 5_000, 20);
    await sql`commit`.execute(conn);
  });
  await taken;
  return { ms, held };
}

describe("a draw's freeze", () => {
  it('done late, is done again with a margin of four times what it took, and then holds', async () => {
    const productId = `f${randomBytes(4).toString('hex')}`;
    // the window closes an hour away for the app's own admitter; this test closes it itself
    const res = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        total: 2,
        strategy: 'segmented',
        segments: 2,
        draw: {
          entriesOpenAt: new Date(Date.now() - 1_000).toISOString(),
          entriesCloseAt: new Date(Date.now() + 3_600_000).toISOString(),
          buyWithinSeconds: 60,
        },
      }),
    });
    expect(res.status).toBe(201);
    const view = (await app.rt.inventory.catalogue.get(productId))!;
    const store = new DrawStore(app.rt.redis, app.rt.keys);
    const sale = { epoch: view.epoch, endsAt: view.endsAt, draw: view.draw! };
    for (let i = 0; i < 5; i++) {
      const r = await store.enter(productId, sale, { userId: `u${i}`, block: '10.0.0.0/24' }, 100);
      expect(r.code).toBe('entered');
    }
    const timed: FreezePhases[] = [];
    const phase = new DrawPhase({
      store,
      db: app.rt.db,
      beacon: { ...app.rt.config.draw, marginMs: 0 },
      onFreezeTimed: (_, phases) => timed.push(phases),
    });
    const closing = { ...view, draw: { ...view.draw!, entriesCloseAt: Date.now() } };
    const fence = Date.now();

    const first = await holdPastTheRound();
    expect((await phase.prepare(closing, fence)).ready).toBe(false);
    await first.held;
    expect(timed.map((t) => t.written)).toEqual(['late']);
    expect(await phase.record(productId, view.epoch)).toBeNull();

    // held past the round a 0 ms margin would take again: in time now, its round at least four
    // times the late freeze's time past its freeze
    const second = await holdPastTheRound();
    expect((await phase.prepare(closing, fence)).ready).toBe(false);
    await second.held;
    expect(timed.map((t) => t.written)).toEqual(['late', 'frozen']);
    const record = (await phase.record(productId, view.epoch))!;
    expect(record.entries).toBe(5);
    expect(record.roundAt.getTime() - record.frozenAt.getTime()).toBeGreaterThanOrEqual(
      4 * first.ms,
    );
  });
});
