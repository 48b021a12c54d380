/**
 * The gateway of a segment's sale window after its seed (lua/segmentWindow-1.lua): an operator's
 * pause, resume and end now (drop/controls.ts), and a carrying reseed's opening
 * (catalogue/seeding.ts). In the shared bottom, so both rooms reach it.
 */
import type { RedisClient } from '../redis/connection.js';
import type { SegmentKeys } from '../redis/keys.js';
import { luaScript } from '../redis/scripts.js';

const scripts = {
  segmentWindow: luaScript('segmentWindow', { set: 0, staleEpoch: 1 }),
};

export type WindowReply = { code: 'set' } | { code: 'stale-epoch'; epoch: number };

/** Sets a segment's startsAt and / or endsAt (undefined keeps each), in `epoch` only. */
export async function setWindow(
  redis: RedisClient,
  segment: SegmentKeys,
  epoch: number,
  window: { startsAt?: number | undefined; endsAt?: number | undefined },
): Promise<WindowReply> {
  const r = await scripts.segmentWindow.run<number[]>(
    redis,
    [segment.state],
    [epoch, window.startsAt ?? '', window.endsAt ?? ''],
  );
  return r[0] === 0 ? { code: 'set' } : { code: 'stale-epoch', epoch: r[1]! };
}
