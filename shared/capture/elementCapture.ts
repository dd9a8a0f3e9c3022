import type { Page } from 'puppeteer-core';
import { CaptureFailedError } from '../errors';
import { assertDeliverable, type ImageEncoding } from './oversizedImage';
import { elementBox, type IsolatedWorld, type PageBox } from './pageScripts';
import { CAPTURE_CONTENT_TYPES, type CaptureResult, type CaptureSpec, heightCap } from './renderer';

/**
 * The first element matching `selector`, captured alone: its border box, scrolled into view, at the page's scale.
 * An element larger than the format's cap (in image pixels, either way) is cut at the cap, from its top left, and
 * reported truncated, as a full page is. The box is measured once and that region of the page captured: the page may
 * change the element meanwhile (the strips of a large one resize its view), and puppeteer's element screenshot,
 * which measures again, then failed as ours (red team).
 */
export async function captureElement(
  page: Page,
  world: IsolatedWorld,
  spec: CaptureSpec,
  selector: string,
  encoding: ImageEncoding,
): Promise<CaptureResult> {
  const shown = JSON.stringify(selector);
  // The selector was read by the browser's parser before navigation (selectorCheck.ts).
  const found = await elementBox(world, selector);
  if (!found) throw new CaptureFailedError(spec.url, `No element matches the selector ${shown}`, 'page');
  const box = withinPage(found);
  // At least a whole pixel of the image either way: a smaller clip (an element scaled to 0.001) Chromium refuses, which
  // failed the capture as ours (red team).
  if (!(box.width * spec.scale >= 1 && box.height * spec.scale >= 1)) {
    throw new CaptureFailedError(spec.url, `The element matching ${shown} has no visible box`, 'page');
  }
  const cap = heightCap(encoding.type) / spec.scale;
  const width = Math.min(box.width, cap);
  const height = Math.min(box.height, cap);
  const shot = (clip: { y: number; height: number }, as = encoding) =>
    page.screenshot({
      ...as,
      captureBeyondViewport: true,
      clip: { x: box.x, y: box.y + clip.y, width, height: clip.height },
    });
  await assertDeliverable({ width, height, scale: spec.scale }, spec.url, encoding, shot);
  const image = await shot({ y: 0, height });
  return {
    image: Buffer.from(image),
    contentType: CAPTURE_CONTENT_TYPES[encoding.type],
    truncated: width < box.width || height < box.height,
  };
}

/**
 * The part of a box the page can show: an element placed above or left of all the page can scroll to (`top: -100px`,
 * a negative margin) is drawn only from there on. A clip starting before it was moved there whole, and showed the
 * region below and right of the element too (red team, round 23).
 */
function withinPage(box: PageBox): PageBox {
  const x = Math.max(0, box.x);
  const y = Math.max(0, box.y);
  return { x, y, width: box.width - (x - box.x), height: box.height - (y - box.y) };
}
