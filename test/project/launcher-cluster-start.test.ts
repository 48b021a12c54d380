/**
 * A local Redis Cluster whose start fails part way leaves nothing running: the nodes that did
 * start are stopped with the error (a full test run once left five of six nodes of a failed
 * start running, their ports and data with them).
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertPortFree } from '../../src/launcher/process.js';
import { startRedisCluster } from '../../src/launcher/redis-cluster.js';
import { freePortRange } from '../support/ports.js';
import { binDirs, tempDir } from '../support/servers.js';

describe('a local cluster start that fails', () => {
  it('stops the nodes it had started', async () => {
    const base = await freePortRange(6);
    // the second master's own port is taken: the first and the third start, the second cannot
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(base + 1, '127.0.0.1', resolve));
    const dir = tempDir('cluster-fail');
    try {
      await expect(
        startRedisCluster({
          basePort: base,
          shards: 3,
          replicas: 0,
          dir: join(dir.path, 'nodes'),
          binDir: binDirs().redis,
          persistence: 'none',
        }),
      ).rejects.toThrow(/already in use/);
      // a node still starting when the error was thrown would bind its port a moment later
      // the scenario: time for a late node to bind its port
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const freed = await Promise.all(
        [base, base + 2].map((port) =>
          assertPortFree(port).then(
            () => true,
            () => false,
          ),
        ),
      );
      expect(freed).toEqual([true, true]);
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
      dir.remove();
    }
  });
});
