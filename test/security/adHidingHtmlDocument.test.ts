import { describe, expect, it } from 'vitest';
import { accountCaptures } from '../helpers/markdownCaptures';
import { solidPage } from '../helpers/pageServer';
import { BLUE, decodeImage, GREEN, near } from '../helpers/screenshotHarness';

/**
 * Red team (round 7): docs/api.md says blockAds hides the elements the lists name "in every frame", but
 * adBlocking.ts hideInFrame returns at once for any frame whose address is not http(s): the customer's own `html`
 * document (loaded as a data: URL) keeps every ad element the lists name, and so does an about:srcdoc frame of a
 * page. Which rules apply is decided by the hostname alone (a data: document has none: the generic rules, as for a
 * loopback page), so such frames can be hidden the same way.
 */

const { shoot } = accountCaptures();

const AD = `<style>.slot { position: fixed; width: 200px; height: 150px; background: #00f }</style>`;
const SLOT = '<div id="ad_banner" class="slot" style="left:400px;top:0"></div>';

describe("blockAds on the customer's own html document", () => {
  it('hides the ad element the lists name', { timeout: 120_000 }, async () => {
    const response = await shoot({
      html: solidPage('#0f0', AD, SLOT),
      width: 800,
      height: 600,
      blockAds: true,
    });
    expect(response.status, response.body.toString().slice(0, 300)).toBe(200);
    const pixel = (await decodeImage(response.body)).pixel(500, 75);
    // Today: the blue ad is shown.
    expect(near(pixel, BLUE), 'the ad is shown').toBe(false);
    expect(near(pixel, GREEN)).toBe(true);
  });
});
