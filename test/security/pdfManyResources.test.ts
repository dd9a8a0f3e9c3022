import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 7): e7ae9fa reads 256 KiB of a page object to find its /MediaBox, which Skia writes after the
 * page's resources. A first page that draws 30,000 canvases (each its own image XObject, `/X<n> <obj> 0 R` in the
 * page's resources) pushes the media box past that window again: the json answer of a one-page A4 PDF gives 0 x 0.
 * Any fixed window is a bound a page can pass; the media box is better read from the dictionary's structure
 * (skip a nested /Resources dictionary) or from its own object when Skia writes one.
 */

let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  harness = await startScreenshotHarness();
  account = await harness.newAccount();
}, 120_000);
afterAll(async () => {
  await harness?.close();
});

const CANVASES = `<!doctype html><html><head><style>canvas{width:2px;height:2px;display:inline-block;vertical-align:top}
body{margin:0;line-height:0}</style></head><body><script>
for (let i = 0; i < 30000; i++) {
  const c = document.createElement('canvas');
  c.width = 1; c.height = 1;
  const g = c.getContext('2d');
  g.fillStyle = 'rgb(' + (i % 256) + ',' + ((i >> 8) % 256) + ',7)';
  g.fillRect(0, 0, 1, 1);
  document.body.append(c);
}
</script></body></html>`;

describe('a first page with tens of thousands of images', () => {
  it('is measured as A4', { timeout: 240_000 }, async () => {
    const json = await harness.shoot(account.apiKey, { html: CANVASES, format: 'pdf', response: 'json' });
    expect(json.status, json.body.toString().slice(0, 300)).toBe(200);
    const { width, height } = json.json() as { width: number; height: number };
    expect({ width, height }).toEqual({ width: 596, height: 842 });
  });
});
