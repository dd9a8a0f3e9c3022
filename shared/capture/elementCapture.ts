import type { Page, ScreenshotOptions } from 'puppeteer-core';
import { CaptureFailedError } from '../errors';
import { assertDeliverable } from './oversizedImage';
import {
  CAPTURE_CONTENT_TYPES,
  type CaptureResult,
  type CaptureSpec,
  heightCap,
  type ImageFormat,
} from './renderer';

/**
 * The first element matching `selector`, captured alone: its border box, scrolled into view, at the page's scale.
 * An element larger than the format's cap (in image pixels, either way) is cut at the cap, from its top left, and
 * reported truncated, as a full page is.
 */
export async function captureElement(
  page: Page,
  spec: CaptureSpec,
  selector: string,
  encoding: Pick<ScreenshotOptions, 'quality' | 'optimizeForSpeed' | 'omitBackground'> & {
    type: ImageFormat;
  },
): Promise<CaptureResult> {
  const shown = JSON.stringify(selector);
  // The selector was read by the browser's parser before navigation (selectorCheck.ts).
  const element = await page.$(selector);
  if (!element) throw new CaptureFailedError(spec.url, `No element matches the selector ${shown}`, 'page');
  const box = await element.boundingBox();
  if (!box || box.width === 0 || box.height === 0) {
    throw new CaptureFailedError(spec.url, `The element matching ${shown} has no visible box`, 'page');
  }
  const cap = heightCap(encoding.type) / spec.scale;
  const width = Math.min(box.width, cap);
  const height = Math.min(box.height, cap);
  await assertDeliverable({ width, height, scale: spec.scale }, spec.url, (strip) =>
    element.screenshot({ ...encoding, captureBeyondViewport: true, clip: { x: 0, width, ...strip } }),
  );
  const image = await element.screenshot({
    ...encoding,
    captureBeyondViewport: true,
    ...(width < box.width || height < box.height ? { clip: { x: 0, y: 0, width, height } } : {}),
  });
  return {
    image: Buffer.from(image),
    contentType: CAPTURE_CONTENT_TYPES[encoding.type],
    truncated: width < box.width || height < box.height,
  };
}
