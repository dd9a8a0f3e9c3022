import type { Page, ScreenshotOptions } from 'puppeteer-core';
import { type CaptureResult, type CaptureSpec, heightCap } from './renderer';

/** Bounds of the lazy-content pass: how far it scrolls, and how long it waits for the images it started. */
export const LAZY_SCROLL_LIMIT_PX = 50_000;
export const LAZY_IMAGE_WAIT_MS = 3_000;

/**
 * Makes lazy content load before a full-page capture: native lazy images become eager, the page is scrolled through
 * once, a viewport at a time, letting two frames pass at each step so that IntersectionObserver callbacks and
 * scroll-driven loaders (lazysizes, vanilla-lazyload) run and start their images; then it returns to the top, and
 * the images still loading get a bounded wait. Kept as source text, not a function: a transpiler that keeps names
 * (tsx, which `npm start` runs) would otherwise wrap the inner functions in a `__name` helper that does not exist
 * in the page, and every full-page capture would fail.
 */
const LOAD_LAZY_CONTENT = `(async () => {
  for (const img of Array.from(document.images)) if (img.loading === 'lazy') img.loading = 'eager';
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
  const step = Math.max(window.innerHeight, 200);
  for (let y = 0; y < document.documentElement.scrollHeight && y < ${LAZY_SCROLL_LIMIT_PX}; y += step) {
    window.scrollTo(0, y);
    await frame();
    await frame();
  }
  window.scrollTo(0, document.documentElement.scrollHeight);
  await frame();
  await frame();
  window.scrollTo(0, 0);
  await frame();
  const started = (img) => !img.complete && (img.currentSrc || img.src);
  const pending = Array.from(document.images).filter(started);
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
 * The whole scrollable page, up to the format's height cap (in image pixels, so fewer CSS pixels at a higher
 * scale). Captured in one piece beyond the viewport, not stitched from scrolled screens, so fixed and sticky
 * elements appear once, where they are with the page at its top.
 */
export async function captureFullPage(
  page: Page,
  spec: CaptureSpec,
  encoding: Pick<ScreenshotOptions, 'type' | 'quality' | 'optimizeForSpeed'>,
): Promise<CaptureResult> {
  await page.evaluate(LOAD_LAZY_CONTENT);
  const fullHeight = await page.evaluate(() =>
    Math.max(document.documentElement.scrollHeight, document.body?.scrollHeight ?? 0, window.innerHeight),
  );
  const cap = Math.floor(heightCap(spec.format) / spec.scale);
  const height = Math.min(fullHeight, cap);
  const image = await page.screenshot({
    ...encoding,
    clip: { x: 0, y: 0, width: spec.width, height },
    captureBeyondViewport: true,
  });
  return { image: Buffer.from(image), truncated: fullHeight > cap };
}
