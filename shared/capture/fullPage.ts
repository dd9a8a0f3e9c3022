import type { Page } from 'puppeteer-core';
import { assertDeliverable, type ImageEncoding } from './oversizedImage';
import {
  awaitStartedImages,
  type IsolatedWorld,
  pageGeometry,
  scrollThrough,
  settledHeight,
} from './pageScripts';
import { CAPTURE_CONTENT_TYPES, type CaptureResult, type CaptureSpec, heightCap } from './renderer';
import { captureView } from './viewCapture';
import { viewClip, viewStart } from './viewClip';
import { waitForWebFonts } from './webFonts';

/** How long loaders that throttle their checks (lazysizes: 125 ms) get to see the whole page in view. */
export const THROTTLED_LOADER_WAIT_MS = 150;

/**
 * Makes lazy content load before a full-page capture (our scripts run in the page's isolated world, see
 * pageScripts.ts): the page is scrolled through once; then, for loaders that
 * check only now and then (lazysizes looks at most every 125 ms, so a quick scroll passes some images by), the
 * viewport is made as tall as the page for a moment, which puts every element in view at once; then the images
 * started get a bounded wait, with the viewport and the scroll position back as they were, and so do the web fonts
 * of what the scroll brought in (red team, round 23: text first shown then was captured without its glyphs). A page
 * whose `resize` handlers are debounced or wait for a frame laid itself out for the tall viewport (a hero of `100vh`
 * drawn as tall as the page) and only later for the real one: its height is waited for to settle (round 23).
 */
async function loadLazyContent(page: Page, world: IsolatedWorld, cap: number): Promise<number> {
  const fullHeight = await scrollThrough(world);
  const viewport = page.viewport();
  if (viewport && fullHeight > viewport.height) {
    await page.setViewport({ ...viewport, height: Math.min(fullHeight, cap) });
    await new Promise((resolve) => setTimeout(resolve, THROTTLED_LOADER_WAIT_MS));
    await page.setViewport(viewport);
  }
  await Promise.all([awaitStartedImages(world), waitForWebFonts(page)]);
  return settledHeight(world, fullHeight);
}

/**
 * The whole scrollable page, up to the format's height cap (in image pixels, so fewer CSS pixels at a higher scale
 * or a mobile device's zoom), as wide as the view and from where it starts (the right end of a right-to-left page
 * that overflows sideways). Captured in one piece beyond the viewport, not stitched from scrolled screens, so fixed
 * and sticky elements appear once, where they are with the page at its top.
 */
export async function captureFullPage(
  page: Page,
  world: IsolatedWorld,
  spec: CaptureSpec,
  encoding: ImageEncoding,
): Promise<CaptureResult> {
  const fullHeight = await loadLazyContent(page, world, Math.floor(heightCap(encoding.type) / spec.scale));
  const geometry = await pageGeometry(world);
  const cap = Math.floor(heightCap(encoding.type) / (spec.scale * geometry.scale));
  const height = Math.min(fullHeight, cap);
  const rows = height * geometry.scale;
  // A page the view shows whole is taken as the view: Chromium placed a clip beyond the viewport of exactly the view's
  // size on a right-to-left or vertical page off to the side (red team, round 24: short Arabic pages cut or blank).
  if (rows <= (page.viewport()?.height ?? 0)) return captureView(page, world, spec, encoding);
  // From the top of all the page scrolls to: a page whose block direction runs upwards starts above its origin.
  const start = { x: viewStart(geometry).x, y: 0 };
  const shot = (strip: { y: number; height: number }, as = encoding) =>
    page.screenshot({
      ...as,
      clip: viewClip(geometry, start, strip, spec.width),
      captureBeyondViewport: true,
    });
  await assertDeliverable({ width: spec.width, height: rows, scale: spec.scale }, spec.url, encoding, shot);
  const image = await shot({ y: 0, height: rows });
  return {
    image: Buffer.from(image),
    contentType: CAPTURE_CONTENT_TYPES[encoding.type],
    truncated: fullHeight > cap,
  };
}
