import { MAX_PDF_PAGES, PAPER_FORMATS } from '../capture/renderer';
import { PDF_COST } from '../screenshot/cost';
import {
  MAX_HTML_BYTES,
  MAX_PDF_MARGIN_MM,
  MAX_PDF_PAGE_RANGES_LENGTH,
  MAX_PDF_TEMPLATE_BYTES,
  MIN_PDF_PRINTABLE_MM,
  type outputFields,
} from '../screenshot/outputFields';
import { MAX_QUEUED_HTML_BYTES } from '../screenshot/schema';

const onlyPdf = 'Only with format pdf';

/** Descriptions of the output fields in the API description; keyed by the schema's fields so a rename does not compile. */
export const OUTPUT_DESCRIPTIONS: Record<keyof typeof outputFields, string> = {
  html:
    `Your own HTML document (at most ${MAX_HTML_BYTES / 1024 / 1024} MiB of UTF-8, ${MAX_QUEUED_HTML_BYTES / 1024} KiB ` +
    'with async: true or in a batch), rendered instead of url: give ' +
    'exactly one of the two. It has an opaque origin of its own, everything it loads passes the same egress rules ' +
    'as a page, and relative addresses do not resolve (use absolute URLs or a <base>). Not with headers or cookies, ' +
    'nor in signed links',
  mediaType: 'CSS media type the page is laid out for; default print for pdf, screen for images',
  omitBackground: 'Transparent background where the page sets none of its own; only with png, webp or avif',
  pdfPaperFormat: `${onlyPdf}. Paper size: ${PAPER_FORMATS.join(', ')}; default A4`,
  pdfLandscape: `${onlyPdf}. Landscape paper; default false`,
  pdfPrintBackground: `${onlyPdf}. Print background colours and images; default true`,
  pdfMargin:
    `${onlyPdf}. Margins, each a length like 10mm, 0.5in, 1cm or 24px, at most ${MAX_PDF_MARGIN_MM} mm, opposite ones together leaving at least ${MIN_PDF_PRINTABLE_MM} mm of the paper; default 0. ` +
    `A PDF costs ${PDF_COST} credits and has at most ${MAX_PDF_PAGES} pages (a longer document is cut, with ` +
    'X-Screenshot-Truncated: true)',
  pdfPageRanges: `${onlyPdf}. Pages to print, like 1-5, 8 (at most ${MAX_PDF_PAGE_RANGES_LENGTH} characters); default all`,
  pdfHeaderTemplate:
    `${onlyPdf}. HTML for each page's header (at most ${MAX_PDF_TEMPLATE_BYTES / 1024} KiB of UTF-8); elements of ` +
    'class date, title, url, pageNumber and totalPages are filled in. It loads nothing: inline styles and data: ' +
    'images only',
  pdfFooterTemplate: `${onlyPdf}. HTML for each page's footer, as pdfHeaderTemplate`,
};
