import { describe, expect, it } from 'vitest';
import { LocalLatch } from '../../src/lock/latch.js';
import { sleep } from '../support/locks.js';

const enter = async (g: LocalLatch, name: string, waitMs: number) => {
  const e = g.enter(name, waitMs);
  return e instanceof Promise ? e : e;
};

describe('LocalLatch', () => {
  it('admits one at a time, first come first served, and forgets idle names', async () => {
    const g = new LocalLatch();
    const order: number[] = [];
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      [0, 1, 2, 3, 4].map(async (i) => {
        const leave = (await enter(g, 'L', 1_000))!;
        inside++;
        maxInside = Math.max(maxInside, inside);
        order.push(i);
        // the scenario: a stay inside, for another to overlap it if it could
        await sleep(5);
        inside--;
        leave();
      }),
    );
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(maxInside).toBe(1);
    expect(g.size).toBe(0);
  });

  it('gives up after waitMs, and a timed-out waiter is never admitted later', async () => {
    const g = new LocalLatch();
    const leave = (await enter(g, 'L', 0))!;
    expect(await enter(g, 'L', 0)).toBeNull();
    const late = enter(g, 'L', 20);
    // the scenario: the late entry waits past its 20 ms
    await sleep(40);
    expect(await late).toBeNull();
    const next = enter(g, 'L', 1_000);
    leave();
    const leave2 = await next;
    expect(leave2).toBeTypeOf('function');
    leave2!();
    expect(g.size).toBe(0);
  });

  it('keeps names apart', async () => {
    const g = new LocalLatch();
    const a = await enter(g, 'A', 0);
    const b = await enter(g, 'B', 0);
    expect(a).toBeTypeOf('function');
    expect(b).toBeTypeOf('function');
  });
});
