import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import type { CaptureSpec } from '../../shared/capture/renderer';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { type CellPixels, type GlyphCell, glyphGridPage, readGrid, samePixels } from '../helpers/glyphGrid';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/** Each script the font set must cover, as a few characters or clusters drawn one per cell. */
const SCRIPTS: Record<string, { texts: string[]; lang?: string }> = {
  Latin: { texts: ['A', 'g', 'É', 'ß', 'ñ', 'Ł'] },
  Greek: { texts: ['Ω', 'μ', 'έ', 'γ', 'λ'] },
  Cyrillic: { texts: ['П', 'р', 'и', 'Ж', 'ё'] },
  'Chinese (simplified)': { texts: ['简', '体', '汉', '语', '这', '们'], lang: 'zh-CN' },
  'Chinese (traditional)': { texts: ['繁', '體', '漢', '語', '這', '們'], lang: 'zh-TW' },
  Japanese: { texts: ['あ', 'を', 'カ', 'ヴ', '働', '込', '畑'], lang: 'ja' },
  Korean: { texts: ['한', '국', '어', '글', '뷁'], lang: 'ko' },
  Arabic: { texts: ['م', 'ر', 'ح', 'ب', 'ع', 'سلام'] },
  Hebrew: { texts: ['ש', 'ל', 'ו', 'ם', 'א'] },
  Devanagari: { texts: ['न', 'म', 'क', 'ह', 'स्ते', 'क्ष'] },
  Bengali: { texts: ['ক', 'খ', 'ব', 'ল', 'বাং'] },
  Tamil: { texts: ['த', 'ம', 'ழ', 'க', 'மி'] },
  Thai: { texts: ['ส', 'ว', 'ด', 'ก', 'สวั'] },
};
const EMOJI = ['😀', '🎉', '👍', '❤️', '🇯🇵', '👩‍💻', '🐱'];
/** Unassigned code points: no font has them, so they show the missing-glyph rendering. */
const MISSING = ['\u0378', '\u0379'];
/** Georgian and Armenian: in the host's DejaVu fonts, not in ours. */
const HOST_ONLY = ['ა', 'Ա'];
const FAMILIES = [undefined, 'sans-serif', 'serif', 'monospace'];

/**
 * Text marked as each region's, then unmarked. 述 is drawn differently in each region's type. One page each: within
 * a page, Chromium reuses the font it found for a character, whatever the next element's lang.
 */
const HAN_REGIONS = ['zh-CN', 'zh-TW', 'ja', 'ko', 'unmarked'];
const hanPage = (lang: string) =>
  glyphGridPage([{ text: '述', lang: lang === 'unmarked' ? undefined : lang }]);

interface Labelled extends GlyphCell {
  label: string;
}

const cells: Labelled[] = [
  ...FAMILIES.flatMap((family) => [
    ...Object.entries(SCRIPTS).flatMap(([script, { texts, lang }]) =>
      texts.map((text) => ({ label: `${script} ${text} (${family ?? 'default'})`, text, lang, family })),
    ),
    ...EMOJI.map((text) => ({ label: `emoji ${text} (${family ?? 'default'})`, text, family })),
    ...MISSING.map((text) => ({ label: 'missing', text, family })),
    ...HOST_ONLY.map((text) => ({ label: 'host only', text, family })),
  ]),
  // A host font asked for by name: not there, so the text gets the font that stands after it (or the default).
  { label: 'host family', text: 'g', family: "'DejaVu Sans'" },
  { label: 'host family, then monospace', text: 'g', family: "'DejaVu Sans Mono', monospace" },
];

function spec(url: string): CaptureSpec {
  return captureSpecOf(screenshotRequest.parse({ url, width: 1920, height: 1080, fullPage: true }));
}

/** Widths of the runs of exactly this colour along a row of the image. */
async function colouredRunWidth(png: Buffer, y: number, colour: [number, number, number]): Promise<number> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let width = 0;
  for (let x = 0; x < info.width; x++) {
    const at = (y * info.width + x) * 3;
    if (data[at] === colour[0] && data[at + 1] === colour[1] && data[at + 2] === colour[2]) width++;
  }
  return width;
}

const MEASURE_PAGE = `<!doctype html><html><head><meta charset="utf-8"><style>
html,body{margin:0;background:#fff}div{font-size:40px;line-height:60px;height:60px}
.a{background:#ff0000}.b{background:#0000ff}</style></head><body>
<div style="font-family:monospace"><span class="a">iiii</span></div>
<div style="font-family:monospace"><span class="b">MMMM</span></div>
<div style="font-family:sans-serif"><span class="a">iiii</span></div>
<div style="font-family:sans-serif"><span class="b">MMMM</span></div>
</body></html>`;

let server: PageServer;
let renderer: ChromiumRenderer;
let grid: Map<string, CellPixels>;
let gridCells: CellPixels[];

beforeAll(async () => {
  server = await startPageServer({
    '/grid': glyphGridPage(cells),
    ...Object.fromEntries(HAN_REGIONS.map((lang) => [`/han/${lang}`, hanPage(lang)])),
    '/measure': MEASURE_PAGE,
  });
  renderer = new ChromiumRenderer();
  const { image } = await renderer.capture(spec(`${server.origin}/grid`), { deadline: Date.now() + 30_000 });
  gridCells = await readGrid(image, cells.length);
  grid = new Map(cells.map((cell, index) => [cell.label, gridCells[index] as CellPixels]));
});

afterAll(async () => {
  await renderer?.close();
  await server?.close();
});

/** The missing-glyph rendering of a family (its cells come in order, so the first "missing" after it). */
function missingOf(family: string | undefined): CellPixels {
  const index = cells.findIndex((cell) => cell.label === 'missing' && cell.family === family);
  return gridCells[index] as CellPixels;
}

describe('the font set', () => {
  it('draws the missing glyph the same way for any code point no font has, so a comparison can find it', () => {
    for (const family of FAMILIES) {
      const [first, second] = cells
        .map((cell, index) => ({ cell, index }))
        .filter(({ cell }) => cell.label === 'missing' && cell.family === family)
        .map(({ index }) => gridCells[index] as CellPixels);
      expect(first && second && samePixels(first, second), String(family)).toBe(true);
    }
  });

  it('draws every character of every script in every generic family: no missing glyph, no blank', () => {
    const failures = cells
      .map((cell, index) => ({ cell, pixels: gridCells[index] as CellPixels }))
      .filter(({ cell }) => !['missing', 'host only'].includes(cell.label) && !cell.label.startsWith('host'))
      .filter(({ cell, pixels }) => pixels.ink < 20 || samePixels(pixels, missingOf(cell.family)))
      .map(({ cell }) => cell.label);
    expect(failures).toEqual([]);
  });

  it('draws emoji in colour', () => {
    const grey = cells
      .map((cell, index) => ({ cell, pixels: gridCells[index] as CellPixels }))
      .filter(({ cell }) => cell.label.startsWith('emoji'))
      .filter(({ pixels }) => pixels.coloured < 100)
      .map(({ cell }) => cell.label);
    expect(grey).toEqual([]);
  });

  it('uses no font of the host: characters only the host has are missing glyphs', () => {
    for (const family of FAMILIES) {
      for (const [index, cell] of cells.entries()) {
        if (cell.label !== 'host only' || cell.family !== family) continue;
        expect(samePixels(gridCells[index] as CellPixels, missingOf(family)), `${cell.text} ${family}`).toBe(
          true,
        );
      }
    }
  });

  it('gives CSS that names a host font the font set instead', () => {
    const latin = (family: string | undefined) => grid.get(`Latin g (${family ?? 'default'})`) as CellPixels;
    expect(samePixels(grid.get('host family') as CellPixels, latin(undefined))).toBe(true);
    expect(samePixels(grid.get('host family, then monospace') as CellPixels, latin('monospace'))).toBe(true);
  });

  it('draws Han characters with the font of the region the text is marked with', async () => {
    const drawn: CellPixels[] = [];
    for (const lang of HAN_REGIONS) {
      const { image } = await renderer.capture(spec(`${server.origin}/han/${lang}`), {
        deadline: Date.now() + 30_000,
      });
      drawn.push(...(await readGrid(image, 1)));
    }
    const [cn, tw, ja, ko, unmarked] = drawn as [CellPixels, CellPixels, CellPixels, CellPixels, CellPixels];
    for (const [a, b] of [
      [cn, tw],
      [cn, ja],
      [cn, ko],
      [tw, ja],
      [tw, ko],
      [ja, ko],
    ] as const) {
      expect(samePixels(a, b)).toBe(false);
    }
    // Unmarked Han text is drawn as Simplified Chinese.
    expect(samePixels(cn, unmarked)).toBe(true);
  });
});

describe('the generic families', () => {
  it('monospace is monospaced, sans-serif is not', async () => {
    const { image } = await renderer.capture(
      { ...spec(`${server.origin}/measure`), fullPage: false },
      { deadline: Date.now() + 30_000 },
    );
    const red: [number, number, number] = [255, 0, 0];
    const blue: [number, number, number] = [0, 0, 255];
    const monoNarrow = await colouredRunWidth(image, 5, red);
    const monoWide = await colouredRunWidth(image, 65, blue);
    const sansNarrow = await colouredRunWidth(image, 125, red);
    const sansWide = await colouredRunWidth(image, 185, blue);
    expect(monoNarrow).toBeGreaterThan(40);
    expect(Math.abs(monoNarrow - monoWide)).toBeLessThanOrEqual(1);
    expect(sansWide).toBeGreaterThan(sansNarrow * 2);
  });

  it('serif, sans-serif and monospace are three different fonts, and the default is serif', () => {
    const latin = (family: string | undefined) => grid.get(`Latin g (${family ?? 'default'})`) as CellPixels;
    expect(samePixels(latin('serif'), latin('sans-serif'))).toBe(false);
    expect(samePixels(latin('serif'), latin('monospace'))).toBe(false);
    expect(samePixels(latin('sans-serif'), latin('monospace'))).toBe(false);
    expect(samePixels(latin(undefined), latin('serif'))).toBe(true);
  });
});
