/**
 * The chaos run's operator: pauses the waiting-room product while its line moves and shoppers
 * buy, then resumes it (docs/operations.md#running-a-drop), through the admin API as an operator
 * would, faults and all. Each try is a `control` history entry; a try without a 200 is tried again
 * (a process restarting, a shard failing over) on the next API process. pause-checks.ts judges
 * the window from them.
 */
import type { ControlOp } from './history.js';
import { newOp } from './shoppers.js';

/** When the pause comes and how long it lasts (ms of the run): while the room sells. */
export function pausePlan(durationMs: number): { at: number; lasts: number } {
  return { at: Math.max(8_000, durationMs * 0.15), lasts: Math.max(4_000, durationMs * 0.1) };
}

/** Tries of one control, a second apart, before the run gives up on it. */
const TRIES = 60;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export interface RoomPauseOptions {
  urls: () => string[];
  adminToken: string;
  product: string;
  durationMs: number;
  now: () => number;
  record: (op: ControlOp) => void;
  say: (line: string) => void;
}

async function control(o: RoomPauseOptions, action: ControlOp['action']): Promise<boolean> {
  for (let i = 0; i < TRIES; i++) {
    const urls = o.urls();
    const url = urls[i % urls.length]!;
    const op = newOp();
    const invokeMs = o.now();
    let status = 0;
    let code: string | undefined;
    try {
      const res = await fetch(`${url}/admin/products/${encodeURIComponent(o.product)}/${action}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${o.adminToken}`, 'x-operator': 'chaos operator' },
        signal: AbortSignal.timeout(10_000),
      });
      status = res.status;
      const body = (await res.json().catch(() => ({}))) as { type?: unknown };
      // a problem's type is urn:seckill:problem:<code>
      if (typeof body.type === 'string') code = body.type.split(':').at(-1);
    } catch {
      // timeout or reset: it may have run; tried again
    }
    o.record({
      type: 'control',
      op,
      action,
      product: o.product,
      invokeMs,
      completeMs: o.now(),
      status,
      ...(code && { code }),
    });
    if (status === 200) return true;
    await sleep(1_000);
  }
  o.say(`${action} of ${o.product}: no 200 in ${TRIES} tries`);
  return false;
}

/**
 * Pauses at the plan's time and resumes the plan's length after the pause was answered (faults
 * may hold the pause up: the window still lasts); resolves once resumed (or given up).
 */
export async function pauseAndResume(o: RoomPauseOptions): Promise<void> {
  const plan = pausePlan(o.durationMs);
  await sleep(plan.at - o.now());
  o.say(`pausing ${o.product} for ${plan.lasts} ms`);
  if (await control(o, 'pause')) o.say(`${o.product} paused`);
  await sleep(plan.lasts);
  if (await control(o, 'resume')) o.say(`${o.product} resumed`);
}
