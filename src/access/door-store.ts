/**
 * The door's shared state in Redis (docs/fairness.md): who tried each sale (the fairness notes,
 * in the product's slot) and the challenges' flags, single-use claims and spacing. Implements the
 * services' FairnessStore and ChallengeStore ports (structurally: access/ sits below services/).
 */
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';

/** An identity as the fairness notes keep it (services' `Tried`). */
interface Tried {
  userId: string;
  block: string;
  fingerprint?: string | undefined;
}

/** A sale's notes outlive it this long: its report can be read again after the end. */
const NOTES_TTL_S = 30 * 86_400;
/** Flags and an address block's identities are forgotten after an hour without a new one. */
const FLAGS_TTL_S = 3_600;

export class DoorStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  async write(
    productId: string,
    epoch: number,
    batch: { seen: Tried[]; fails: Map<string, number>; rules: string },
  ): Promise<void> {
    const k = this.keys.fairness(productId, epoch);
    const p = this.redis.pipeline();
    // first seen is kept: what a rule saw of an identity does not change after it tried
    for (const t of batch.seen) p.hsetnx(k.seen, t.userId, `${t.block}\t${t.fingerprint ?? ''}`);
    for (const [userId, n] of batch.fails) p.hincrby(k.fails, userId, n);
    p.set(k.rules, batch.rules, 'EX', NOTES_TTL_S, 'NX');
    p.expire(k.seen, NOTES_TTL_S);
    if (batch.fails.size > 0) p.expire(k.fails, NOTES_TTL_S);
    const answers = (await p.exec()) ?? [];
    const failed = answers.find(([err]) => err);
    if (failed) throw failed[0]!;
  }

  async read(productId: string, epoch: number) {
    const k = this.keys.fairness(productId, epoch);
    const seen: Tried[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(k.seen, cursor, 'COUNT', 5_000);
      for (let i = 0; i < flat.length; i += 2) {
        const [block = 'unknown', fingerprint] = flat[i + 1]!.split('\t');
        seen.push({ userId: flat[i]!, block, ...(fingerprint && { fingerprint }) });
      }
      cursor = next;
    } while (cursor !== '0');
    const [fails, rules] = await Promise.all([
      this.redis.hgetall(k.fails),
      this.redis.get(k.rules),
    ]);
    return {
      seen,
      fails: new Map(Object.entries(fails).map(([u, n]) => [u, Number(n)])),
      rules,
    };
  }

  async signals(
    userId: string,
    block: string,
  ): Promise<{ userFlags: number; blockFlags: number; blockIdentities: number }> {
    const b = this.keys.door().block(block);
    const p = this.redis.pipeline();
    p.sadd(b.identities, userId);
    p.expire(b.identities, FLAGS_TTL_S);
    p.scard(b.identities);
    p.get(b.flags);
    const [answers, userFlags] = await Promise.all([
      p.exec(),
      this.redis.get(this.keys.door().userFlags(userId)),
    ]);
    const failed = answers?.find(([err]) => err);
    if (failed) throw failed[0]!;
    return {
      userFlags: Number(userFlags ?? 0),
      blockFlags: Number(answers![3]![1] ?? 0),
      blockIdentities: Number(answers![2]![1]),
    };
  }

  async flag(userId: string, block: string): Promise<void> {
    const door = this.keys.door();
    const flagOne = async (key: string) => {
      await this.redis.pipeline().incr(key).expire(key, FLAGS_TTL_S).exec();
    };
    await Promise.all([flagOne(door.userFlags(userId)), flagOne(door.block(block).flags)]);
  }

  async claim(id: string, userId: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.keys.door().claimed(id), userId, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async space(who: string, gapMs: number): Promise<number> {
    const key = this.keys.door().spaced(who);
    if ((await this.redis.set(key, '1', 'PX', gapMs, 'NX')) === 'OK') return 0;
    return Math.max(1, await this.redis.pttl(key));
  }
}
