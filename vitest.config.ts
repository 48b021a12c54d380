import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Real servers, real processes: generous but bounded.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: two files at a time keeps timing-sensitive lock tests honest.
    maxWorkers: 2,
  },
});
