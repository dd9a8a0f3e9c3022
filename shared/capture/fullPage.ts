import type { Page, ScreenshotOptions } from 'puppeteer-core';
import { type CaptureResult, type CaptureSpec, heightCap } from './renderer';

/** Bounds of the lazy-content pass: how far it scrolls, and how long it waits for the images it started. */
export const LAZY_SCROLL_LIMIT_PX = 50_000;
export const LAZY_IMAGE_WAIT_MS = 3_000;

/** How long loaders that throttle their checks (lazysizes: 125 ms) get to see the whole page in view. */
export const THROTTLED_LOADER_WAIT_MS = 150;

/**
 * Scrolls the page through once, a viewport at a time, letting a frame pass at each step so that
 * IntersectionObserver callbacks and scroll-driven loaders run; native lazy images become eager first. Kept as
 * source text, not a function: a transpiler that keeps names (tsx, which `npm start` runs) would otherwise wrap the
 * inner functions in a `__name` helper that does not exist in the page, and every full-page capture would fail.
 */
const SCROLL_THROUGH = `(async () => {
  for (const img of Array.from(document.images)) if (img.loading === 'lazy') img.loading = 'eager';
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
  const step = Math.max(window.innerHeight, 200);
  for (let y = 0; y < document.documentElement.scrollHeight && y < ${LAZY_SCROLL_LIMIT_PX}; y += step) {
    window.scrollTo(0, y);
    await frame();
  }
  window.scrollTo(0, 0);
  await frame();
  return Math.max(document.documentElement.scrollHeight, document.body?.scrollHeight ?? 0, window.innerHeight);
})()`;

/** Waits, bounded, for the images that have started loading, then for a frame. */
const AWAIT_IMAGES = `(async () => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
  await frame();
  const pending = Array.from(document.images).filter((img) => !img.complete && (img.currentSrc || img.src));
  const loaded = Promise.all(
    pending.map(
      (img) =>
        new Promise((resolve) => {
          img.addEventListener('load', resolve, { once: true });
          img.addEventListener('error', resolve, { once: true });
        }),
    ),
  );
  await Promise.race([loaded, new Promise((resolve) => setTimeout(resolve, ${LAZY_IMAGE_WAIT_MS}))]);
  await frame();
})()`;

/**
 * Makes lazy content load before a full-page capture: the page is scrolled through once; then, for loaders that
 * check only now and then (lazysizes looks at most every 125 ms, so a quick scroll passes some images by), the
 * viewport is made as tall as the page for a moment, which puts every element in view at once; then the images
 * started get a bounded wait, with the viewport and the scroll position back as they were.
 */
async function loadLazyContent(page: Page, cap: number): Promise<number> {
  const fullHeight = (await page.evaluate(SCROLL_THROUGH)) as number;
  const viewport = page.viewport();
  if (viewport && fullHeight > viewport.height) {
    await page.setViewport({ ...viewport, height: Math.min(fullHeight, cap) });
    await new Promise((resolve) => setTimeout(resolve, THROTTLED_LOADER_WAIT_MS));
    await page.setViewport(viewport);
  }
  await page.evaluate(AWAIT_IMAGES);
  return page.evaluate(() =>
    Math.max(document.documentElement.scrollHeight, document.body?.scrollHeight ?? 0, window.innerHeight),
  );
}

/**
 * The whole scrollable page, up to the format's height cap (in image pixels, so fewer CSS pixels at a higher
 * scale). Captured in one piece beyond the viewport, not stitched from scrolled screens, so fixed and sticky
 * elements appear once, where they are with the page at its top.
 */
export async function captureFullPage(
  page: Page,
  spec: CaptureSpec,
  encoding: Pick<ScreenshotOptions, 'type' | 'quality' | 'optimizeForSpeed'>,
): Promise<CaptureResult> {
  const cap = Math.floor(heightCap(spec.format) / spec.scale);
  const fullHeight = await loadLazyContent(page, cap);
  const height = Math.min(fullHeight, cap);
  const image = await page.screenshot({
    ...encoding,
    clip: { x: 0, y: 0, width: spec.width, height },
    captureBeyondViewport: true,
  });
  return { image: Buffer.from(image), truncated: fullHeight > cap };
}
