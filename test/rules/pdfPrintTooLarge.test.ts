import type { Page } from 'puppeteer-core';
import { describe, expect, it } from 'vitest';
import { PDF_TOO_LARGE, printPdf } from '../../shared/capture/pdfPrint';
import type { PdfOptions } from '../../shared/capture/renderer';
import { MAX_ANSWER_BYTES } from '../../shared/capture/rendererProtocol';
import { CaptureFailedError } from '../../shared/errors';

/**
 * Red team (round 25): a document whose 101 pages (the one more printed to tell whether it is longer than 100)
 * outweighed what the front takes failed as too large, although the 100 pages answered would have fitted. A page
 * stands in for Chromium here: its prints are streams of the weight each page range would have.
 */

const A4: PdfOptions = {
  paperFormat: 'A4',
  landscape: false,
  printBackground: true,
  margin: { top: '0', right: '0', bottom: '0', left: '0' },
};

/** One MiB, handed out again and again: a stream of any weight that holds no more than that. */
const MIB = Buffer.alloc(1024 * 1024);

function printing(weightOf: (pageRanges: string) => number | 'small') {
  const asked: string[] = [];
  const page = {
    async createPDFStream(options: { pageRanges: string }) {
      asked.push(options.pageRanges);
      const weight = weightOf(options.pageRanges);
      let sent = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (weight === 'small' || sent >= weight) {
            if (weight === 'small') controller.enqueue(Buffer.from('%PDF-1.4\n%%EOF\n'));
            controller.close();
            return;
          }
          sent += MIB.length;
          controller.enqueue(MIB);
        },
      });
    },
  } as unknown as Page;
  return { page, asked };
}

describe('a PDF whose one page more outweighs what the front takes', () => {
  it('is printed again at 100 pages, and answered cut when those fit', async () => {
    const { page, asked } = printing((ranges) =>
      ranges === '1-101' ? MAX_ANSWER_BYTES + MIB.length : 'small',
    );
    const result = await printPdf(page, { url: 'https://example.com/' }, A4);
    expect(asked).toEqual(['1-101', '1-100']);
    expect(result.truncated).toBe(true);
  });

  it('fails as too large when the 100 pages do not fit either (a document that short weighs as much again)', async () => {
    const { page } = printing(() => MAX_ANSWER_BYTES + MIB.length);
    const failure = await printPdf(page, { url: 'https://example.com/' }, A4).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(CaptureFailedError);
    expect((failure as CaptureFailedError).reason).toBe(PDF_TOO_LARGE);
  });
});
