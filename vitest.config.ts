import { defineConfig } from 'vitest/config';

/** Integration tests that run on both topologies: one Redis, and a Redis Cluster. */
const CLUSTER_FILES = [
  'test/sale.test.ts',
  'test/sale-free-lock.test.ts',
  'test/orders.test.ts',
  'test/lock.test.ts',
  'test/records.test.ts',
  'test/http.test.ts',
  'test/shop-http.test.ts',
  'test/payments.test.ts',
  'test/lost-returns.test.ts',
  'test/payment-webhooks.test.ts',
  'test/admin-auth.test.ts',
  'test/admission.test.ts',
  'test/rate-allowance.test.ts',
  'test/rate-limit-fold.test.ts',
  'test/dashboard.test.ts',
  'test/catalogue.test.ts',
  'test/idempotency-records.test.ts',
  'test/idempotency-scope.test.ts',
  'test/fast-path.test.ts',
  'test/openapi.test.ts',
  'test/waiting-room.test.ts',
  'test/room-admitter.test.ts',
  'test/prices.test.ts',
  'test/ioredis-internals.test.ts',
  'test/cors.test.ts',
  'test/jwks.test.ts',
  'test/storefront.test.ts',
  'test/order-events.test.ts',
  'test/audit.test.ts',
  'test/webhooks.test.ts',
  'test/stripe-webhook.test.ts',
  'test/drop-controls.test.ts',
  'test/dashboard-drop.test.ts',
  'test/redis-memory.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // every answer an app made in a file is documented in /openapi.json
    setupFiles: ['test/support/answers-setup.ts'],
    // Real servers, real processes: generous but bounded.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.exclusive.test.ts'],
          // Two cores: two files at a time keeps timing-sensitive lock tests honest.
          maxWorkers: 2,
        },
      },
      {
        // The same sale, order, lock and HTTP tests on a local 3-master Redis Cluster (every key
        // of the product spread over shards by its hash tag), after the standalone run.
        extends: true,
        test: {
          name: 'cluster',
          include: CLUSTER_FILES,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // Files that load the machine on purpose (and measure latency under it), or kill, freeze
        // and reshard Redis nodes on timings (failover, slot moves), run alone, after the rest:
        // another file's traffic must not count against their bounds.
        extends: true,
        test: {
          name: 'exclusive',
          include: ['test/**/*.exclusive.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
