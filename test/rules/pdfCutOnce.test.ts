import { PDFDocument } from 'pdf-lib';
import type { Page } from 'puppeteer-core';
import { describe, expect, it } from 'vitest';
import { pdfPageCount } from '../../shared/capture/pdfPages';
import { MAX_CUT_BYTES, MAX_CUT_OBJECTS, printPdf } from '../../shared/capture/pdfPrint';
import type { PdfOptions } from '../../shared/capture/renderer';

/**
 * A document longer than 100 pages is printed once, with one page more, and cut from that print (it was printed a
 * second time at 100 pages, as long again). A page stands in for Chromium: its prints are documents of the length
 * each page range asks for, written by pdf-lib in the classic form Skia writes.
 */

const A4: PdfOptions = {
  paperFormat: 'A4',
  landscape: false,
  printBackground: true,
  margin: { top: '0', right: '0', bottom: '0', left: '0' },
};

/** `pages` empty pages, and an uncompressed stream of `padding` bytes beside them. */
async function documentOf(pages: number, padding = 0): Promise<Buffer> {
  const document = await PDFDocument.create();
  for (let i = 0; i < pages; i++) document.addPage([595, 842]);
  if (padding > 0) document.context.register(document.context.stream(new Uint8Array(padding)));
  return Buffer.from(await document.save({ useObjectStreams: false }));
}

function printing(spoil: (pdf: Buffer) => Buffer = (pdf) => pdf, padding = 0) {
  const asked: string[] = [];
  const page = {
    async createPDFStream(options: { pageRanges: string }) {
      asked.push(options.pageRanges);
      const [, last] = options.pageRanges.split('-').map(Number);
      const pdf = spoil(await documentOf(last ?? 1, padding));
      return new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(pdf);
          controller.close();
        },
      });
    },
  } as unknown as Page;
  return { page, asked };
}

describe('a document of more than 100 pages', () => {
  it('is printed once and cut to 100 pages from that print', async () => {
    const { page, asked } = printing();
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(asked).toEqual(['1-101']);
    expect(result.truncated).toBe(true);
    expect(pdfPageCount(result.image)).toBe(100);
  });

  it('is printed again at 100 pages when its print cannot be cut', async () => {
    // A trailer naming an object of the file as its encryption dictionary: pdf-lib refuses to load it, the page count still reads 101.
    const { page, asked } = printing((pdf) =>
      Buffer.from(pdf.toString('latin1').replace('trailer\n<<', 'trailer\n<<\n/Encrypt 1 0 R'), 'latin1'),
    );
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(asked).toEqual(['1-101', '1-100']);
    expect(result.truncated).toBe(true);
    expect(pdfPageCount(result.image)).toBe(100);
  });

  it('is printed again at 100 pages when its print has more objects than a cut is worth', async () => {
    const { page, asked } = printing((pdf) =>
      Buffer.from(pdf.toString('latin1').replace(/\/Size \d+/, `/Size ${MAX_CUT_OBJECTS + 1}`), 'latin1'),
    );
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(asked).toEqual(['1-101', '1-100']);
    expect(result.truncated).toBe(true);
  });

  it('is printed again at 100 pages when its print is larger than a cut is worth', async () => {
    const { page, asked } = printing(undefined, MAX_CUT_BYTES);
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(asked).toEqual(['1-101', '1-100']);
    expect(result.truncated).toBe(true);
  });
});
