import { PDFDocument } from 'pdf-lib';
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs';

/** What a test reads back from a PDF: each page's size (pdf-lib), its text and the colours it fills with (pdf.js). */
export interface PdfPage {
  /** In PDF points (1/72 in). */
  width: number;
  height: number;
  /** The page's text runs, joined with single spaces. */
  text: string;
  /** Every RGB fill colour the page sets, as [r, g, b] in 0-255. */
  fills: [number, number, number][];
}

export async function readPdf(bytes: Buffer): Promise<{ pageCount: number; pages: PdfPage[] }> {
  const document = await PDFDocument.load(bytes);
  const loading = getDocument({ data: new Uint8Array(bytes) });
  const parsed = await loading.promise;
  try {
    const pages = await Promise.all(
      document.getPages().map(async (page, index): Promise<PdfPage> => {
        const read = await parsed.getPage(index + 1);
        const content = await read.getTextContent();
        const text = content.items
          .map((item) => ('str' in item ? item.str : ''))
          .filter((run) => run.trim() !== '')
          .join(' ');
        const operators = await read.getOperatorList();
        // pdf.js hands every fill colour, whatever its colour space, as setFillRGBColor with one '#rrggbb' argument.
        const fills = operators.fnArray.flatMap((fn, i) =>
          fn === OPS.setFillRGBColor ? [rgbOf((operators.argsArray[i] as [string])[0])] : [],
        );
        return { ...page.getSize(), text, fills };
      }),
    );
    return { pageCount: document.getPageCount(), pages };
  } finally {
    await loading.destroy();
  }
}

function rgbOf(hex: string): PdfPage['fills'][number] {
  const value = Number.parseInt(hex.slice(1), 16);
  return [value >> 16, (value >> 8) & 0xff, value & 0xff];
}
