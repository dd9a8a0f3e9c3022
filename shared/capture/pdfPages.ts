/**
 * Page ranges, and the facts we read back from a PDF Chromium printed: its page count and first page size, found
 * through the document's own structure (the cross-reference table the trailer points to, the catalog, the page
 * tree), never by searching its bytes, since a page's embedded images carry any bytes they like (red team: a JPEG
 * comment of lines like Skia's page objects made a one-page document count 151 pages and measure 1 x 1). The front
 * reads what a renderer answered, which may be anything: every step is a bounded look at one place, and any answer
 * that is not such a document reads as no page.
 */

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

/** How many pages a PDF printed by Chromium has (0 for anything else). */
export function pdfPageCount(pdf: Buffer): number {
  return pageTree(pdf)?.count ?? 0;
}

/** The size of the first page of a PDF printed by Chromium, in PDF points (1/72 in), rounded; 0 by 0 when none. */
export function pdfPageSize(pdf: Buffer): { width: number; height: number } {
  const box = pageTree(pdf)?.firstMediaBox;
  return box ? { width: Math.round(box[0]), height: Math.round(box[1]) } : { width: 0, height: 0 };
}

/** How many objects a PDF printed by Chromium declares (its trailer's `/Size`); undefined for anything else. */
export function pdfObjectCount(pdf: Buffer): number | undefined {
  const size = /trailer\s*<<[\s\S]*?\/Size (\d+)[\s\S]*?startxref\s+\d+\s+%%EOF\s*$/.exec(
    pdf.subarray(-TRAILER_WINDOW).toString('latin1'),
  )?.[1];
  return size === undefined ? undefined : Number(size);
}

/** How far from the end `startxref` may be. */
const TRAILER_WINDOW = 1_024;
/**
 * How much of an object's text is read: Skia writes a page's resources (a name per image) before its media box, and a
 * first page drawing thousands of images needs more than a few KiB (red team: 500 thumbnails read as 0 x 0, and
 * 30,000 canvases put it past 512 KiB). A few such looks, bounded, whatever a hostile answer holds.
 */
const OBJECT_WINDOW = 4 * 1024 * 1024;
/** How deep a page tree may nest (Skia's are one or two levels). */
const MAX_TREE_DEPTH = 32;

/** The page tree's count and its first page's media box (inherited from a parent node if the page has none). */
function pageTree(pdf: Buffer): { count: number; firstMediaBox?: [number, number] } | undefined {
  const text = pdf.toString('latin1');
  const table = crossReferences(text);
  if (!table) return undefined;
  const object = (id: number | undefined) =>
    id === undefined ? undefined : objectText(text, table.offsets, id);
  const catalog = object(reference(table.trailer, 'Root'));
  let node = object(catalog === undefined ? undefined : reference(catalog, 'Pages'));
  const count = node === undefined ? undefined : /\/Count (\d+)/.exec(node)?.[1];
  if (!node || count === undefined) return undefined;
  let box: [number, number] | undefined;
  for (let depth = 0; node && depth < MAX_TREE_DEPTH; depth++) {
    box = mediaBox(node) ?? box;
    if (/\/Type\s*\/Page\b(?!s)/.test(node))
      return { count: Number(count), ...(box ? { firstMediaBox: box } : {}) };
    node = object(firstKid(node));
  }
  return { count: Number(count) };
}

/**
 * Object number → byte offset, from the classic cross-reference table that the `startxref` ending the file names
 * (the kind Skia writes), and the trailer after it.
 */
function crossReferences(text: string): { offsets: Map<number, number>; trailer: string } | undefined {
  const start = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(text.slice(-TRAILER_WINDOW));
  if (!start) return undefined;
  const at = Number(start[1]);
  if (!text.startsWith('xref', at)) return undefined;
  // A subsection header, an entry (offset, generation, in use or free), or the trailer.
  const line = /\s*(?:(\d+) (\d+)[ \t]*\r?\n|(\d{10}) \d{5} ([nf])[ \t]*\r?\n|(trailer))/y;
  line.lastIndex = at + 'xref'.length;
  const offsets = new Map<number, number>();
  let next = 0;
  for (let match = line.exec(text); match; match = line.exec(text)) {
    if (match[5] !== undefined) {
      return { offsets, trailer: text.slice(line.lastIndex, line.lastIndex + TRAILER_WINDOW) };
    }
    if (match[1] !== undefined) {
      next = Number(match[1]);
      continue;
    }
    if (match[4] === 'n') offsets.set(next, Number(match[3]));
    next++;
  }
  return undefined;
}

/** The dictionary text of object `id` (up to its stream or its end), if the table's offset points at it. */
function objectText(text: string, offsets: Map<number, number>, id: number): string | undefined {
  const at = offsets.get(id);
  if (at === undefined || !text.startsWith(`${id} 0 obj`, at)) return undefined;
  const body = text.slice(at, at + OBJECT_WINDOW);
  const end = body.search(/\bendobj\b|\bstream\b/);
  return end === -1 ? undefined : body.slice(0, end);
}

function reference(dictionary: string, key: string): number | undefined {
  const found = new RegExp(`/${key} (\\d+) 0 R`).exec(dictionary);
  return found ? Number(found[1]) : undefined;
}

function firstKid(node: string): number | undefined {
  const found = /\/Kids\s*\[\s*(\d+) 0 R/.exec(node);
  return found ? Number(found[1]) : undefined;
}

function mediaBox(node: string): [number, number] | undefined {
  const found = /\/MediaBox\s*\[\s*([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)\s*\]/.exec(node);
  if (!found) return undefined;
  const [x0, y0, x1, y1] = found.slice(1).map(Number) as [number, number, number, number];
  return [x1 - x0, y1 - y0];
}
