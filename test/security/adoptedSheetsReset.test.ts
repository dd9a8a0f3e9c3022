import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BLUE,
  decodeImage,
  near,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * Red team (round 7): a document has one list of adopted style sheets, whatever world adds to it, so a page that
 * assigns `document.adoptedStyleSheets` (here on every animation frame; frameworks do it once) took back the sheet
 * that `hideSelectors` and `css` were applied with, and the capture showed what they hid. They are now a style sheet
 * only the browser holds (DevTools' own, PageControl.addStyleSheet).
 */

const RESETS = `<!doctype html><html><body style="margin:0;background:#fff">
<div id="banner" style="width:300px;height:200px;background:#00f"></div>
<script>
  const reset = () => { document.adoptedStyleSheets = []; requestAnimationFrame(reset); };
  reset();
</script></body></html>`;

let harness: ScreenshotHarness;
let apiKey: string;

beforeAll(async () => {
  harness = await startScreenshotHarness();
  ({ apiKey } = await harness.newAccount());
}, 120_000);
afterAll(async () => {
  await harness?.close();
});

describe('a page that resets document.adoptedStyleSheets', () => {
  it.each([
    ['hideSelectors', { hideSelectors: ['#banner'] }],
    ['css', { css: '#banner { visibility: hidden !important }' }],
  ])('keeps what %s hid hidden', { timeout: 120_000 }, async (_, options) => {
    const response = await harness.shoot(apiKey, { html: RESETS, delay: 300, ...options });
    expect(response.status).toBe(200);
    const image = await decodeImage(response.body);
    expect(near(image.pixel(100, 100), BLUE)).toBe(false);
  });
});
