import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDF_TOO_LARGE } from '../../shared/capture/pdfPrint';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { NAVIGATION_BUDGET_MS } from '../../shared/timing';
import { type Canary, startCanary } from '../helpers/egressFixtures';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { readPdf } from '../helpers/pdf';
import {
  decodeImage,
  GREEN,
  near,
  RED,
  type ScreenshotHarness,
  type StreamedResponse,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * The outputs through the real handler and real Chromium, on pages served on loopback: PDFs read back with pdf-lib
 * and pdf.js, AVIF decoded with sharp, html documents and their subresources, transparent backgrounds and print
 * media, and a PDF's delivery (cache, json, signed links, 304). The rules are in test/rules/outputRules.test.ts.
 */

let site: PageServer;
let canary: Canary;
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

/** A document of `count` pages on red, each page saying which it is. */
function pages(count: number): string {
  const sheets = Array.from(
    { length: count },
    (_, i) => `<p style="break-after:page;margin:0">Sheet ${i + 1}</p>`,
  ).join('');
  return solidPage('rgb(255, 0, 0)', '', sheets);
}

/**
 * `count` sheets, each a canvas of `side` px square of opaque noise, which a PDF holds uncompressed: seven of 4,000
 * px weigh about 336 MB printed.
 */
function noiseSheets(count: number, side: number): string {
  return `<!doctype html><style>html,body{margin:0}canvas{display:block;break-after:page;width:100%}</style><script>
for (let p = 0; p < ${count}; p++) {
  const c = document.createElement('canvas'), g = c.getContext('2d');
  c.width = c.height = ${side};
  const band = g.createImageData(${side}, 256);
  for (let y = 0; y < ${side}; y += 256) {
    for (let i = 0; i < band.data.length; i += 65536) crypto.getRandomValues(band.data.subarray(i, i + 65536));
    for (let i = 3; i < band.data.length; i += 4) band.data[i] = 255;
    g.putImageData(band, 0, y);
  }
  document.documentElement.append(c);
}
</script>`;
}

/** Red on screen, green in print. */
const MEDIA_PAGE = solidPage(
  '#f00',
  '<style>@media print { html, body { background: #0f0 !important } }</style>',
);

/** No background of its own; a green square in the top left corner. */
const CLEAR_PAGE =
  '<!doctype html><html><head><style>html,body{margin:0}</style></head><body><div style="width:40px;height:40px;background:#0f0"></div></body></html>';

/** An image file on this machine, which a page must never load. */
const LOCAL_IMAGE = fileURLToPath(new URL('../../web/public/favicon.svg', import.meta.url));

beforeAll(async () => {
  [site, canary] = await Promise.all([
    startPageServer({
      '/doc': pages(3),
      '/long': pages(130),
      '/hundred': pages(100),
      '/noise-sheets': noiseSheets(7, 4000),
      '/media': MEDIA_PAGE,
      '/clear': CLEAR_PAGE,
      '/red': solidPage('#f00'),
      '/text': solidPage(
        '#fff',
        '',
        Array.from({ length: 30 }, (_, i) => `<p style="color:hsl(${i * 12},70%,40%)">line ${i}</p>`).join(
          '',
        ),
      ),
      '/green.css': (_, res) => {
        res.writeHead(200, { 'Content-Type': 'text/css' }).end('html, body { background: #0f0 !important }');
      },
      '/dot.svg': (_, res) => {
        res
          .writeHead(200, { 'Content-Type': 'image/svg+xml' })
          .end(
            '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>',
          );
      },
    }),
    startCanary(),
  ]);
  harness = await startScreenshotHarness(
    { ALLOW_PRIVATE_HOSTS: site.hostPort, RATE_LIMIT_PER_HOUR: '1000', FREE_CREDITS: '1000' },
    // Printing the heaviest document (noise sheets past 256 MiB) took over the 30 s after load on a loaded machine,
    // and the test is about where reading stops, not how fast: more time after load, within the function's 90 s.
    { budgets: { navigationMs: NAVIGATION_BUDGET_MS, afterLoadMs: 55_000 } },
  );
  account = await harness.newAccount();
});

afterAll(async () => {
  await harness?.close();
  await Promise.all([site?.close(), canary?.close()]);
});

const url = (path: string) => `${site.origin}${path}`;
const balance = () => harness.credits.balance(account.accountId);

/** The answer with header names in lower case, as HTTP clients see them. */
function lowerCased(response: StreamedResponse): StreamedResponse {
  const headers = Object.fromEntries(
    Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), value]),
  );
  return { ...response, headers };
}

async function shoot(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return lowerCased(await harness.shoot(account.apiKey, body, { headers }));
}

/** A 200 with the bytes, or the failure's body in the message. */
async function captured(body: Record<string, unknown>) {
  const response = await shoot(body);
  if (response.status !== 200) throw new Error(`${response.status}: ${response.body.toString('utf8')}`);
  return response;
}

/** A signed link's query for the account's key. */
function signed(options: Record<string, string>) {
  const query = { ...options, keyId: account.keyId };
  return { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
}

const isRed = ([r, g, b]: number[]) => r === 255 && g === 0 && b === 0;
const isGreen = ([r, g, b]: number[]) => r === 0 && g === 255 && b === 0;

/** [r, g, b, alpha] at (x, y). */
async function rgba(bytes: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const offset = (y * info.width + x) * info.channels;
  return [...data.subarray(offset, offset + 4)];
}

describe('PDF', () => {
  it('prints the pages on the paper asked for, landscape, with their background and numbered footers', async () => {
    const before = await balance();
    const response = await captured({
      url: url('/doc'),
      format: 'pdf',
      pdfPaperFormat: 'Letter',
      pdfLandscape: true,
      pdfMargin: { bottom: '20mm' },
      pdfFooterTemplate:
        '<div style="font-size:10px;width:100%;text-align:center">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>',
    });
    expect(response.headers['content-type']).toBe('application/pdf');
    expect(response.headers['x-credits-charged']).toBe('2');
    expect(response.headers['x-screenshot-truncated']).toBeUndefined();
    expect(await balance()).toBe(before - 2);

    const pdf = await readPdf(response.body);
    expect(pdf.pageCount).toBe(3);
    pdf.pages.forEach((page, i) => {
      // Letter is 8.5 x 11 in: 792 x 612 points in landscape.
      expect([Math.round(page.width), Math.round(page.height)]).toEqual([792, 612]);
      expect(page.text).toContain(`Sheet ${i + 1}`);
      expect(page.text).toContain(`Page ${i + 1} of 3`);
      expect(page.fills.some(isRed)).toBe(true);
    });
  });

  it('prints A4 portrait by default, and no background when pdfPrintBackground is false', async () => {
    const response = await captured({ url: url('/doc'), format: 'pdf', pdfPrintBackground: false });
    const pdf = await readPdf(response.body);
    expect(pdf.pageCount).toBe(3);
    const [first] = pdf.pages;
    // A4 is 210 x 297 mm: 595 x 842 points; Chromium rounds the sheet to whole CSS pixels.
    expect(Math.abs((first?.width ?? 0) - 595.3)).toBeLessThan(1);
    expect(Math.abs((first?.height ?? 0) - 841.9)).toBeLessThan(1);
    expect(pdf.pages.some((page) => page.fills.some(isRed))).toBe(false);
    expect(first?.text).not.toContain('Page');
  });

  it('prints only the pages of pdfPageRanges', async () => {
    const pdf = await readPdf(
      (await captured({ url: url('/doc'), format: 'pdf', pdfPageRanges: '3, 1' })).body,
    );
    expect(pdf.pages.map((page) => page.text)).toEqual(['Sheet 1', 'Sheet 3']);
  });

  it('cuts a longer document at 100 pages and says so', async () => {
    const response = await captured({ url: url('/long'), format: 'pdf' });
    expect(response.headers['x-screenshot-truncated']).toBe('true');
    const pdf = await readPdf(response.body);
    expect(pdf.pageCount).toBe(100);
    expect(pdf.pages.at(-1)?.text).toBe('Sheet 100');
    // As JSON too, where there is no image answer to carry the header (red team, round 24).
    const linked = (await captured({ url: url('/long'), format: 'pdf', response: 'json' })).json();
    expect(linked.truncated).toBe(true);
    expect((await captured({ url: url('/doc'), format: 'pdf', response: 'json' })).json().truncated).toBe(
      false,
    );
  });

  // A print that comes back with 100 pages was not cut: one page more than may be answered is asked for.
  it.each([
    ['a document of 100 pages', '/hundred', undefined, 'Sheet 100'],
    ['a selection of 100 pages', '/long', '1-5, 31-125', 'Sheet 125'],
    ['a selection whose 101st page is past the end', '/long', '1-100, 131', 'Sheet 100'],
  ])('does not say %s was cut', async (_, path, pdfPageRanges, last) => {
    const response = await captured({ url: url(path), format: 'pdf', pdfPageRanges });
    expect(response.headers['x-screenshot-truncated']).toBeUndefined();
    const pdf = await readPdf(response.body);
    expect(pdf.pageCount).toBe(100);
    expect(pdf.pages.at(-1)?.text).toBe(last);
  });

  it('says a selection was cut when its 101st page is in the document', async () => {
    const response = await captured({ url: url('/long'), format: 'pdf', pdfPageRanges: '1-5, 30-200' });
    expect(response.headers['x-screenshot-truncated']).toBe('true');
    const pdf = await readPdf(response.body);
    expect(pdf.pageCount).toBe(100);
    expect(pdf.pages.at(-1)?.text).toBe('Sheet 124');
  });

  it("stops reading a document heavier than the front takes as soon as it passes that: the page's failure, free", async () => {
    const before = await balance();
    const { pid } = await harness.renderer.processInfo();
    const response = await shoot({ url: url('/noise-sheets'), format: 'pdf' });
    expect(response.status).toBe(500);
    expect(response.json().message).toBe(PDF_TOO_LARGE);
    expect(await balance()).toBe(before);
    expect((await harness.renderer.processInfo()).pid).toBe(pid);
  }, 120_000);

  it('answers 500 when pdfPageRanges selects no page, charging nothing', async () => {
    const before = await balance();
    const response = await shoot({ url: url('/doc'), format: 'pdf', pdfPageRanges: '7-9' });
    expect(response.status).toBe(500);
    expect(response.json().message).toBe('pdfPageRanges selects no page of the document');
    expect(await balance()).toBe(before);
  });

  it('refuses margins that leave no room on the paper with 400 naming pdfMargin, charging nothing', async () => {
    const before = await balance();
    const response = await shoot({
      url: url('/doc'),
      format: 'pdf',
      pdfPaperFormat: 'A5',
      pdfMargin: { left: '75mm', right: '75mm' },
    });
    expect(response.status, response.body.toString('utf8')).toBe(400);
    expect(response.json().details).toEqual([expect.objectContaining({ path: ['pdfMargin'] })]);
    expect(await balance()).toBe(before);
  });

  it('loads nothing for header and footer templates, even from an allowed host', async () => {
    const template = (name: string) =>
      `<div style="font-size:8px;background:url(${url(`/tpl-${name}-bg`)})"><img src="${url(`/tpl-${name}-img`)}">` +
      `<iframe src="${url(`/tpl-${name}-frame`)}"></iframe><script>fetch('${url(`/tpl-${name}-fetch`)}')</script>` +
      '<span class="title"></span></div>';
    const response = await captured({
      url: url('/doc'),
      format: 'pdf',
      pdfMargin: { top: '15mm', bottom: '15mm' },
      pdfHeaderTemplate: template('header'),
      pdfFooterTemplate: template('footer'),
    });
    expect((await readPdf(response.body)).pageCount).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(site.hits.filter((hit) => hit.startsWith('/tpl-'))).toEqual([]);
  });

  // Red team (round 24): Chromium takes an empty template for its own default: the date, the title, the page's
  // whole address (a token in its query too) and the page numbers, on every page.
  it('prints nothing for an empty header or footer template', async () => {
    const response = await captured({
      url: url('/doc?token=secret'),
      format: 'pdf',
      pdfMargin: { top: '15mm', bottom: '15mm' },
      pdfHeaderTemplate: '',
      pdfFooterTemplate: '',
    });
    const pdf = await readPdf(response.body);
    expect(pdf.pages.map((page) => page.text)).toEqual(['Sheet 1', 'Sheet 2', 'Sheet 3']);
  });

  /**
   * Red team (round 22): Chromium fills `url` with a document's address, for `html` its whole text as a `data:` URL,
   * laid out in a time that grows with its square: a 100 KB document of three pages failed after 30 s ("its scripts
   * kept the browser busy", though it had none), and a shorter one printed its base64 in every footer.
   */
  it('prints a document given as html with `url` in its footer, which shows no address', async () => {
    const sheets = [1, 2, 3].map((n) => `<div style="break-after:page">Sheet ${n}</div>`).join('');
    const html = `<!doctype html>${sheets}<!--${'x'.repeat(100_000)}-->`;
    const response = await captured({
      html,
      format: 'pdf',
      pdfMargin: { bottom: '15mm' },
      pdfFooterTemplate:
        '<div style="font-size:8px">Page <span class="pageNumber"></span> of <span class="totalPages"></span> <span class="url"></span></div>',
    });
    const pdf = await readPdf(response.body);
    expect(pdf.pages.map((page) => page.text)).toEqual([1, 2, 3].map((n) => `Sheet ${n} Page ${n} of 3`));
  }, 60_000);

  it('is sent with nosniff and a sandbox policy, so a browser opening it runs nothing with our origin', async () => {
    const response = await captured({ url: url('/doc'), format: 'pdf' });
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['content-security-policy']).toBe('sandbox');
  });
});

describe('PDF delivery', () => {
  it('is cached: the second identical request is a free hit with the same bytes', async () => {
    const body = { url: url('/doc'), format: 'pdf', cache: true, pdfLandscape: true };
    const miss = await captured(body);
    expect(miss.headers['x-cache']).toBe('MISS');
    const before = await balance();
    const hit = await captured(body);
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.headers['content-type']).toBe('application/pdf');
    expect(hit.headers['content-security-policy']).toBe('sandbox');
    expect(hit.body.equals(miss.body)).toBe(true);
    expect(await balance()).toBe(before);
  });

  it('answers response json with a link to the stored PDF and its first page size in points', async () => {
    const response = await captured({ url: url('/doc'), format: 'pdf', response: 'json' });
    const link = response.json();
    expect(link).toMatchObject({
      contentType: 'application/pdf',
      width: 596,
      height: 842,
      bytes: expect.any(Number),
      creditsCharged: 2,
    });
    const stored = Buffer.from(await (await fetch(String(link.url))).arrayBuffer());
    expect(stored.length).toBe(link.bytes);
    expect(`"${createHash('md5').update(stored).digest('hex')}"`).toBe(link.etag);
    expect((await readPdf(stored)).pageCount).toBe(3);
  });

  it('is served by a signed link, then answered 304 for its ETag', async () => {
    const query = signed({ url: url('/doc'), format: 'pdf', pdfPaperFormat: 'A5' });
    const first = lowerCased(await harness.open(query));
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/pdf');
    expect(first.headers['content-security-policy']).toBe('sandbox');
    const pdf = await readPdf(first.body);
    // A5 is 148 x 210 mm.
    expect(Math.round(pdf.pages[0]?.width ?? 0)).toBe(420);
    const again = lowerCased(await harness.open(query, { 'If-None-Match': String(first.headers.etag) }));
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it('refuses html in a signed link', async () => {
    const response = lowerCased(await harness.open(signed({ html: '<p>x</p>' })));
    expect(response.status).toBe(400);
    expect(response.json().details?.map((detail) => detail.path)).toEqual([['html']]);
  });
});

describe('media type', () => {
  it('lays an image out for the screen by default, and applies print CSS with mediaType print', async () => {
    const screen = await decodeImage((await captured({ url: url('/media') })).body);
    expect(screen.pixel(10, 10)).toEqual(RED);
    const print = await decodeImage((await captured({ url: url('/media'), mediaType: 'print' })).body);
    expect(print.pixel(10, 10)).toEqual(GREEN);
  });

  it('prints a PDF with print CSS by default, and with the screen CSS when asked', async () => {
    const print = await readPdf((await captured({ url: url('/media'), format: 'pdf' })).body);
    expect(print.pages[0]?.fills.some(isGreen)).toBe(true);
    expect(print.pages[0]?.fills.some(isRed)).toBe(false);
    const screen = await readPdf(
      (await captured({ url: url('/media'), format: 'pdf', mediaType: 'screen' })).body,
    );
    expect(screen.pages[0]?.fills.some(isRed)).toBe(true);
  });
});

describe('AVIF', () => {
  it('is an AVIF of exactly the requested size, in the colours of the page', async () => {
    const response = await captured({ url: url('/red'), format: 'avif', width: 401, height: 333 });
    expect(response.headers['content-type']).toBe('image/avif');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    const image = await decodeImage(response.body);
    expect(image).toMatchObject({ format: 'heif', width: 401, height: 333 });
    expect(near(image.pixel(200, 150), RED)).toBe(true);
  });

  it('honours quality: a lower quality gives other, smaller bytes', async () => {
    const high = await captured({ url: url('/text'), format: 'avif', quality: 95 });
    const low = await captured({ url: url('/text'), format: 'avif', quality: 20 });
    expect(low.body.equals(high.body)).toBe(false);
    expect(low.body.length).toBeLessThan(high.body.length);
  });

  it('keeps the height caps of png on a full page', async () => {
    const response = await captured({ url: url('/text'), format: 'avif', fullPage: true, width: 320 });
    const image = await decodeImage(response.body);
    expect(image.width).toBe(320);
    expect(image.height).toBeGreaterThan(320);
  });
});

describe('omitBackground', () => {
  it.each(['png', 'webp', 'avif'])(
    'leaves %s transparent where the page sets no background',
    async (format) => {
      const response = await captured({ url: url('/clear'), format, omitBackground: true });
      const [, , , clearAlpha] = await rgba(response.body, 200, 200);
      const square = await rgba(response.body, 10, 10);
      expect(clearAlpha).toBe(0);
      expect(square[3]).toBe(255);
      expect(near(square.slice(0, 3) as [number, number, number], GREEN)).toBe(true);
    },
  );

  it('keeps the white default without it', async () => {
    const response = await captured({ url: url('/clear') });
    expect(await rgba(response.body, 200, 200)).toEqual([255, 255, 255, 255]);
  });
});

describe('html in', () => {
  it('renders the document with its subresources from an allowed host', async () => {
    const html = `<!doctype html><link rel="stylesheet" href="${url('/green.css')}"><body style="background:#f00">`;
    const response = await captured({ html, width: 400, height: 320 });
    expect((await decodeImage(response.body)).pixel(200, 150)).toEqual(GREEN);
    expect(site.hits).toContain('/green.css');
  });

  it('gives the document an opaque origin of its own: no storage, no cookies', async () => {
    const html = `<!doctype html><html style="background:#f00"><script>
      const refused = (use) => { try { use(); return false } catch { return true } };
      const opaque = self.origin === 'null' && refused(() => localStorage.length) && refused(() => document.cookie);
      document.documentElement.style.background = opaque ? '#0f0' : '#00f';
    </script></html>`;
    const image = await decodeImage((await captured({ html, width: 320, height: 320 })).body);
    expect(image.pixel(100, 100)).toEqual(GREEN);
  });

  it('never reaches a private address the egress rules refuse', async () => {
    const target = `${canary.origin}/from-html`;
    const html = `<!doctype html><body style="background:#0f0"><img src="${target}.png">
      <iframe src="${target}-frame"></iframe><script>fetch('${target}-fetch').catch(() => {})</script>`;
    const response = await captured({ html, delay: 300 });
    expect((await decodeImage(response.body)).pixel(5, 5)).toEqual(GREEN);
    expect(canary.connections).toBe(0);
  });

  it('does not load file: addresses, while images of an allowed host load', async () => {
    const paint = (id: string, green: boolean) =>
      `document.getElementById('${id}').style.background='${green ? '#0f0' : '#f00'}'`;
    const html = `<!doctype html><body style="margin:0">
      <div id="file" style="height:50px;background:#00f"></div><div id="web" style="height:50px;background:#00f"></div>
      <img src="file://${LOCAL_IMAGE}" onload="${paint('file', false)}" onerror="${paint('file', true)}">
      <img src="${url('/dot.svg')}" onload="${paint('web', true)}" onerror="${paint('web', false)}">`;
    const image = await decodeImage((await captured({ html, width: 320, height: 320, delay: 200 })).body);
    expect(image.pixel(100, 25)).toEqual(GREEN);
    expect(image.pixel(100, 75)).toEqual(GREEN);
  });

  it('caches by the document: another document is another capture', async () => {
    const first = await captured({ html: solidPage('#f00'), cache: true });
    const second = await captured({ html: solidPage('#0f0'), cache: true });
    const again = await captured({ html: solidPage('#f00'), cache: true });
    expect([first, second, again].map((r) => r.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT']);
    expect((await decodeImage(second.body)).pixel(5, 5)).toEqual(GREEN);
  });

  it('takes a document near 1 MiB', async () => {
    const filler = `<!--${'x'.repeat(1000 * 1024)}-->`;
    const response = await captured({ html: solidPage('#0f0', filler), width: 320, height: 320 });
    expect((await decodeImage(response.body)).pixel(5, 5)).toEqual(GREEN);
  });
});
