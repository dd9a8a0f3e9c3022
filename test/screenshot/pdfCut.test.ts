import { PDFArray, PDFDict, PDFDocument, PDFName, PDFString } from 'pdf-lib';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { printPdf } from '../../shared/capture/pdfPrint';
import type { PdfOptions } from '../../shared/capture/renderer';
import { readPdf } from '../helpers/pdf';

/**
 * A long document cut from its one print (shared/capture/pdfCut.ts), on real Chromium: what the cut keeps of the
 * document (its information, language and the internal links that lead to kept pages), and that nothing only a
 * dropped page used stays in the file (red team, round 25: an incremental cut left page 101's image in it, 108 MB).
 */

const A4: PdfOptions = {
  paperFormat: 'A4',
  landscape: false,
  printBackground: true,
  margin: { top: '0', right: '0', bottom: '0', left: '0' },
};

let browser: Browser;
let page: Page;

beforeAll(async () => {
  browser = (await launchChromium()).browser;
  page = await browser.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** 150 sheets; sheet 1 links to sheet 50 (kept) and sheet 2 to sheet 120 (dropped); `extra` goes on sheet 101. */
function sheets(extra = ''): string {
  const sheet = (n: number) =>
    `<section id="s${n}" style="break-after:page"><p>Sheet ${n}</p>${n === 1 ? '<a href="#s50">on</a>' : ''}${
      n === 2 ? '<a href="#s120">past</a>' : ''
    }${n === 101 ? extra : ''}</section>`;
  return `<!doctype html><html lang="fr"><head><title>Long document</title></head><body>${Array.from(
    { length: 150 },
    (_, i) => sheet(i + 1),
  ).join('')}</body></html>`;
}

/** A canvas of opaque noise, which a PDF holds as an image of about 12 MB. */
const NOISE = `<canvas id="noise" width="2000" height="2000" style="width:100%"></canvas><script>
const g = document.getElementById('noise').getContext('2d'), band = g.createImageData(2000, 200);
for (let y = 0; y < 2000; y += 200) {
  for (let i = 0; i < band.data.length; i += 65536) crypto.getRandomValues(band.data.subarray(i, i + 65536));
  for (let i = 3; i < band.data.length; i += 4) band.data[i] = 255;
  g.putImageData(band, 0, y);
}
</script>`;

describe('a long document cut from its one print', () => {
  it('keeps 100 pages, the title, the language and the internal links that lead to kept pages', async () => {
    await page.setContent(sheets());
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(result.truncated).toBe(true);
    const read = await readPdf(result.image);
    expect(read.pageCount).toBe(100);
    expect(read.pages[0]?.text).toContain('Sheet 1');
    expect(read.pages.at(-1)?.text).toContain('Sheet 100');
    const cut = await PDFDocument.load(result.image, { updateMetadata: false });
    expect(cut.getTitle()).toBe('Long document');
    expect(cut.getCreator()).toBe('Chromium');
    expect(cut.catalog.lookup(PDFName.of('Lang'), PDFString).asString()).toBe('fr');
    const dests = cut.catalog.lookup(PDFName.of('Dests'), PDFDict);
    const toFifty = dests.lookup(PDFName.of('s50'), PDFArray).get(0);
    expect(cut.getPages().findIndex((kept) => kept.ref === toFifty)).toBe(49);
    expect(dests.get(PDFName.of('s120'))).toBeUndefined();
    // The dropped pages, and the tree the tagged structure would bring, are nowhere in the file, nor are places in
    // that tree.
    const text = result.image.toString('latin1');
    expect(text.match(/\/Type \/Page\b(?!s)/g)).toHaveLength(100);
    expect(text).not.toMatch(/StructTreeRoot|StructParent|MarkInfo/);
  }, 60_000);

  it('leaves out what only a dropped page used: its image weighs nothing on the cut', async () => {
    await page.setContent(sheets(NOISE));
    const whole = Buffer.from(await page.pdf({ format: 'a4', pageRanges: '1-101' }));
    expect(whole.length).toBeGreaterThan(10_000_000);
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(result.truncated).toBe(true);
    expect(result.image.length).toBeLessThan(1_000_000);
  }, 60_000);
});
