/**
 * `seckill_redis_memory_used_ratio`: used_memory / maxmemory of each Redis master, read when
 * /metrics is scraped. Redis runs with noeviction (BullMQ needs it): from REDIS_MEMORY_SHED_AT
 * new waiting-room places are refused, past 1 Redis refuses every write but the sale's own (its
 * scripts are flagged allow-oom) and orders wait in their outboxes, so an alert fires well
 * before (docs/catalogue.md#redis-memory). A node without maxmemory, or that does not answer
 * within GAUGE_READ_TIMEOUT_MS, has no ratio (absent).
 */
import { Gauge, type Registry } from 'prom-client';
import { boundedRead } from '../metrics.js';
import type { RedisClient } from './connection.js';
import { infoField } from './memory-headroom.js';

export function registerRedisMemoryGauge(registry: Registry, redis: RedisClient): void {
  new Gauge({
    name: 'seckill_redis_memory_used_ratio',
    help: 'used_memory / maxmemory per Redis master (noeviction: at 1 only the sale writes)',
    labelNames: ['node'],
    registers: [registry],
    // every worker reads the same nodes: merged with max, not summed
    aggregator: 'max',
    async collect() {
      this.reset();
      const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
      await Promise.all(
        nodes.map(async (n) => {
          // a node that does not answer in time is left out: the scrape itself must not stall
          const info = await boundedRead(n.info('memory'), 'redis memory').catch(() => '');
          const max = infoField(info, 'maxmemory');
          if (!(max > 0)) return;
          const node = `${n.options.host ?? 'localhost'}:${n.options.port ?? 6379}`;
          this.set({ node }, infoField(info, 'used_memory') / max);
        }),
      );
    },
  });
}
