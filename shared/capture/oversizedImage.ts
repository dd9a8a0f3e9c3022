import type { ScreenshotOptions } from 'puppeteer-core';
import { CaptureFailedError } from '../errors';
import type { ImageFormat } from './renderer';
import { MAX_ANSWER_BYTES, tooLargeToDeliver } from './rendererProtocol';

/** What a renderer answers for an image heavier than the front takes: the page's failure, not ours. */
export const IMAGE_TOO_LARGE = tooLargeToDeliver('image');

/**
 * The most an image may weigh, at worst, to be taken in one screenshot without measuring it first. Chromium holds a
 * screenshot several times over while it makes it (pixels, PNG, base64), and one too large for the front is refused
 * only once it is whole (by the DevTools cap, devtoolsMessageCap.ts, which keeps it from killing the renderer
 * process); a region that could weigh more is measured in strips instead, so a giant image of noise costs a few
 * strips, not a browser-sized allocation.
 */
const ONE_SCREENSHOT_WORST_BYTES = 360 * 1024 * 1024;
/** An image of noise with an alpha channel: PNG's worst (JPEG and WebP weigh less). */
const WORST_BYTES_PER_PIXEL = 4;
/** Image pixels per measured strip: 128 MiB at worst, well inside one message. */
const STRIP_PIXELS = 2 ** 25;

/** A rectangle of the page in CSS pixels, captured at `scale` (the device pixel ratio). */
export interface CaptureRegion {
  width: number;
  height: number;
  scale: number;
}

/** How a screenshot is encoded, as puppeteer takes it. */
export type ImageEncoding = Pick<ScreenshotOptions, 'quality' | 'optimizeForSpeed' | 'omitBackground'> & {
  type: ImageFormat;
};

/**
 * Refuses, as the page's failure, an image that would weigh more than MAX_ANSWER_BYTES before it is taken, when
 * taking it in one piece could kill the renderer: only a region whose worst case passes ONE_SCREENSHOT_WORST_BYTES
 * (above 94 million image pixels: a viewport of 3840 x 3840 at scale 3, a full page 11,520 px wide) is measured,
 * in horizontal strips taken by `shootStrip` (y and height in CSS pixels, within the region, in the encoding it is
 * given), and given up on as soon as their sum is too heavy. One that passes is then taken whole, as any other: its
 * weight is the strips' sum, within a few per cent. A JPEG or WebP is measured first as the fastest PNG, which weighs
 * more than either: WebP's encoder is slow enough that the strips and the image, each encoded whole, ran past the time
 * budget of a plain page (red team, round 21); only a region that PNG finds too heavy is measured again as asked.
 */
export async function assertDeliverable(
  region: CaptureRegion,
  url: string,
  encoding: ImageEncoding,
  shootStrip: (strip: { y: number; height: number }, as: ImageEncoding) => Promise<Uint8Array>,
): Promise<void> {
  const rowPixels = region.width * region.scale * region.scale;
  if (rowPixels * region.height * WORST_BYTES_PER_PIXEL <= ONE_SCREENSHOT_WORST_BYTES) return;
  const stripHeight = Math.max(1, Math.floor(STRIP_PIXELS / rowPixels));
  const within = async (as: ImageEncoding) => {
    let bytes = 0;
    for (let y = 0; y < region.height; y += stripHeight) {
      bytes += (await shootStrip({ y, height: Math.min(stripHeight, region.height - y) }, as)).length;
      if (bytes > MAX_ANSWER_BYTES) return false;
    }
    return true;
  };
  const bound: ImageEncoding = {
    type: 'png',
    optimizeForSpeed: true,
    omitBackground: encoding.omitBackground,
  };
  if (encoding.type !== 'png' && (await within(bound))) return;
  if (!(await within(encoding))) throw new CaptureFailedError(url, IMAGE_TOO_LARGE, 'page');
}
