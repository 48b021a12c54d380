import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
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
        // Files that load the machine on purpose (and measure latency under it) run alone,
        // after the rest: another file's traffic must not count against their bounds.
        extends: true,
        test: {
          name: 'exclusive',
          include: ['test/**/*.exclusive.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
