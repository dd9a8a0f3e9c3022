import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserBundle } from '../../shared/capture/browserBundle';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import type { CaptureSpec } from '../../shared/capture/renderer';
import { WEB_FONTS_WAIT_MS } from '../../shared/capture/webFonts';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { type CellPixels, glyphGridPage, readGrid, samePixels } from '../helpers/glyphGrid';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/** The bundle's Noto Sans Mono, served as a web font: drawn, it looks like `monospace`, and unlike the fallback. */
const FONT = readFileSync(
  browserBundle().fontConfigFile.replace(/fonts\.conf$/, 'NotoSansMono_400Regular.ttf'),
);
const FONT_DELAY_MS = 1_000;
const TEXT = 'Wm';

/**
 * Cell 0 uses the web font, which the page asks for only after its load event (so loading it cannot delay the
 * event) and blocks on (`font-display: block`: no text until it arrives). Cells 1 and 2: monospace and the fallback.
 */
function latePage(fontPath: string, sabotage = ''): string {
  const head = `<style>@font-face{font-family:Late;src:url(${fontPath}) format("truetype");font-display:block}</style>
<script>${sabotage}
addEventListener('load', () => { document.querySelector('main>div').style.fontFamily = 'Late, serif'; });</script>`;
  return glyphGridPage(
    [{ text: TEXT }, { text: TEXT, family: 'monospace' }, { text: TEXT, family: 'serif' }],
    head,
  );
}

/** Main-world JavaScript that would make a wait trusting page globals hang or end at once. */
const SABOTAGE = `
Object.defineProperty(Document.prototype, 'fonts', { get: () => ({ ready: new Promise(() => {}), status: 'loading' }) });
window.setTimeout = () => 0;
Promise.race = () => new Promise(() => {});`;

function spec(url: string): CaptureSpec {
  return captureSpecOf(screenshotRequest.parse({ url, width: 1280, height: 400, fullPage: false }));
}

function serveFontAfter(ms: number) {
  return (_req: unknown, res: ServerResponse) => {
    setTimeout(
      () => res.writeHead(200, { 'Content-Type': 'font/ttf', 'Cache-Control': 'no-store' }).end(FONT),
      ms,
    );
  };
}

/** A full page whose text in the web font is written only when the page is first scrolled, 2,000 px down. */
const SCROLL_FONT_PAGE = `<!doctype html><style>html,body{margin:0;background:#fff}
@font-face{font-family:Late;src:url(/font.ttf) format("truetype");font-display:block}
#late{font:64px Late, serif;color:#000;margin:0;height:100px}</style>
<div style="height:2000px"></div><p id=late></p>
<script>addEventListener('scroll', () => { document.getElementById('late').textContent = 'HELLO'; }, { once: true });</script>`;

let server: PageServer;
let renderer: ChromiumRenderer;

beforeAll(async () => {
  server = await startPageServer({
    '/late': latePage('/font.ttf'),
    '/sabotaged': latePage('/font.ttf', SABOTAGE),
    '/never': latePage('/never.ttf'),
    '/on-scroll': SCROLL_FONT_PAGE,
    '/font.ttf': serveFontAfter(FONT_DELAY_MS),
    // Headers never come: the font stays loading for as long as the page lives.
    '/never.ttf': () => undefined,
  });
  renderer = new ChromiumRenderer();
  await renderer.warmUp();
});

afterAll(async () => {
  await renderer?.close();
  await server?.close();
});

async function captureCells(path: string): Promise<{ cells: CellPixels[]; ms: number }> {
  const started = Date.now();
  const { image } = await renderer.capture(spec(`${server.origin}${path}`), {
    deadline: Date.now() + 30_000,
  });
  return { cells: await readGrid(image, 3), ms: Date.now() - started };
}

describe('web fonts', () => {
  it('are waited for: text in a font still loading after the load event is drawn in that font', async () => {
    const { cells, ms } = await captureCells('/late');
    const [late, monospace, fallback] = cells as [CellPixels, CellPixels, CellPixels];
    expect(samePixels(late, monospace)).toBe(true);
    expect(samePixels(late, fallback)).toBe(false);
    expect(ms).toBeGreaterThanOrEqual(FONT_DELAY_MS);
  });

  it('are waited for from an isolated world: page scripts that replace document.fonts or timers change nothing', async () => {
    const { cells, ms } = await captureCells('/sabotaged');
    const [late, monospace] = cells as [CellPixels, CellPixels, CellPixels];
    expect(samePixels(late, monospace)).toBe(true);
    expect(ms).toBeLessThan(FONT_DELAY_MS + WEB_FONTS_WAIT_MS);
  });

  it(`are waited for ${WEB_FONTS_WAIT_MS / 1000} s at most: a font that never arrives does not fail the capture`, async () => {
    const { cells, ms } = await captureCells('/never');
    expect(ms).toBeGreaterThanOrEqual(WEB_FONTS_WAIT_MS);
    expect(ms).toBeLessThan(WEB_FONTS_WAIT_MS + 3_000);
    // The other cells are drawn as usual.
    expect((cells[1] as CellPixels).ink).toBeGreaterThan(20);
  });
});

/**
 * Red team (round 23): fonts were waited for before the full page's scroll-through, so text that the scroll brought
 * in, in a font first needed then, was captured laid out but without a glyph.
 */
describe('web fonts of what a full page scroll brings in', () => {
  it('are waited for too: the text is drawn', async () => {
    const fullPage = captureSpecOf(
      screenshotRequest.parse({ url: `${server.origin}/on-scroll`, width: 800, height: 600, fullPage: true }),
    );
    const { image } = await renderer.capture(fullPage, { deadline: Date.now() + 30_000 });
    const { data, info } = await sharp(image)
      .extract({ left: 0, top: 2_000, width: 800, height: 100 })
      .greyscale()
      .raw()
      .toBuffer({ resolveWithObject: true });
    let ink = 0;
    for (let at = 0; at < data.length; at += info.channels) if ((data[at] ?? 255) < 128) ink++;
    // Before: 0.
    expect(ink).toBeGreaterThan(500);
  });
});
