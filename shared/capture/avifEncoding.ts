import PQueue from 'p-queue';
import { CaptureFailedError } from '../errors';
import { logger } from '../logger';
import { CAPTURE_CONTENT_TYPES, heightCap, type Renderer } from './renderer';

/**
 * libaom's fastest setting. Its default (4) takes 3-5 s for a 1920x1080 screenshot on two cores, far beyond the
 * capture itself; 0 takes about a tenth of that, for files about twice as large as effort 4's (docs/performance.md).
 */
export const AVIF_EFFORT = 0;

/**
 * The most pixels an AVIF is encoded from: the API's largest image at scale 1 (3,840 x 16,384). libaom needs about 25
 * bytes a pixel at effort 0 (1.6 GB for this many, measured), and the renderer function holds Chromium beside it in
 * its 3,008 MB (red team: 11,520 x 16,384, a full page at scale 3, took 4.5 GB). A larger image is cut to the rows
 * that fit, as a full page is at its height cap, and reported truncated.
 */
export const AVIF_MAX_PIXELS = 3_840 * heightCap('avif');

/**
 * The largest PNG the browser can give (an element cut at the cap on both sides), above sharp's default input limit of
 * 16,383 squared, so that it is cut rather than refused.
 */
const LARGEST_INPUT_PIXELS = heightCap('png') ** 2;

/**
 * The renderer that answers AVIF: it asks `browser` for the PNG and encodes that here, in the renderer's box, once
 * the browser's tab is given back. So the front never runs a native decoder on bytes a taken-over renderer chose:
 * it reads only their header, in JavaScript (answerCheck.ts).
 */
export function withAvifEncoding(browser: Renderer, maxPixels = AVIF_MAX_PIXELS): Renderer {
  return {
    async capture(spec, limits) {
      if (spec.format !== 'avif') return browser.capture(spec, limits);
      const png = await browser.capture({ ...spec, format: 'png' }, limits);
      const capture = { url: spec.url, deadline: limits.deadline };
      const avif = await encodeAvif(png.image, spec.quality, capture, maxPixels);
      return {
        ...png,
        image: avif.image,
        contentType: CAPTURE_CONTENT_TYPES.avif,
        truncated: png.truncated || avif.cut,
      };
    },
    warmUp: () => browser.warmUp(),
    settle: () => browser.settle(),
    close: () => browser.close(),
  };
}

/**
 * One AVIF encoding at a time in a renderer process: each may take up to 1.6 GB (AVIF_MAX_PIXELS). Deployed, a renderer
 * instance runs one capture at a time anyway; locally one process runs several, and six encodings at once would want
 * about 10 GB. An encoding keeps its place until libaom is done, whatever its capture's deadline: the encoder never
 * stops early (below), and one started beside it would double the memory (red team).
 */
const encodings = new PQueue({ concurrency: 1 });

/**
 * The fewest pixels a second libaom encodes at effort 0 on a renderer's two cores, for the image that takes it longest:
 * noise in all four channels (a transparent capture, `omitBackground`) at quality 100, 0.92 million a second on this
 * project's shared machines (opaque noise at quality 80: 2.3 to 2.65 million), halved for a loaded machine. libaom
 * never looks at a timeout once it encodes a frame (sharp's `timeout` is checked between libvips' steps only), so the
 * rows encoded are cut to what this rate fits in the time left: the encoding ends by the capture's deadline (red team:
 * a page of noise encoded for 27 s past a 4 s deadline; with the rate measured on opaque noise only, transparent
 * noise at quality 100 still ran 5 s past).
 */
export const AVIF_WORST_PIXELS_PER_SECOND = 450_000;

/**
 * AVIF from a PNG, at the same pixel size and with its alpha, its rows cut to `maxPixels`, and to what can be encoded
 * in the time left (`cut` says so). Chroma is subsampled 4:2:0, as Chromium's own JPEG and WebP are. The library is
 * loaded on the first AVIF, not at every cold start. An encoding that still outruns the deadline is the page's failure
 * (its image was the work); a capture whose deadline passes while it waits for another's encoding fails as ours.
 */
export async function encodeAvif(
  png: Buffer,
  quality: number,
  capture: { url: string; deadline: number },
  maxPixels = AVIF_MAX_PIXELS,
): Promise<{ image: Buffer; cut: boolean }> {
  const { default: sharp } = await import('sharp').catch((error: unknown) => {
    logger.error('AVIF encoder not available', { error: error as Error });
    throw new CaptureFailedError(capture.url, 'AVIF encoding is not available in this deployment');
  });
  const outOfTime = (fault: 'page' | 'service') =>
    new CaptureFailedError(
      capture.url,
      `The AVIF could not be encoded within the capture's time budget`,
      fault,
    );
  let started = false;
  const encode = async () => {
    started = true;
    const seconds = (capture.deadline - Date.now()) / 1000;
    if (seconds < 1) throw new CaptureFailedError(capture.url, 'No time was left to encode the AVIF');
    const input = () => sharp(png, { limitInputPixels: LARGEST_INPUT_PIXELS });
    const { width = 1, height = 1 } = await input().metadata();
    const budget = Math.min(maxPixels, Math.floor(seconds * AVIF_WORST_PIXELS_PER_SECOND));
    const rows = Math.max(1, Math.min(height, Math.floor(budget / width)));
    const cut = rows < height;
    const image = await (cut ? input().extract({ left: 0, top: 0, width, height: rows }) : input())
      .avif({ quality, effort: AVIF_EFFORT, chromaSubsampling: '4:2:0' })
      .toBuffer();
    if (Date.now() > capture.deadline) throw outOfTime('page');
    return { image, cut };
  };
  // Waiting for another capture's encoding ends at this one's deadline; its own, once started, is bounded above.
  const queued = encodings.add(encode);
  let timer: NodeJS.Timeout | undefined;
  const waitedTooLong = new Promise<never>((_, reject) => {
    const expire = () => {
      if (!started) reject(outOfTime('service'));
    };
    timer = setTimeout(expire, Math.max(0, capture.deadline - Date.now()));
  });
  try {
    return await Promise.race([queued, waitedTooLong]);
  } finally {
    clearTimeout(timer);
    queued.catch(() => undefined);
  }
}
