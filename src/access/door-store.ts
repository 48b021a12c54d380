/**
 * The door's shared state in Redis (docs/fairness.md): who tried each sale (the fairness notes,
 * in the product's slot) and the challenges' flags, single-use claims and spacing. Implements the
 * services' FairnessStore and ChallengeStore ports (structurally: access/ sits below services/).
 */
import type { RedisClient } from '../redis/connection.js';
import { inBackground } from '../redis/background.js';
import type { Keys } from '../redis/keys.js';

/** An identity as the fairness notes keep it (services' `Tried`). */
interface Tried {
  userId: string;
  block: string;
  fingerprint?: string | undefined;
  address?: string | undefined;
  at?: number | undefined;
  accountCreatedAt?: number | undefined;
}

/** An identity's first note: `<block>\t<fingerprint>\t<address>\t<at ms>\t<account made ms>`. */
const encodeTried = (tried: Tried) =>
  [
    tried.block,
    tried.fingerprint ?? '',
    tried.address ?? '',
    tried.at ?? '',
    tried.accountCreatedAt ?? '',
  ].join('\t');

function decodeTried(userId: string, text: string): Tried {
  const [block = 'unknown', fingerprint, address, at, made] = text.split('\t');
  return {
    userId,
    block,
    ...(fingerprint && { fingerprint }),
    ...(address && { address }),
    ...(at && { at: Number(at) }),
    ...(made && { accountCreatedAt: Number(made) }),
  };
}

const counts = (hash: Record<string, string>) =>
  new Map(Object.entries(hash).map(([u, n]) => [u, Number(n)]));

/** A sale's notes outlive it this long: its report can be read again after the end. */
const NOTES_TTL_S = 30 * 86_400;
/** Flags and an address block's identities are forgotten after an hour without a new one. */
const FLAGS_TTL_S = 3_600;

export class DoorStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  /** A batch of notes: the flush's own loop, no request's cost (redis/background.ts). */
  write(
    productId: string,
    epoch: number,
    batch: Parameters<DoorStore['writeNow']>[2],
  ): Promise<void> {
    return inBackground('fairness notes', () => this.writeNow(productId, epoch, batch));
  }

  private async writeNow(
    productId: string,
    epoch: number,
    batch: {
      seen: Tried[];
      fails: Map<string, number>;
      decoys: Map<string, number>;
      rules: string;
    },
  ): Promise<void> {
    const k = this.keys.fairness(productId, epoch);
    const p = this.redis.pipeline();
    // first seen is kept: what a rule saw of an identity does not change after it tried
    for (const t of batch.seen) p.hsetnx(k.seen, t.userId, encodeTried(t));
    for (const [userId, n] of batch.fails) p.hincrby(k.fails, userId, n);
    for (const [userId, n] of batch.decoys) p.hincrby(k.decoys, userId, n);
    p.set(k.rules, batch.rules, 'EX', NOTES_TTL_S, 'NX');
    p.expire(k.seen, NOTES_TTL_S);
    if (batch.fails.size > 0) p.expire(k.fails, NOTES_TTL_S);
    if (batch.decoys.size > 0) p.expire(k.decoys, NOTES_TTL_S);
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
      for (let i = 0; i < flat.length; i += 2) seen.push(decodeTried(flat[i]!, flat[i + 1]!));
      cursor = next;
    } while (cursor !== '0');
    const [fails, decoys, rules] = await Promise.all([
      this.redis.hgetall(k.fails),
      this.redis.hgetall(k.decoys),
      this.redis.get(k.rules),
    ]);
    return { seen, fails: counts(fails), decoys: counts(decoys), rules };
  }

  /** The sale's report went out on the feed (fairness.report). */
  async reported(productId: string, epoch: number): Promise<boolean> {
    return (await this.redis.exists(this.keys.fairness(productId, epoch).reported)) === 1;
  }

  async markReported(productId: string, epoch: number): Promise<void> {
    await this.redis.set(this.keys.fairness(productId, epoch).reported, '1', 'EX', NOTES_TTL_S);
  }

  /** When the sale was first seen final (ms): `now` on the first call, kept after. */
  async finalSince(productId: string, epoch: number, now: number): Promise<number> {
    const key = this.keys.fairness(productId, epoch).finalSince;
    await this.redis.set(key, String(now), 'EX', NOTES_TTL_S, 'NX');
    return Number((await this.redis.get(key)) ?? now);
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
