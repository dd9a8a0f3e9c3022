import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 4): pdfPages.ts reads a printed PDF's page count and first page size with patterns it trusts no
 * string in the document can imitate at the start of a line. Skia embeds a page's JPEG images byte for byte
 * (DCTDecode), and a JPEG may carry any bytes in a comment segment: a page that shows one JPEG forges page objects.
 * A one-page document is then printed twice, answered `X-Screenshot-Truncated: true`, and its json answer gives the
 * forged first page's size (1 x 1) instead of A4's 596 x 842.
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

/** A small JPEG whose comment segment (COM) holds 150 lines that look like Skia's page objects. */
async function forgingJpeg(): Promise<Buffer> {
  const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#c33' } })
    .jpeg()
    .toBuffer();
  const forged = Buffer.from(
    '\n9 0 obj\n<</Type /Page\n/MediaBox [0 0 1 1]\n>>\nendobj\n'.repeat(150),
    'latin1',
  );
  const length = forged.length + 2;
  const comment = Buffer.concat([Buffer.from([0xff, 0xfe, length >> 8, length & 0xff]), forged]);
  return Buffer.concat([jpeg.subarray(0, 2), comment, jpeg.subarray(2)]);
}

describe('a one-page PDF showing a JPEG that holds page-like lines', () => {
  it('is answered whole, with its own page size', { timeout: 120_000 }, async () => {
    const image = (await forgingJpeg()).toString('base64');
    const html = `<p>One page.</p><img src="data:image/jpeg;base64,${image}" width="64" height="64">`;
    const pdf = await harness.shoot(account.apiKey, { html, format: 'pdf' });
    expect(pdf.status).toBe(200);
    const json = await harness.shoot(account.apiKey, { html, format: 'pdf', response: 'json' });
    expect(json.status).toBe(200);
    const { width, height } = json.json() as { width: number; height: number };
    // Today: truncated "true", 1 x 1.
    expect({ truncated: pdf.headers['X-Screenshot-Truncated'] ?? 'false', width, height }).toEqual({
      truncated: 'false',
      width: 596,
      height: 842,
    });
  });
});
