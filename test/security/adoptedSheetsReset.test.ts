import { describe, expect, it } from 'vitest';
import { accountCaptures } from '../helpers/markdownCaptures';
import { BLUE, decodeImage, near } from '../helpers/screenshotHarness';

/**
 * Red team (round 7): a document has one list of adopted style sheets, whatever world adds to it, so a page that
 * assigns `document.adoptedStyleSheets` (here on every animation frame; frameworks do it once) took back the sheet
 * that `hideSelectors`, `css` and `blockAds`' hiding were applied with, and the capture showed what they hid. They
 * are now style sheets only the browser holds (DevTools' own, PageControl.addStyleSheet).
 */

const RESETS = `<!doctype html><html><body style="margin:0;background:#fff">
<div id="ad_banner" style="width:300px;height:200px;background:#00f"></div>
<script>
  const reset = () => { document.adoptedStyleSheets = []; requestAnimationFrame(reset); };
  reset();
</script></body></html>`;

const { shoot } = accountCaptures();

describe('a page that resets document.adoptedStyleSheets', () => {
  it.each([
    ['hideSelectors', { hideSelectors: ['#ad_banner'] }],
    ['css', { css: '#ad_banner { visibility: hidden !important }' }],
    // The lists' generic rules hide #ad_banner.
    ['blockAds', { blockAds: true }],
  ])('keeps what %s hid hidden', { timeout: 120_000 }, async (_, options) => {
    const response = await shoot({ html: RESETS, delay: 300, ...options });
    expect(response.status).toBe(200);
    const image = await decodeImage(response.body);
    expect(near(image.pixel(100, 100), BLUE)).toBe(false);
  });
});
