/**
 * The ioredis internals the shard breaker patches (src/redis/shard-health.ts): the cluster
 * client's `sendCommand(command, stream, node)`, where `node` is a pipeline's `{ slot, redis }`;
 * a Command's `resolve`, `reject`, `promise` and `getSlot()`, the client wrapping the `reject` it
 * finds (so the breaker's wrapper sees a command's final outcome, after redirections); the slot
 * map `cluster.slots` ("host:port" of each slot's master first) and `nodes()`. An upgrade of
 * ioredis that changes any of them fails here, by name, rather than turning the breaker off
 * without a sound. On the cluster project, a real Redis Cluster shows them at work. The command
 * timeout (src/redis/connection.ts) reads a Command's `isSettled` and sets its timer where
 * ioredis's own goes (`_commandTimeoutTimer`, cleared when the command settles).
 */
import calculateSlot from 'cluster-key-slot';
import { Cluster, Command, Pipeline } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedisClient } from '../../src/redis/connection.js';
import { ShardHealth } from '../../src/redis/shard-health.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();

describe('the internals the breaker patches, as installed', () => {
  it("the cluster client's sendCommand takes (command, stream, node) and routes by node or slot", () => {
    const source = Cluster.prototype.sendCommand.toString();
    expect(source).toMatch(/^sendCommand\(command, stream, node\)/);
    // the target: a pipeline's node ({ slot, redis }), else the command's own slot
    expect(source).toContain('node ? node.slot : command.getSlot()');
    expect(source).toMatch(/node && node\.redis/);
    // the client wraps the reject it finds: a wrapper set before it sees the final outcome
    expect(source).toContain('const reject = command.reject;');
    expect(source).toContain('reject.call(command, err)');
  });

  it('a pipeline hands each command its node as { slot, redis }', () => {
    const source = Pipeline.prototype.exec.toString();
    expect(source).toMatch(/node = \{\s*slot: pipelineSlot,\s*redis:/);
    expect(source).toContain('_this.redis.sendCommand(_this._queue[i], stream, node)');
  });

  it('a Command settles its promise through resolve and reject, and knows its slot', async () => {
    const key = 'ioredis-internals:{tag}';
    const got = new Command('get', [key]);
    expect(got.getSlot()).toBe(calculateSlot(key));
    expect(got.promise).toBeInstanceOf(Promise);
    got.resolve('value');
    await expect(got.promise).resolves.toBe('value');
    const refused = new Command('get', [key]);
    const err = new Error('refused');
    refused.reject(err);
    await expect(refused.promise).rejects.toBe(err);
  });

  it('a Command says it settled (isSettled) and then clears the timer set in _commandTimeoutTimer', async () => {
    // the command timeout (src/redis/connection.ts) sets its own timer there and reads isSettled
    type Timed = Pick<Command, 'promise' | 'resolve' | 'reject'> & {
      isSettled: boolean;
      _commandTimeoutTimer?: NodeJS.Timeout;
    };
    const timers: NodeJS.Timeout[] = [];
    for (const settle of ['resolve', 'reject'] as const) {
      const c = new Command('get', ['ioredis-internals:timer']) as unknown as Timed;
      c.promise.catch(() => {});
      expect(c.isSettled).toBe(false);
      const timer = setTimeout(() => {}, 60_000);
      timers.push(timer);
      c._commandTimeoutTimer = timer;
      if (settle === 'resolve') c.resolve('value');
      else c.reject(new Error('refused'));
      expect(c.isSettled).toBe(true);
      expect(c._commandTimeoutTimer).toBeUndefined();
    }
    const clears = (Command.prototype as unknown as { _clearTimers(): void })._clearTimers;
    expect(clears.toString()).toMatch(/_commandTimeoutTimer;[^]*clearTimeout\(existingTimer\)/);
    for (const t of timers) clearTimeout(t);
  });

  it('a cluster client has a slot map and its nodes before it connects', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    expect(Array.isArray(cluster.slots)).toBe(true);
    expect(cluster.nodes('all')).toEqual([]);
    cluster.disconnect();
  });
});

describe.runIf(ns.clustered)('on a Redis Cluster', () => {
  const redis = createRedisClient(ns.redisTarget, { name: 'ioredis-internals', role: 'command' });
  afterAll(() => closeRedis(redis));

  it('the slot map names each slot by its master "host:port", as nodes() spells them', async () => {
    const cluster = redis as Cluster;
    await cluster.ping();
    const masters = cluster.nodes('master').map((n) => `${n.options.host}:${n.options.port}`);
    expect(masters.length).toBeGreaterThanOrEqual(3);
    expect(cluster.slots).toHaveLength(16_384);
    const owners = new Set(cluster.slots.map((nodes) => nodes[0]));
    expect([...owners].sort()).toEqual([...masters].sort());
  });

  it('the patched sendCommand sees a plain command by its slot and a pipeline by its node', async () => {
    const cluster = redis as Cluster;
    const seen: Array<{ slot: number; node: { slot?: number; redis?: unknown } | undefined }> = [];
    const patched = cluster.sendCommand;
    cluster.sendCommand = function (
      this: Cluster,
      command: Command,
      stream?: unknown,
      node?: never,
    ) {
      seen.push({ slot: command.getSlot(), node });
      return patched.call(this, command, stream as never, node);
    } as typeof patched;
    try {
      const key = `${ns.id}:ioredis-internals:{t}`;
      await cluster.set(key, '1');
      await cluster.pipeline().get(key).exec();
    } finally {
      cluster.sendCommand = patched;
    }
    const slot = calculateSlot(`${ns.id}:ioredis-internals:{t}`);
    expect(seen[0]).toEqual({ slot, node: undefined });
    expect(seen[1]!.node?.slot).toBe(slot);
    expect(cluster.nodes('master')).toContain(seen[1]!.node?.redis);
    // a shard the client knows is healthy is not down
    expect(new ShardHealth(cluster).down(`${ns.id}:ioredis-internals:{t}`)).toBeUndefined();
  });
});
