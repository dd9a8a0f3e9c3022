import { CaptureFailedError } from '../errors';
import { logger } from '../logger';

/**
 * libaom's fastest setting. Its default (4) takes 3-5 s for a 1920x1080 screenshot on two cores, far beyond the
 * capture itself; 0 takes about a tenth of that, for files about twice as large as effort 4's (docs/performance.md).
 */
export const AVIF_EFFORT = 0;

/**
 * AVIF from the PNG the renderer captured, at the same pixel size and with its alpha. Encoded here, in the front,
 * not in the renderer: the encoder is a native library the browser's process has no need of. Chroma is subsampled
 * 4:2:0, as Chromium's own JPEG and WebP are. The library is loaded on the first AVIF, not at every cold start.
 */
export async function encodeAvif(png: Buffer, quality: number, url: string): Promise<Buffer> {
  const { default: sharp } = await import('sharp').catch((error: unknown) => {
    logger.error('AVIF encoder not available', { error: error as Error });
    throw new CaptureFailedError(url, 'AVIF encoding is not available in this deployment');
  });
  return sharp(png).avif({ quality, effort: AVIF_EFFORT, chromaSubsampling: '4:2:0' }).toBuffer();
}
