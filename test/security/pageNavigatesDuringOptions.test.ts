import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { METRIC } from '../../shared/metrics/names';
import { emitted, total } from '../helpers/emittedMetrics';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 17): a page that keeps navigating itself once loaded (a reload loop, or `location` set by the
 * page or by the request's own `js`), captured with the options that act on the loaded page before it is held
 * (pageOptions.ts, decorateLoadedPage: `click`, `css`, `hideSelectors`; then `waitForSelector`). A document committed
 * while they ran made their DevTools calls fail in puppeteer's or Chromium's words ("Execution context was
 * destroyed", "Protocol error ..."), which were read as "The browser stopped during the capture" or "The page could
 * not be captured": the service's fault, counted in ScreenshotServerErrors (the 5xx alarms and rollbacks), at will.
 * Fixed: PageControl counts the documents the main frame commits after the capture's own, and marks the loaded
 * document in our isolated world (a `javascript:` URL replaces it with no navigation event: round 18); a failure
 * before the hold on a page that replaced it is the page's, while the browser is there (chromiumRenderer.ts).
 * Races: each case tries a few times.
 */

let pages: PageServer;
let harness: ScreenshotHarness;

beforeAll(async () => {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  pages = await startPageServer({
    // Loaded, then reloaded at once, again and again.
    // Red team (round 18): a `javascript:` URL whose string becomes the document, again and again: no navigation
    // event at all.
    '/js-url': solidPage(
      '#00ff00',
      "<script>onload = () => setTimeout(() => { location.href = 'javascript:' + JSON.stringify(document.documentElement.outerHTML); }, 0);</script>",
      '<p id="p">text</p><button id="b">b</button>',
    ),
    '/reloads': solidPage(
      '#00ff00',
      '<script>onload = () => setTimeout(() => location.reload(), 0);</script>',
      '<p id="p">text</p><button id="b">b</button>',
    ),
  });
  harness = await startScreenshotHarness(
    {
      POWERTOOLS_SERVICE_NAME: 'ScreenshotService-test',
      ALLOW_PRIVATE_HOSTS: pages.hostPort,
    },
    // A `waitForSelector` the reloads keep from being met runs out its budget (the page's failure): shorter here.
    { budgets: { navigationMs: 10_000, afterLoadMs: 4_000 } },
  );
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await harness?.close();
  await pages?.close();
});

/**
 * Captures `body` up to `tries` times (a race: each try is a chance), stopping at the first failure of ours, and
 * expects none in the metrics of the 5xx alarms.
 */
async function expectNoFaultOfOurs(body: Record<string, unknown>, tries: number) {
  const { apiKey } = await harness.newAccount();
  const answers: string[] = [];
  const documents = await emitted(async () => {
    for (let i = 0; i < tries; i++) {
      const response = await harness.shoot(apiKey, { width: 320, height: 320, ...body });
      const answer =
        response.status === 200
          ? '200'
          : `${response.status} ${response.body.toString('utf8').slice(0, 200)}`;
      answers.push(answer);
      if (/could not be captured|browser stopped/.test(answer)) break;
    }
  });
  expect(total(documents, METRIC.serverErrors), answers.join('\n')).toBe(0);
}

const BUTTON = '<!doctype html><html><body><button id="b">b</button>';

describe('a page that reloads itself once loaded, with options that act on the loaded page', () => {
  it.each([
    ['click', 12, { click: '#b' }],
    ['css', 12, { css: 'p { color: red }' }],
    ['hideSelectors', 12, { hideSelectors: ['#p'] }],
    // Some tries wait out the selector's budget (the page's own failure), so fewer.
    ['waitForSelector', 4, { waitForSelector: '#p' }],
  ])('never fails as one of our faults: %s', { timeout: 240_000 }, async (_, tries, options) => {
    await expectNoFaultOfOurs({ url: `${pages.origin}/reloads`, ...options }, tries);
  });
});

describe('a page that replaces its document with a javascript: URL once loaded, again and again', () => {
  it.each([
    ['click', 8, { click: '#b' }],
    ['css', 8, { css: 'p { color: red }' }],
    ['hideSelectors', 8, { hideSelectors: ['#p'] }],
  ])('never fails as one of our faults: %s', { timeout: 240_000 }, async (_, tries, options) => {
    await expectNoFaultOfOurs({ url: `${pages.origin}/js-url`, ...options }, tries);
  });
});

describe('an html document that goes to about:blank once loaded (no request at all), with click', () => {
  it('never fails as one of our faults', { timeout: 120_000 }, async () => {
    const html = `${BUTTON}<script>onload = () => setTimeout(() => { location.href = 'about:blank'; }, 0);</script></body></html>`;
    await expectNoFaultOfOurs({ html, click: '#b' }, 6);
  });
});

describe('a request whose own js sends the page to about:blank, with click (the customer alone decides)', () => {
  it('never fails as one of our faults', { timeout: 120_000 }, async () => {
    const js = "setTimeout(() => { location.href = 'about:blank'; }, 0)";
    await expectNoFaultOfOurs({ html: `${BUTTON}</body></html>`, js, click: '#b' }, 6);
  });
});
