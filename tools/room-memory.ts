/**
 * Redis memory per waiting shopper (docs/waiting-room.md#memory): N joins through the real join
 * script on a scratch redis-server, before and after the opening (the shuffle moves the lobby
 * into tickets), and after every one was admitted. Prints bytes per place for each, and the
 * longest single admit call of the opening's shuffle (timed at the client on localhost: the time
 * the shard is blocked, give or take a round trip).
 *
 *   npx tsx tools/room-memory.ts [N=100000] [port=6399] [id length=13]
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Keys } from '../src/redis/keys.js';
import { registerScripts } from '../src/redis/scripts.js';
import { RoomStore } from '../src/inventory/rooms/store.js';
import type { RedisClient } from '../src/redis/connection.js';

const n = Number(process.argv[2] ?? 100_000);
const port = Number(process.argv[3] ?? 6399);
/** shopper ids of this many characters (128: the longest an id may be) */
const idLength = Number(process.argv[4] ?? 13);
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
  stdio: 'ignore',
});
try {
  await sleep(300);
  const redis = new Redis({ port }) as unknown as RedisClient;
  registerScripts(redis);
  const keys = new Keys('mem');
  const store = new RoomStore(redis, keys);
  const used = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
  const sale = { epoch: 1, endsAt: 0 };
  const id = (i: number) => `user-${String(i).padStart(idLength - 5, '0')}`;
  const base = await used();
  for (let i = 0; i < n; i += 1_000) {
    await Promise.all(
      Array.from({ length: Math.min(1_000, n - i) }, (_, j) => store.join('p', sale, id(i + j), n)),
    );
  }
  const pre = await used();
  const settings = { admitPerSecond: 100_000, maxActive: 10_000_000, admittedForSeconds: 600 };
  const args = {
    epoch: 1,
    fence: 1,
    startsAt: 0,
    endsAt: 0,
    seed: 7,
    soldOut: false,
    unitsLeft: -1,
    limitPerUser: 1,
    doneAtRead: 0,
    settings,
  };
  // the opening and its shuffle, call after call as the admitter makes them, nobody admitted
  const times: number[] = [];
  for (let left = 1; left > 0;) {
    const at = performance.now();
    const t = await store.admit('p', { ...args, soldOut: true }, false);
    times.push(performance.now() - at);
    if (t.code !== 'ticked') throw new Error('fenced');
    left = t.shuffleLeft;
  }
  const opened = await used();
  for (let served = 0; served < n;) {
    const t = await store.admit('p', args, false);
    if (t.code !== 'ticked') throw new Error('fenced');
    served = t.served;
  }
  const admitted = await used();
  const median = [...times].sort((x, y) => x - y)[Math.floor(times.length / 2)]!;
  const per = (bytes: number) => (bytes / n).toFixed(1);
  console.log(`${n} places, shopper ids of ${idLength} characters`);
  console.log(`before the opening (lobby): ${per(pre - base)} bytes per place`);
  console.log(`after the opening (tickets):    ${per(opened - base)} bytes per place`);
  console.log(`all admitted (active, times):   ${per(admitted - base)} bytes per place`);
  const longest = Math.max(...times).toFixed(1);
  console.log(
    `the opening's shuffle: ${times.length} admit calls, median ${median.toFixed(1)} ms, longest ${longest} ms`,
  );
  await redis.quit();
} finally {
  server.kill();
}
