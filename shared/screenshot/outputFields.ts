import { z } from 'zod';
import { pageSpans } from '../capture/pdfPages';
import {
  CAPTURE_CONTENT_TYPES,
  MEDIA_TYPES,
  type MediaType,
  type OutputFormat,
  PAPER_FORMATS,
  PAPER_SIZES_MM,
  type PaperFormat,
  type PdfOptions,
} from '../capture/renderer';

/**
 * The output fields of the screenshot body (docs/api.md, "Outputs"): PDF and AVIF beside the images, the media
 * type, transparent backgrounds, and a document given as `html` instead of a `url`. Their bounds, their zod
 * schemas (spread into the request schema), the rules on how they go with the other fields, and the defaults that
 * depend on the format. The OpenAPI text and docs/api.md quote these bounds.
 */

/**
 * The raster images, which no browser runs as a document: every other type (image/svg+xml among them, should one
 * ever come back) is answered sandboxed, and stored to be downloaded rather than opened (see `opensInline`).
 */
export const RASTER_TYPES: ReadonlySet<string> = new Set([
  CAPTURE_CONTENT_TYPES.png,
  CAPTURE_CONTENT_TYPES.jpeg,
  CAPTURE_CONTENT_TYPES.webp,
  CAPTURE_CONTENT_TYPES.avif,
]);

/**
 * Whether a stored result may open in the browser from its storage link, where no `Content-Security-Policy: sandbox`
 * can go with it: the raster images, and PDFs (Chromium prints no script into them). A captured page's HTML would
 * run its scripts on the bucket's origin, so it and every other type are downloaded.
 */
export function opensInline(contentType: string): boolean {
  return RASTER_TYPES.has(contentType) || contentType === CAPTURE_CONTENT_TYPES.pdf;
}

/** Of `html`, in bytes of UTF-8. */
export const MAX_HTML_BYTES = 1024 * 1024;
/** Of `pdfHeaderTemplate` and of `pdfFooterTemplate`, in bytes of UTF-8. */
export const MAX_PDF_TEMPLATE_BYTES = 8 * 1024;
export const MAX_PDF_PAGE_RANGES_LENGTH = 64;
/**
 * The highest page `pdfPageRanges` may name. Chromium reads page numbers as 32-bit integers and refuses larger ones
 * with a syntax error (red team: a 500 that blamed the browser); no document it prints comes near this.
 */
export const MAX_PDF_PAGE_NUMBER = 1_000_000;
/** Each of the four margins, in millimetres. */
export const MAX_PDF_MARGIN_MM = 100;
/**
 * What the margins leave of the paper's width and of its height, at least, in millimetres: what the largest margins
 * (100 mm on each side) leave of A4's width, so that every margin the contract allows on A4 or Letter still prints.
 */
export const MIN_PDF_PRINTABLE_MM = 10;

/** Millimetres per unit of the lengths a margin may be written in (CSS: 96 px to the inch). */
const MM_PER_UNIT = { mm: 1, cm: 10, in: 25.4, px: 25.4 / 96 } as const;
const LENGTH = /^(\d+(?:\.\d+)?)(mm|cm|in|px)$/;
/** `1-5, 8`: pages and page spans, separated by commas. */
const PAGE_RANGES = /^\s*\d+(?:\s*-\s*\d+)?(?:\s*,\s*\d+(?:\s*-\s*\d+)?)*\s*$/;

/** A length like `10mm`, in millimetres, or undefined when it is not one. */
export function lengthInMm(length: string): number | undefined {
  const match = LENGTH.exec(length);
  if (!match) return undefined;
  return Number(match[1]) * MM_PER_UNIT[match[2] as keyof typeof MM_PER_UNIT];
}

/** A string of at most `max` bytes of UTF-8 (what the body limit counts), reported as too_big. */
export const utf8Text = (what: string, max: number) =>
  z
    .string()
    .check((ctx) => {
      if (Buffer.byteLength(ctx.value, 'utf8') > max) {
        ctx.issues.push({
          code: 'too_big',
          origin: 'string',
          maximum: max,
          input: ctx.value,
          message: `${what} must be at most ${max} bytes of UTF-8`,
        });
      }
    })
    // What JSON Schema can say of it (characters, never more than bytes), for generated clients and MCP hosts (red
    // team, round 23: the published schemas had no bound at all).
    .meta({ maxLength: max });

const margin = z
  .string()
  .refine((length) => lengthInMm(length) !== undefined, 'a margin is a length like 10mm, 0.5in, 1cm or 24px')
  .refine(
    (length) => (lengthInMm(length) ?? 0) <= MAX_PDF_MARGIN_MM,
    `a margin is at most ${MAX_PDF_MARGIN_MM} mm`,
  )
  // What the checks in code accept, for the published schemas (the refusals above say it in words).
  .meta({ pattern: LENGTH.source });

const pageRanges = z
  .string()
  .max(MAX_PDF_PAGE_RANGES_LENGTH)
  .regex(PAGE_RANGES, 'pdfPageRanges lists pages and spans like 1-5, 8')
  .refine(
    (ranges) =>
      !PAGE_RANGES.test(ranges) ||
      pageSpans(ranges).every(([first, last]) => first >= 1 && first <= last && last <= MAX_PDF_PAGE_NUMBER),
    `pages count from 1 to ${MAX_PDF_PAGE_NUMBER.toLocaleString('en-US')}, and a span runs from its first page to a later one`,
  );

/** The output fields, all optional; a request that uses none of them is captured as before. */
export const outputFields = {
  html: utf8Text('html', MAX_HTML_BYTES).optional(),
  mediaType: z.enum(MEDIA_TYPES).optional(),
  omitBackground: z.boolean().optional(),
  pdfPaperFormat: z.enum(PAPER_FORMATS).optional(),
  pdfLandscape: z.boolean().optional(),
  pdfPrintBackground: z.boolean().optional(),
  pdfMargin: z
    .strictObject({
      top: margin.optional(),
      right: margin.optional(),
      bottom: margin.optional(),
      left: margin.optional(),
    })
    .optional(),
  pdfPageRanges: pageRanges.optional(),
  pdfHeaderTemplate: utf8Text('pdfHeaderTemplate', MAX_PDF_TEMPLATE_BYTES).optional(),
  pdfFooterTemplate: utf8Text('pdfFooterTemplate', MAX_PDF_TEMPLATE_BYTES).optional(),
};

type PdfField = Extract<keyof typeof outputFields, `pdf${string}`>;
const PDF_FIELDS = Object.keys(outputFields).filter((name): name is PdfField => name.startsWith('pdf'));

/**
 * Fields that describe an image, which a printed document does not have, and when a body asks for them. The check
 * sees the body after defaults (fullPage false, scale 1): only a value other than the default asks for anything.
 */
const IMAGE_ONLY_FIELDS: Record<string, (value: unknown) => boolean> = {
  fullPage: (value) => value === true,
  selector: (value) => value !== undefined,
  scale: (value) => value !== undefined && value !== 1,
  omitBackground: (value) => value === true,
};
/** The formats with an alpha channel: jpeg has none, and a document or text no background to omit. */
const TRANSPARENT_FORMATS: ReadonlySet<unknown> = new Set(['png', 'webp', 'avif']);
/** Fields that act on the page at `url` only: a document given as `html` has no origin of its own to send them to. */
const URL_ONLY_FIELDS = ['headers', 'cookies'] as const;

/**
 * What the output fields cannot check alone: how they go with the rest of the body. A field that does not apply to
 * the chosen format or source is refused, naming it. zod runs this even when a field failed its own check, so the
 * values are looked at as the unknown input they may still be.
 */
export function outputIssues(body: Record<string, unknown>) {
  const issues: { path: (string | number)[]; message: string }[] = [];
  if ((body.url === undefined) === (body.html === undefined)) {
    issues.push({ path: ['url'], message: 'give exactly one of url and html' });
  }
  if (body.html !== undefined) {
    for (const field of URL_ONLY_FIELDS) {
      if (body[field] !== undefined) {
        issues.push({ path: [field], message: `${field} cannot be combined with html, only with url` });
      }
    }
  }
  if (body.format === 'pdf') {
    for (const [field, asksFor] of Object.entries(IMAGE_ONLY_FIELDS)) {
      if (asksFor(body[field]))
        issues.push({ path: [field], message: `${field} cannot be combined with pdf` });
    }
    issues.push(...marginRoomIssues(body));
  } else {
    for (const field of PDF_FIELDS) {
      if (body[field] !== undefined) issues.push({ path: [field], message: `${field} needs format pdf` });
    }
    if (body.omitBackground === true && !TRANSPARENT_FORMATS.has(body.format)) {
      issues.push({ path: ['omitBackground'], message: 'omitBackground needs png, webp or avif' });
    }
  }
  return issues;
}

/**
 * Margins that leave less than MIN_PDF_PRINTABLE_MM of the paper's width or height. Margins that fill it leave nothing
 * to print on: Chromium refuses to print them (which would be a 500 blaming the browser). Margins that leave a sliver
 * make Chromium lay the whole document out into pages of that sliver before it prints any, on the page's time and out
 * of reach of every guard of the page's memory (red team, round 20: 0.0000001 mm of landscape A5 held a renderer 30 s
 * and 2 GB for a free 500).
 */
function marginRoomIssues(body: Record<string, unknown>) {
  const margin = body.pdfMargin;
  if (margin === null || typeof margin !== 'object') return [];
  const paper = PAPER_SIZES_MM[(body.pdfPaperFormat ?? 'A4') as PaperFormat];
  if (!paper) return [];
  const { width, height } = body.pdfLandscape === true ? { width: paper.height, height: paper.width } : paper;
  const mm = (side: string) => {
    const length = (margin as Record<string, unknown>)[side];
    return typeof length === 'string' ? (lengthInMm(length) ?? 0) : 0;
  };
  const across = [
    { sides: ['left', 'right'], dimension: 'width', length: width },
    { sides: ['top', 'bottom'], dimension: 'height', length: height },
  ] as const;
  // In micrometres, so that margins written to leave exactly the least (in mm, cm or in) are not refused by a rounding.
  const leftOver = (one: string, other: string, length: number) =>
    Math.round((length - mm(one) - mm(other)) * 1000);
  return across
    .filter(({ sides: [one, other], length }) => leftOver(one, other, length) < MIN_PDF_PRINTABLE_MM * 1000)
    .map(({ sides: [one, other], dimension, length }) => ({
      path: ['pdfMargin'],
      message: `pdfMargin ${one} and ${other} must leave at least ${MIN_PDF_PRINTABLE_MM} mm of the paper's ${dimension} (${length} mm) to print on`,
    }));
}

/** The output fields of a validated request; the type keeps this module free of the request schema's. */
export interface OutputRequest {
  format: OutputFormat;
  mediaType?: MediaType | undefined;
  pdfPaperFormat?: PdfOptions['paperFormat'] | undefined;
  pdfLandscape?: boolean | undefined;
  pdfPrintBackground?: boolean | undefined;
  pdfMargin?: Partial<Record<keyof PdfOptions['margin'], string | undefined>> | undefined;
  pdfPageRanges?: string | undefined;
  pdfHeaderTemplate?: string | undefined;
  pdfFooterTemplate?: string | undefined;
}

/** `print` for a PDF, `screen` for an image, unless the request says. */
export function mediaTypeOf(request: OutputRequest): MediaType {
  return request.mediaType ?? (request.format === 'pdf' ? 'print' : 'screen');
}

/** The PDF's options after defaults: A4, portrait, backgrounds printed, no margins. */
export function pdfOptionsOf(request: OutputRequest): PdfOptions {
  const margin = request.pdfMargin ?? {};
  return {
    paperFormat: request.pdfPaperFormat ?? 'A4',
    landscape: request.pdfLandscape ?? false,
    printBackground: request.pdfPrintBackground ?? true,
    margin: {
      top: margin.top ?? '0mm',
      right: margin.right ?? '0mm',
      bottom: margin.bottom ?? '0mm',
      left: margin.left ?? '0mm',
    },
    ...(request.pdfPageRanges === undefined ? {} : { pageRanges: request.pdfPageRanges }),
    ...(request.pdfHeaderTemplate === undefined ? {} : { headerTemplate: request.pdfHeaderTemplate }),
    ...(request.pdfFooterTemplate === undefined ? {} : { footerTemplate: request.pdfFooterTemplate }),
  };
}

/**
 * The output options as the cache compares them: a PDF's defaults written out, and a media type equal to the
 * format's default left out (as in requests from before the field existed), so that saying a default or not makes
 * no difference.
 */
export function comparableOutputs<R extends OutputRequest>(request: R): Omit<R, 'mediaType'> {
  const { mediaType: _, ...rest } = request;
  const media =
    mediaTypeOf(request) === mediaTypeOf({ format: request.format }) ? {} : { mediaType: request.mediaType };
  if (request.format !== 'pdf') return { ...rest, ...media };
  const pdf = pdfOptionsOf(request);
  return {
    ...rest,
    ...media,
    pdfPaperFormat: pdf.paperFormat,
    pdfLandscape: pdf.landscape,
    pdfPrintBackground: pdf.printBackground,
    pdfMargin: pdf.margin,
  };
}
