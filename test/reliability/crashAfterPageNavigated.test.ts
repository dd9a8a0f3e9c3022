import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { METRIC } from '../../shared/metrics/names';
import { onlyBrowserPid } from '../helpers/chromiumProcesses';
import { emitted, total } from '../helpers/emittedMetrics';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 18): round 17's fix took every failure before the hold, on a page that had navigated itself, for
 * the page's (DOCUMENT_REPLACED). A plain client-side redirect during load (`location.replace`, common on honest
 * sites), or a navigation that never commits (a link answered 204), was enough: when the browser process then died
 * under the capture (ours: an OOM kill, a crash), the failure no longer counted in ScreenshotServerErrors (the 5xx
 * alarms), a job of such a page was not retried, and nothing was logged at error. Fixed: only a committed document
 * counts, and never once the browser or the page's session is gone (chromiumRenderer.ts, asCaptureFailure).
 */

let pages: PageServer;
let harness: ScreenshotHarness;

beforeAll(async () => {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  pages = await startPageServer({
    '/plain': solidPage('#00ff00', '', '<p>plain</p>'),
    // A client-side redirect while loading: the capture's own document is /redirects, the page shows /landing.
    '/redirects': solidPage('#00ff00', "<script>location.replace('/landing')</script>"),
    '/landing': solidPage('#00ff00', '', '<p>landing</p>'),
    // A navigation that never commits: the document is never replaced at all.
    '/starts-navigation': solidPage(
      '#00ff00',
      "<script>onload = () => { location.href = '/no-content'; };</script>",
      '<p>stays</p>',
    ),
    '/no-content': (_, res) => {
      res.writeHead(204);
      res.end();
    },
  });
  harness = await startScreenshotHarness(
    { POWERTOOLS_SERVICE_NAME: 'ScreenshotService-test', ALLOW_PRIVATE_HOSTS: pages.hostPort },
    { budgets: { navigationMs: 10_000, afterLoadMs: 15_000 } },
  );
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await harness?.close();
  await pages?.close();
});

const hitsOf = (path: string) => pages.hits.filter((hit) => hit === path).length;

/**
 * Captures `path` waiting for a selector that never shows (before the hold), and kills the browser process once the
 * page server has served `shownPath` and the page had a moment to settle.
 */
async function killBrowserDuringWait(path: string, shownPath: string) {
  const { apiKey } = await harness.newAccount();
  // A warm browser first.
  expect(
    (await harness.shoot(apiKey, { url: `${pages.origin}/plain`, width: 320, height: 320 })).status,
  ).toBe(200);
  const pid = await onlyBrowserPid();
  const seen = hitsOf(shownPath);
  let message = '';
  const documents = await emitted(async () => {
    const inFlight = harness.shoot(apiKey, {
      url: `${pages.origin}${path}`,
      width: 320,
      height: 320,
      waitForSelector: '#never-there',
    });
    while (hitsOf(shownPath) <= seen) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    process.kill(pid, 'SIGKILL');
    const response = await inFlight;
    message = `${response.status} ${response.body.toString('utf8')}`;
  });
  return { message, serverErrors: total(documents, METRIC.serverErrors) };
}

/** A fault of ours: one of our two words for it, and counted in the 5xx alarms' metric. */
function expectOurs(message: string, serverErrors: number) {
  expect(message).toMatch(/browser stopped|could not be captured/i);
  expect(serverErrors).toBe(1);
}

describe('the browser killed under a capture waiting for its selector (a fault of ours)', () => {
  it('baseline: a page that never navigated itself fails as ours', { timeout: 120_000 }, async () => {
    const { message, serverErrors } = await killBrowserDuringWait('/plain', '/plain');
    expectOurs(message, serverErrors);
  });

  it('a page that redirected itself while loading still fails as ours', { timeout: 120_000 }, async () => {
    const { message, serverErrors } = await killBrowserDuringWait('/redirects', '/landing');
    expectOurs(message, serverErrors);
  });

  it('a page that only started a navigation (204, never committed) still fails as ours', {
    timeout: 120_000,
  }, async () => {
    const { message, serverErrors } = await killBrowserDuringWait('/starts-navigation', '/no-content');
    expectOurs(message, serverErrors);
  });
});
