import { CaptureFailedError } from '../errors';
import { logger } from '../logger';
import { CAPTURE_CONTENT_TYPES, type Renderer } from './renderer';

/**
 * libaom's fastest setting. Its default (4) takes 3-5 s for a 1920x1080 screenshot on two cores, far beyond the
 * capture itself; 0 takes about a tenth of that, for files about twice as large as effort 4's (docs/performance.md).
 */
export const AVIF_EFFORT = 0;

/**
 * The renderer that answers AVIF: it asks `browser` for the PNG and encodes that here, in the renderer's box, once
 * the browser's tab is given back. So the front never runs a native decoder on bytes a taken-over renderer chose:
 * it reads only their header, in JavaScript (answerCheck.ts).
 */
export function withAvifEncoding(browser: Renderer): Renderer {
  return {
    async capture(spec, limits) {
      if (spec.format !== 'avif') return browser.capture(spec, limits);
      const png = await browser.capture({ ...spec, format: 'png' }, limits);
      const image = await encodeAvif(png.image, spec.quality, { url: spec.url, deadline: limits.deadline });
      return { ...png, image, contentType: CAPTURE_CONTENT_TYPES.avif };
    },
    warmUp: () => browser.warmUp(),
    settle: () => browser.settle(),
    close: () => browser.close(),
  };
}

/**
 * AVIF from a PNG, at the same pixel size and with its alpha. Chroma is subsampled 4:2:0, as Chromium's own JPEG and
 * WebP are. The library is loaded on the first AVIF, not at every cold start. The encoding is part of the capture:
 * it stops at the capture's deadline, which fails the capture.
 */
export async function encodeAvif(
  png: Buffer,
  quality: number,
  capture: { url: string; deadline: number },
): Promise<Buffer> {
  const { default: sharp } = await import('sharp').catch((error: unknown) => {
    logger.error('AVIF encoder not available', { error: error as Error });
    throw new CaptureFailedError(capture.url, 'AVIF encoding is not available in this deployment');
  });
  const seconds = Math.floor((capture.deadline - Date.now()) / 1000);
  if (seconds < 1) throw new CaptureFailedError(capture.url, 'No time was left to encode the AVIF');
  return sharp(png)
    .timeout({ seconds })
    .avif({ quality, effort: AVIF_EFFORT, chromaSubsampling: '4:2:0' })
    .toBuffer()
    .catch((error: unknown) => {
      if (error instanceof Error && /timeout/i.test(error.message)) {
        throw new CaptureFailedError(
          capture.url,
          `The AVIF could not be encoded within the capture's time budget`,
        );
      }
      throw error;
    });
}
