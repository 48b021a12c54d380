import { defineConfig } from 'vitest/config';

/** Integration tests that run on both topologies: one Redis, and a Redis Cluster. */
const CLUSTER_FILES = [
  'test/inventory/sale.test.ts',
  'test/inventory/sale-free-lock.test.ts',
  'test/orders/orders.test.ts',
  'test/lock/lock.test.ts',
  'test/inventory/records.test.ts',
  'test/http/http.test.ts',
  'test/http/shop-http.test.ts',
  'test/orders/payments.test.ts',
  'test/inventory/lost-returns.test.ts',
  'test/orders/payment-notices.test.ts',
  'test/http/admin-auth.test.ts',
  'test/services/admission.test.ts',
  'test/services/rate-allowance.test.ts',
  'test/services/rate-limit-fold.test.ts',
  'test/services/dashboard.test.ts',
  'test/inventory/catalogue.test.ts',
  'test/inventory/idempotency-records.test.ts',
  'test/services/idempotency-scope.test.ts',
  'test/http/fast-path.test.ts',
  'test/http/openapi.test.ts',
  'test/services/waiting-room.test.ts',
  'test/orders/prices.test.ts',
  'test/redis/ioredis-internals.test.ts',
  'test/http/cors.test.ts',
  'test/http/jwks.test.ts',
  'test/services/storefront.test.ts',
  'test/events/order-events.test.ts',
  'test/services/audit.test.ts',
  'test/events/webhooks.test.ts',
  'test/orders/stripe-notices.test.ts',
  'test/services/drop-controls.test.ts',
  'test/services/dashboard-drop.test.ts',
  'test/inventory/redis-memory.test.ts',
  'test/orders/refunds-disputes.test.ts',
  'test/orders/order-codec.test.ts',
  'test/services/room-admitter.test.ts',
  'test/events/endpoint-isolation.test.ts',
  'test/events/endpoint-recovery.test.ts',
  'test/events/event-retention.test.ts',
  'test/events/product-events.test.ts',
  'test/services/queue-page.test.ts',
  'test/events/room-events.test.ts',
  'test/services/draw.test.ts',
  'test/fairness/door.test.ts',
  'test/fairness/report-event.test.ts',
  'test/fairness/refused-purchases.test.ts',
  'test/fairness/product-challenge.test.ts',
  'test/services/room-sold-out.test.ts',
  'test/services/storefront-draw.test.ts',
  'test/fairness/door-page.test.ts',
  'test/services/dashboard-panels.test.ts',
  'test/inventory/draw-freeze.test.ts',
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
