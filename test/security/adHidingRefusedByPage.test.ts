import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import {
  BLUE,
  decodeImage,
  GREEN,
  near,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * Red team (round 5): bad797f moved `css` and `hideSelectors` into our isolated world because a page that redefines
 * Document.prototype.adoptedStyleSheets refused them, but left blockAds' element hiding (adBlocking.ts hideInFrame)
 * in the page's MAIN world, with the same `document.adoptedStyleSheets = [...]` and its failure swallowed. A page
 * that redefines the property (or querySelectorAll, which extractFeaturesFromDOM reads there) keeps every ad the
 * lists name on the customer's `blockAds: true` capture, silently.
 */

let harness: ScreenshotHarness;
let apiKey: string;
let site: PageServer;

const AD = `<style>.slot { position: fixed; width: 200px; height: 150px; background: #00f }</style>`;
const SLOT = '<div id="ad_banner" class="slot" style="left:400px;top:0"></div>';
const REFUSES = `<script>
  const refuse = () => { throw new Error('not for you'); };
  Object.defineProperty(Document.prototype, 'adoptedStyleSheets', { get: refuse, set: refuse });
</script>`;

beforeAll(async () => {
  site = await startPageServer({
    '/honest': solidPage('#0f0', AD, SLOT),
    '/refusing': solidPage('#0f0', AD, `${SLOT}${REFUSES}`),
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: site.hostPort });
  ({ apiKey } = await harness.newAccount());
}, 120_000);
afterAll(async () => {
  await harness?.close();
  await site?.close();
});

async function slotPixel(path: string) {
  const response = await harness.shoot(apiKey, {
    url: `${site.origin}${path}`,
    width: 800,
    height: 600,
    blockAds: true,
  });
  expect(response.status, response.body.toString().slice(0, 300)).toBe(200);
  return (await decodeImage(response.body)).pixel(500, 75);
}

describe('blockAds on a page that redefines adoptedStyleSheets', () => {
  it('hides the ad the lists name, as on an honest page', { timeout: 120_000 }, async () => {
    expect(near(await slotPixel('/honest'), GREEN)).toBe(true);
    const refusing = await slotPixel('/refusing');
    // Today: the blue ad is shown.
    expect(near(refusing, BLUE), 'the ad is shown').toBe(false);
    expect(near(refusing, GREEN)).toBe(true);
  });
});
