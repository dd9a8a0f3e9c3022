import type { Page } from 'puppeteer-core';
import { CaptureFailedError } from '../errors';
import { logger } from '../logger';
import { firstPages, pdfObjectCount, pdfPageCount } from './pdfPages';
import {
  CAPTURE_CONTENT_TYPES,
  type CaptureResult,
  type CaptureSpec,
  MAX_PDF_PAGES,
  type PdfOptions,
} from './renderer';
import { MAX_ANSWER_BYTES, tooLargeToDeliver } from './rendererProtocol';

/** A printed document heavier than the front takes: the page's failure. */
export const PDF_TOO_LARGE = tooLargeToDeliver('PDF');

/** Puppeteer's default templates show the date and title; a template the caller did not give shows nothing. */
const EMPTY_TEMPLATE = '<span></span>';

/**
 * Put before the templates of a document given as `html`, whose address is its whole text as a `data:` URL: Chromium
 * fills `url` elements with it, and lays that text out in a time that grows with the square of its length (red team,
 * round 22: a 200 KB invoice with `url` in its footer failed after 30 s, and a shorter one showed its base64).
 */
const NO_ADDRESS = '<style>.url{display:none!important}</style>';

/**
 * Prints the page with Chromium's own PDF engine, at most MAX_PDF_PAGES pages. Chromium cannot say how many pages a
 * document has before printing it, so one page more is printed than may be answered; a document that has it is cut
 * at the limit and reported truncated.
 *
 * Header and footer templates are rendered by Chromium in a document of their own that loads nothing: images, frames,
 * scripts and CSS `url()` stay unloaded, and a template that links a style sheet or a font makes Chromium refuse to
 * print (the capture fails with a 500 saying so).
 */
export async function printPdf(
  page: Page,
  spec: Pick<CaptureSpec, 'url' | 'html'>,
  options: PdfOptions,
): Promise<CaptureResult> {
  const { url } = spec;
  // An empty template is none too: Chromium takes "" for its own default, which shows the page's whole address
  // (red team, round 24).
  const template = (given: string | undefined) =>
    `${spec.html === undefined ? '' : NO_ADDRESS}${given || EMPTY_TEMPLATE}`;
  const print = (pageRanges: string) =>
    page
      .createPDFStream({
        format: options.paperFormat,
        landscape: options.landscape,
        printBackground: options.printBackground,
        margin: options.margin,
        pageRanges,
        ...(options.headerTemplate === undefined && options.footerTemplate === undefined
          ? {}
          : {
              displayHeaderFooter: true,
              headerTemplate: template(options.headerTemplate),
              footerTemplate: template(options.footerTemplate),
            }),
        // The capture's budget, not puppeteer, times the print.
        timeout: 0,
      })
      .then((pdf) => readWithin(pdf, url))
      .catch((error: unknown) => {
        throw printFailure(url, options, error);
      });
  const printedAgain = async () => printed(await print(firstPages(options.pageRanges, MAX_PDF_PAGES)), true);
  let pdf: Buffer;
  try {
    pdf = await print(firstPages(options.pageRanges, MAX_PDF_PAGES + 1));
  } catch (error) {
    // One page more than may be answered made it heavier than the front takes; the 100 pages answered may not be
    // (red team, round 25). A document of 100 pages or fewer weighs as much again, and fails as it did.
    if (error instanceof CaptureFailedError && error.reason === PDF_TOO_LARGE) return printedAgain();
    throw error;
  }
  if (pdfPageCount(pdf) <= MAX_PDF_PAGES) return printed(pdf, false);
  const objects = pdfObjectCount(pdf);
  const cuttable = objects !== undefined && objects <= MAX_CUT_OBJECTS && pdf.length <= MAX_CUT_BYTES;
  return (cuttable ? await withoutLastPages(pdf) : undefined) ?? printedAgain();
}

/** A printed document as the renderer answers it. */
function printed(image: Buffer, truncated: boolean): CaptureResult {
  return { image, contentType: CAPTURE_CONTENT_TYPES.pdf, truncated };
}

/**
 * The largest print that is cut rather than printed again, in objects and in bytes: pdf-lib reads every object
 * whole, in one go for each (no deadline reaches inside it), where Chromium is faster than pdf-lib at anything but
 * images. Measured on a loaded 2-core machine: 300,000 small objects (links) took 15 s to cut and 8.4 s to print
 * again; 55 MB of link addresses 4.3 s and 2.3 s; and names (element ids, as link targets) cost about 40 times their
 * bytes in memory (48 MB: 10 s and 2 GB), worse past 16,383 characters, where V8 hashes a string by its length alone
 * (red team, round 26: 49 MB took 32 s). Within these bounds a cut costs at most about a second and a few hundred
 * MB; it pays where the print is slow for its size (layout), and a print of heavy images is printed again.
 */
export const MAX_CUT_OBJECTS = 10_000;
export const MAX_CUT_BYTES = 4 * 1024 * 1024;

/**
 * The long document's first MAX_PDF_PAGES pages, written anew from the print at hand instead of printing again
 * (a print of 100 pages takes about as long as the first; a 101-page print of text took 220 ms, its cut 88).
 * Loaded only for such documents, so that the renderer's cold start does not pay for it. A print pdf-lib cannot read,
 * or whose cut does not read back as 100 pages, is printed again as before.
 */
async function withoutLastPages(pdf: Buffer): Promise<CaptureResult | undefined> {
  try {
    const { firstPagesOf } = await import('./pdfCut');
    const image = await firstPagesOf(pdf, MAX_PDF_PAGES);
    const pages = pdfPageCount(image);
    if (pages === MAX_PDF_PAGES && image.length <= MAX_ANSWER_BYTES) return printed(image, true);
    logger.warn('A long PDF was cut to the wrong length; printing it again', { pages });
  } catch (error) {
    logger.warn('A long PDF could not be cut; printing it again', { error: error as Error });
  }
  return undefined;
}

/**
 * The printed document, read from Chromium as it streams it, and given up on as soon as it passes what the front
 * takes: a page can print a document of gigabytes within its budget (pages of noise), which read whole would take
 * the renderer's memory with it.
 */
async function readWithin(pdf: ReadableStream<Uint8Array>, url: string): Promise<Buffer> {
  const reader = pdf.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    bytes += read.value.length;
    if (bytes > MAX_ANSWER_BYTES) {
      // Chromium's copy goes with the page's context, closed after the capture.
      await reader.cancel();
      throw new CaptureFailedError(url, PDF_TOO_LARGE, 'page');
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks, bytes);
}

/** Chromium's reasons, said in the request's terms; anything else is left to the renderer's own mapping. */
function printFailure(url: string, options: PdfOptions, error: unknown): unknown {
  const message = error instanceof Error ? error.message : '';
  if (/Page range exceeds page count|no pages/i.test(message)) {
    return new CaptureFailedError(url, 'pdfPageRanges selects no page of the document', 'page');
  }
  if (/Printing failed/i.test(message) && (options.headerTemplate ?? options.footerTemplate) !== undefined) {
    return new CaptureFailedError(
      url,
      'Chromium refused to print: header and footer templates may not link style sheets or fonts',
      'page',
    );
  }
  return error;
}
