import { isPage, MAX_TREE_DEPTH, type PdfStructure, pdfStructure, reference } from './pdfPages';

/**
 * A PDF Chromium printed, without its last page: an incremental update (PDF 32000-1, 7.5.6) appended to the printed
 * bytes, which writes again only the page tree nodes on the way to that page, each with one kid and one page fewer,
 * and a cross-reference section for them whose trailer names the printed one as `/Prev`. The page's own objects stay
 * in the file, unreferenced by the tree, as they do after any update; links and outline entries that pointed at it
 * point at a page no longer in the document, which readers skip.
 *
 * This saves a second print of a long document (Chromium cannot say how many pages it has before printing it). The
 * printed bytes are Chromium's, laid out from a hostile page: anything but the structure Skia writes (a classic
 * cross-reference table, a page tree of `/Kids` arrays of references) answers undefined, and the caller prints again.
 */
export function withoutLastPage(pdf: Buffer): Buffer | undefined {
  const document = pdfStructure(pdf);
  const catalog = document?.object(reference(document.trailer, 'Root'));
  const root = catalog === undefined ? undefined : reference(catalog, 'Pages');
  if (!document || root === undefined) return undefined;
  const path = pathToLastPage(document, root);
  if (!path) return undefined;
  const updated: { id: number; dictionary: string }[] = [];
  // From the page's parent up: each node loses the page from its count, and its last kid if that is the page or a
  // node left empty by it. The root keeps its kids (a document of one page is not cut).
  let dropKid = true;
  for (let depth = path.length - 1; depth >= 0; depth--) {
    const node = path[depth] as TreeNode;
    const kids: number[] = dropKid ? node.kids.slice(0, -1) : node.kids;
    if (depth === 0 && kids.length === 0) return undefined;
    dropKid = kids.length === 0;
    updated.push({
      id: node.id,
      dictionary: node.dictionary
        .replace(KIDS, `/Kids [${kids.map((kid) => `${kid} 0 R`).join(' ')}]`)
        .replace(COUNT, `/Count ${node.count - 1}`),
    });
  }
  const appended = update(document, pdf.length, updated);
  return appended === undefined ? undefined : Buffer.concat([pdf, Buffer.from(appended, 'latin1')]);
}

interface TreeNode {
  id: number;
  /** Its dictionary, `<< … >>`. */
  dictionary: string;
  kids: number[];
  count: number;
}

const KIDS = /\/Kids\s*\[([\d\sR]*)\]/;
const COUNT = /\/Count\s+(\d+)/;

/** The `/Pages` nodes from the root to the last page's parent, each read whole; undefined for anything unexpected. */
function pathToLastPage(document: PdfStructure, root: number): TreeNode[] | undefined {
  const path: TreeNode[] = [];
  let id = root;
  for (let depth = 0; depth < MAX_TREE_DEPTH; depth++) {
    const text = document.object(id);
    const dictionary = text?.slice(`${id} 0 obj`.length).trim();
    if (!dictionary?.startsWith('<<') || !dictionary.endsWith('>>')) return undefined;
    if (isPage(dictionary)) return path.length > 0 ? path : undefined;
    const kids = KIDS.exec(dictionary)?.[1]?.match(/\d+\s+0\s+R/g);
    const count = Number(COUNT.exec(dictionary)?.[1] ?? Number.NaN);
    const last = kids?.at(-1);
    // The root keeps a page at least; a node below it may go whole.
    if (!kids || last === undefined || !(count > (depth === 0 ? 1 : 0))) return undefined;
    path.push({ id, dictionary, kids: kids.map((kid) => Number.parseInt(kid, 10)), count });
    id = Number.parseInt(last, 10);
  }
  return undefined;
}

/** The appended part: the objects written again, their cross-reference section, and its trailer. */
function update(
  document: PdfStructure,
  length: number,
  objects: { id: number; dictionary: string }[],
): string | undefined {
  const size = reference(document.trailer, 'Size', '');
  const root = reference(document.trailer, 'Root');
  if (size === undefined || root === undefined) return undefined;
  let text = '\n';
  const entries = objects
    .sort((a, b) => a.id - b.id)
    .map(({ id, dictionary }) => {
      const at = length + text.length;
      text += `${id} 0 obj\n${dictionary}\nendobj\n`;
      // Each entry is 20 bytes: offset, generation, in use, and a two-character end of line.
      return `${id} 1\n${String(at).padStart(10, '0')} 00000 n \n`;
    });
  const xref = length + text.length;
  const trailer = [
    `/Size ${size}`,
    `/Root ${root} 0 R`,
    ...optional(document.trailer, /\/Info \d+ 0 R/),
    ...optional(document.trailer, /\/ID\s*\[[^\]]*\]/),
    `/Prev ${document.startxref}`,
  ].join(' ');
  return `${text}xref\n${entries.join('')}trailer\n<< ${trailer} >>\nstartxref\n${xref}\n%%EOF\n`;
}

function optional(trailer: string, entry: RegExp): string[] {
  const found = entry.exec(trailer)?.[0];
  return found === undefined ? [] : [found];
}
