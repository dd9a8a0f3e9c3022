import type { Page } from 'puppeteer-core';
import { assertDeliverable, type ImageEncoding } from './oversizedImage';
import { type IsolatedWorld, pageGeometry } from './pageScripts';
import { CAPTURE_CONTENT_TYPES, type CaptureResult, type CaptureSpec } from './renderer';
import { viewClip, viewStart } from './viewClip';

/**
 * What the view shows, `spec.width` x `spec.height` at `spec.scale`, taken as the view draws it (no clip, nothing
 * beyond the viewport). An image that could be too heavy is measured first in strips, each a clip placed on the page
 * where the view stands: a page scrolled (an anchor, its own script) would otherwise be measured where it is not
 * shown, or not at all.
 */
export async function captureView(
  page: Page,
  world: IsolatedWorld,
  spec: Pick<CaptureSpec, 'url' | 'width' | 'height' | 'scale'>,
  encoding: ImageEncoding,
): Promise<CaptureResult> {
  const { width, height, scale } = spec;
  await assertDeliverable({ width, height, scale }, spec.url, encoding, async (strip, as) => {
    const geometry = await pageGeometry(world);
    return page.screenshot({
      ...as,
      captureBeyondViewport: false,
      clip: viewClip(geometry, viewStart(geometry), strip, width),
    });
  });
  const image = await page.screenshot(encoding);
  return { image: Buffer.from(image), contentType: CAPTURE_CONTENT_TYPES[encoding.type], truncated: false };
}
