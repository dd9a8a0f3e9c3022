import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { METRIC } from '../../shared/metrics/names';
import { emitted, total } from '../helpers/emittedMetrics';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team 12a, on today's selector capture (shared/capture/elementCapture.ts): the element's box is measured once
 * in our isolated world (pageScripts.ts, elementBox) and refused only when it is not `width > 0 && height > 0`. A box
 * smaller than a pixel passes (a CSS `transform: scale(0.001)`, or `width: 0.3px`), and the clip handed to
 * page.screenshot then has no whole pixel: Chromium refuses the screenshot, which reaches the front as `500` "The
 * browser stopped during the capture" and counts in ScreenshotServerErrors, refunded and free. One line of CSS in any
 * page (or any site a customer captures with `selector`) pages the operators and rolls deployments back at will, the
 * class of test/security/selectorElementChanged.test.ts.
 *
 * What should hold: a sub-pixel element is the page's failure ("has no visible box") or an image of at least one
 * pixel, never one of ours. Fix: refuse a box whose clip rounds to no pixel at the capture's scale, or round the clip
 * outwards to at least 1 x 1.
 *
 * Fixed: shared/capture/elementCapture.ts refuses, as the page's, a box smaller than a pixel of the image either way.
 */

let harness: ScreenshotHarness;

beforeAll(async () => {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  harness = await startScreenshotHarness({
    POWERTOOLS_SERVICE_NAME: 'ScreenshotService-test',
    FREE_CREDITS: '1000',
    RATE_LIMIT_PER_HOUR: '1000',
  });
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await harness?.close();
});

const page = (style: string) =>
  `<!doctype html><html><body style="margin:0"><div id="t" style="background:#f00;${style}">t</div></body></html>`;

describe('a selector capture of an element smaller than a pixel', () => {
  it('is captured as usual at its normal size (control)', { timeout: 120_000 }, async () => {
    const { apiKey } = await harness.newAccount();
    const response = await harness.shoot(apiKey, {
      html: page('width:100px;height:100px'),
      width: 400,
      height: 320,
      selector: '#t',
    });
    expect(response.status).toBe(200);
  });

  it.each([
    ['scaled down by a transform', 'width:100px;height:100px;transform:scale(0.001)'],
    ['a third of a pixel wide and high', 'width:0.3px;height:0.3px;overflow:hidden'],
  ])('is never one of our faults: %s', { timeout: 120_000 }, async (_, style) => {
    const { apiKey } = await harness.newAccount();
    let answer = '';
    const documents = await emitted(async () => {
      const response = await harness.shoot(apiKey, {
        html: page(style),
        width: 400,
        height: 320,
        selector: '#t',
      });
      answer = `${response.status} ${response.body.toString('utf8').slice(0, 200)}`;
    });
    // Today: 500 "The browser stopped during the capture", counted here.
    expect(total(documents, METRIC.serverErrors), answer).toBe(0);
  });
});
