/**
 * Page ranges and the facts we read back from a PDF Chromium printed. Chromium's PDF writer (Skia) starts every page
 * object on a line of its own, `N 0 obj` then `<</Type /Page`, which no string inside the document (a link, the
 * title) can imitate at the start of a line, as Skia escapes line breaks in strings.
 */

const PAGE_OBJECT = /^\d+ 0 obj\r?\n<<\/Type \/Page\r?\n/gm;
/** A line of a page object giving its size, and the line that ends the object: each looked for once, from a page. */
const MEDIA_BOX = /^\/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]/gm;
const OBJECT_END = /^endobj/gm;

/** `1-5, 8` as [first, last] spans: [[1, 5], [8, 8]]. */
export function pageSpans(ranges: string): [number, number][] {
  return ranges.split(',').map((part) => {
    const [first = 0, last = first] = part.split('-').map((n) => Number(n.trim()));
    return [first, last];
  });
}

/**
 * The first `count` pages of those `ranges` select (all pages when absent), as page ranges Chromium takes. Chromium
 * prints the selected pages in document order, once each, so the spans are sorted and merged first.
 */
export function firstPages(ranges: string | undefined, count: number): string {
  const spans = (
    ranges === undefined ? [[1, Number.MAX_SAFE_INTEGER] as [number, number]] : pageSpans(ranges)
  ).sort((a, b) => a[0] - b[0]);
  const kept: [number, number][] = [];
  let left = count;
  let next = 1;
  for (const [first, last] of spans) {
    const from = Math.max(first, next);
    if (from > last || left === 0) continue;
    const to = Math.min(last, from + left - 1);
    const previous = kept.at(-1);
    if (previous && previous[1] + 1 === from) previous[1] = to;
    else kept.push([from, to]);
    left -= to - from + 1;
    next = to + 1;
  }
  return kept.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(',');
}

/** How many pages a PDF printed by Chromium has. */
export function pdfPageCount(pdf: Buffer): number {
  return pdf.toString('latin1').match(PAGE_OBJECT)?.length ?? 0;
}

/**
 * The size of the first page of a PDF printed by Chromium, in PDF points (1/72 in), rounded; 0 by 0 when its first
 * page object gives none. The front reads it from what a renderer answered, which may be anything: every search
 * runs once, forward from the first page object, so the time is linear in the bytes whatever they hold (a pattern
 * tried again from every page object took minutes for a few megabytes of page headers without an end).
 */
export function pdfPageSize(pdf: Buffer): { width: number; height: number } {
  const text = pdf.toString('latin1');
  const none = { width: 0, height: 0 };
  const page = firstMatch(PAGE_OBJECT, text, 0);
  if (!page) return none;
  const start = page.index + page[0].length;
  const box = firstMatch(MEDIA_BOX, text, start);
  const end = firstMatch(OBJECT_END, text, start)?.index ?? text.length;
  if (!box || box.index > end) return none;
  return { width: Math.round(Number(box[1])), height: Math.round(Number(box[2])) };
}

/** The first match of a global pattern at or after `from`. */
function firstMatch(pattern: RegExp, text: string, from: number): RegExpExecArray | null {
  pattern.lastIndex = from;
  const match = pattern.exec(text);
  pattern.lastIndex = 0;
  return match;
}
