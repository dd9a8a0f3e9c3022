import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 5): pdfPages.ts reads an object's dictionary only within its first 4,096 characters and gives up
 * when `endobj` is not there. Skia writes a page's /Resources (one /Xn entry per image it draws) before its
 * /MediaBox, so the first page of an honest gallery (a few hundred thumbnails) is never read: its json answer says
 * 0 x 0 instead of A4's 596 x 842 (the byte-searching reader before 6b15a19 read it).
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

/** A 2 x 2 PNG of one colour: each distinct one is an image object of its own in the PDF. */
const png = (index: number) =>
  sharp({
    create: { width: 2, height: 2, channels: 3, background: { r: index & 0xff, g: index >> 8, b: 7 } },
  })
    .png()
    .toBuffer();

describe('a one-page PDF whose first page shows 500 small images', () => {
  it('is measured as its paper size, A4', { timeout: 120_000 }, async () => {
    const pngs = await Promise.all(Array.from({ length: 500 }, (_, i) => png(i)));
    const images = pngs
      .map((image) => `<img width="4" height="4" src="data:image/png;base64,${image.toString('base64')}">`)
      .join('');
    const json = await harness.shoot(account.apiKey, {
      html: `<p>Gallery.</p>${images}`,
      format: 'pdf',
      response: 'json',
    });
    expect(json.status).toBe(200);
    const { width, height } = json.json() as { width: number; height: number };
    // Today: 0 x 0.
    expect({ width, height }).toEqual({ width: 596, height: 842 });
  });
});
