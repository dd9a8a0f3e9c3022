import sharp from 'sharp';

/** One square of the grid: some text (a character, a cluster or an emoji sequence), drawn alone and centred. */
export interface GlyphCell {
  text: string;
  /** CSS font-family for the cell; the page's default font when absent. */
  family?: string;
  /** lang attribute: decides which region's font draws Han characters. */
  lang?: string;
}

export const CELL_PX = 64;
export const GRID_COLUMNS = 28;
const FONT_PX = 40;

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
}

/** A page that draws each cell in a fixed square, row by row, black on white; `extraHead` may add web fonts. */
export function glyphGridPage(cells: readonly GlyphCell[], extraHead = ''): string {
  const squares = cells
    .map((cell) => {
      const style = cell.family ? ` style="font-family:${escapeHtml(cell.family)}"` : '';
      const lang = cell.lang ? ` lang="${cell.lang}"` : '';
      return `<div${lang}${style}>${escapeHtml(cell.text)}</div>`;
    })
    .join('');
  return `<!doctype html><html><head><meta charset="utf-8">${extraHead}<style>
html,body{margin:0;background:#fff;color:#000}
main{display:grid;grid-template-columns:repeat(${GRID_COLUMNS},${CELL_PX}px);grid-auto-rows:${CELL_PX}px}
main>div{font-size:${FONT_PX}px;line-height:${CELL_PX}px;text-align:center;white-space:nowrap;overflow:hidden}
</style></head><body><main>${squares}</main></body></html>`;
}

/** What one cell shows. */
export interface CellPixels {
  /** The cell's RGB bytes, for comparing two cells exactly. */
  rgb: Buffer;
  /** Pixels that are not white. */
  ink: number;
  /** Pixels whose channels differ by more than 64: colour, not black, white or grey antialiasing. */
  coloured: number;
}

/** Cuts a capture of glyphGridPage() into its cells, in page order. */
export async function readGrid(png: Buffer, count: number): Promise<CellPixels[]> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return Array.from({ length: count }, (_, index) => {
    const left = (index % GRID_COLUMNS) * CELL_PX;
    const top = Math.floor(index / GRID_COLUMNS) * CELL_PX;
    const rgb = Buffer.alloc(CELL_PX * CELL_PX * 3);
    let ink = 0;
    let coloured = 0;
    for (let y = 0; y < CELL_PX; y++) {
      const row = ((top + y) * info.width + left) * 3;
      data.copy(rgb, y * CELL_PX * 3, row, row + CELL_PX * 3);
    }
    for (let at = 0; at < rgb.length; at += 3) {
      const [r, g, b] = [rgb[at] ?? 0, rgb[at + 1] ?? 0, rgb[at + 2] ?? 0];
      if (r < 250 || g < 250 || b < 250) ink++;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 64) coloured++;
    }
    return { rgb, ink, coloured };
  });
}

/** Whether two cells show exactly the same pixels. */
export function samePixels(a: CellPixels, b: CellPixels): boolean {
  return a.rgb.equals(b.rgb);
}
