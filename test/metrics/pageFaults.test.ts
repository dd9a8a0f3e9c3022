import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { METRIC } from '../../shared/metrics/names';
import { PowertoolsServiceMetrics } from '../../shared/metrics/powertoolsMetrics';
import { emitted, total } from '../helpers/emittedMetrics';
import { type PageServer, solidPage, startPageServer, unusedPort } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

describe("a capture the customer's page made fail", () => {
  let harness: ScreenshotHarness;
  let pages: PageServer;
  let closedPort: number;

  beforeAll(async () => {
    // Read when the service's metrics are built.
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    [pages, closedPort] = await Promise.all([
      startPageServer({ '/page': solidPage('#00ff00') }),
      unusedPort(),
    ]);
    harness = await startScreenshotHarness({
      ALLOW_PRIVATE_HOSTS: `${pages.hostPort},127.0.0.1:${closedPort}`,
      POWERTOOLS_SERVICE_NAME: 'ScreenshotService-test',
    });
  }, 60_000);
  afterAll(async () => {
    vi.unstubAllEnvs();
    await harness?.close();
    await pages?.close();
  });

  it('is answered 500 and counted as a page failure, never as one of our faults', async () => {
    const { apiKey } = await harness.newAccount();
    let status = 0;
    const documents = await emitted(async () => {
      const response = await harness.shoot(apiKey, { url: `http://127.0.0.1:${closedPort}/` });
      status = response.status;
    });
    expect(status).toBe(500);
    expect(total(documents, METRIC.pageFailures)).toBe(1);
    expect(total(documents, METRIC.serverErrors)).toBe(0);
  }, 60_000);

  it('leaves a capture of a reachable page counted as neither', async () => {
    const { apiKey } = await harness.newAccount();
    const documents = await emitted(() => harness.shoot(apiKey, { url: `http://${pages.hostPort}/page` }));
    expect(total(documents, METRIC.requestsByStatus)).toBe(1);
    expect(total(documents, METRIC.pageFailures)).toBe(0);
    expect(total(documents, METRIC.serverErrors)).toBe(0);
  }, 60_000);
});

describe('our own failed capture', () => {
  beforeEach(() => vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false'));
  afterEach(() => vi.unstubAllEnvs());

  it('is counted as our fault and not as a page failure', async () => {
    const metrics = new PowertoolsServiceMetrics({ POWERTOOLS_SERVICE_NAME: 'ScreenshotService-test' });
    const documents = await emitted(async () => {
      metrics.captureFinished({
        status: 500,
        durationMs: 10,
        creditsCharged: 0,
        cacheHit: false,
        pageFault: false,
      });
      metrics.flush();
    });
    expect(total(documents, METRIC.serverErrors)).toBe(1);
    expect(total(documents, METRIC.pageFailures)).toBe(0);
  });
});
