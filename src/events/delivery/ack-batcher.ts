/**
 * Acknowledgements written together: every delivery finishing within a few milliseconds of
 * another in this process moves its lane in the same statement (lanes-repository.ts's
 * ackMany), instead of one UPDATE each. A lost batch of them (a crash before the write) only
 * sends those events again: receivers dedupe on their ids.
 */
import type { Ack } from '../lanes/index.js';

/** Longest an acknowledgement waits for company, and most in one statement. */
const WAIT_MS = 5;
const MAX_ACKS = 500;

export function ackBatcher(ackMany: (acks: readonly Ack[]) => Promise<Set<string>>) {
  let pending: Array<{ ack: Ack; settle: (moved: boolean) => void; fail: (err: unknown) => void }> =
    [];
  let timer: NodeJS.Timeout | undefined;
  const flush = async () => {
    clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    // one per lane: the furthest of those that start from the same version
    const latest = new Map<string, Ack>();
    for (const { ack } of batch) {
      const key = `${ack.endpointId} ${ack.subject} ${ack.from}`;
      if ((latest.get(key)?.version ?? 0) < ack.version) latest.set(key, ack);
    }
    try {
      const moved = await ackMany([...latest.values()]);
      for (const p of batch) p.settle(moved.has(`${p.ack.endpointId} ${p.ack.subject}`));
    } catch (err) {
      for (const p of batch) p.fail(err);
    }
  };
  /** @returns whether the lane moved (false: a replay moved it meanwhile) */
  return (ack: Ack): Promise<boolean> =>
    new Promise((settle, fail) => {
      pending.push({ ack, settle, fail });
      if (pending.length >= MAX_ACKS) void flush();
      else timer ??= setTimeout(() => void flush(), WAIT_MS);
    });
}
