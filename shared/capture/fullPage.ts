import type { Page, ScreenshotOptions } from 'puppeteer-core';
import { assertDeliverable } from './oversizedImage';
import { awaitStartedImages, type IsolatedWorld, pageHeight, scrollThrough } from './pageScripts';
import {
  CAPTURE_CONTENT_TYPES,
  type CaptureResult,
  type CaptureSpec,
  heightCap,
  type ImageFormat,
} from './renderer';
import { waitForWebFonts } from './webFonts';

/** How long loaders that throttle their checks (lazysizes: 125 ms) get to see the whole page in view. */
export const THROTTLED_LOADER_WAIT_MS = 150;

/**
 * Makes lazy content load before a full-page capture (our scripts run in the page's isolated world, see
 * pageScripts.ts): the page is scrolled through once; then, for loaders that
 * check only now and then (lazysizes looks at most every 125 ms, so a quick scroll passes some images by), the
 * viewport is made as tall as the page for a moment, which puts every element in view at once; then the images
 * started get a bounded wait, with the viewport and the scroll position back as they were, and so do the web fonts
 * of what the scroll brought in (red team, round 23: text first shown then was captured without its glyphs).
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
  return pageHeight(world);
}

/**
 * The whole scrollable page, up to the format's height cap (in image pixels, so fewer CSS pixels at a higher
 * scale). Captured in one piece beyond the viewport, not stitched from scrolled screens, so fixed and sticky
 * elements appear once, where they are with the page at its top.
 */
export async function captureFullPage(
  page: Page,
  world: IsolatedWorld,
  spec: CaptureSpec,
  encoding: Pick<ScreenshotOptions, 'quality' | 'optimizeForSpeed' | 'omitBackground'> & {
    type: ImageFormat;
  },
): Promise<CaptureResult> {
  const cap = Math.floor(heightCap(encoding.type) / spec.scale);
  const fullHeight = await loadLazyContent(page, world, cap);
  const height = Math.min(fullHeight, cap);
  await assertDeliverable({ width: spec.width, height, scale: spec.scale }, spec.url, encoding, (strip, as) =>
    page.screenshot({
      ...as,
      clip: { x: 0, width: spec.width, ...strip },
      captureBeyondViewport: true,
    }),
  );
  const image = await page.screenshot({
    ...encoding,
    clip: { x: 0, y: 0, width: spec.width, height },
    captureBeyondViewport: true,
  });
  return {
    image: Buffer.from(image),
    contentType: CAPTURE_CONTENT_TYPES[encoding.type],
    truncated: fullHeight > cap,
  };
}
