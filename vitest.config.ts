import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Chromium and the embedded DynamoDB are real; give them room on a shared 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // Files share their worker process (about 12 minutes instead of 14 here): each test file closes what it started,
    // and a class-wide client mock is restored when its file ends (test/helpers/restoredAfterFile.ts).
    isolate: false,
    env: {
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT',
      // Business metrics are CloudWatch EMF lines on stdout; tests read them through InMemoryServiceMetrics.
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
  },
});
