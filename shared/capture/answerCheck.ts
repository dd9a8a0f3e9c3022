import { isUtf8 } from 'node:buffer';
import { imageSize } from 'image-size';
import {
  CAPTURE_CONTENT_TYPES,
  type CaptureResult,
  type CaptureSpec,
  heightCap,
  type ImageFormat,
  isContentFormat,
} from './renderer';
import { GarbledAnswerError } from './rendererProtocol';

/** The name image-size gives each image format it reads from the bytes' own signature. */
const SIZE_TYPES: Record<ImageFormat | 'avif', string> = {
  png: 'png',
  jpeg: 'jpg',
  webp: 'webp',
  avif: 'avif',
};
const PDF_SIGNATURE = '%PDF-';
/** Chromium rounds a clip at fractional CSS pixels out to whole image pixels. */
const ROUNDING_PX = 1;

/**
 * Whether what a renderer answered can be what the front asked for, judged only from the spec and the bytes: a
 * renderer taken over chooses neither what the front serves nor how much it decodes. The type is the format's (an
 * SVG or HTML declared instead would run script on our origin, and on the bucket's once stored); the bytes start as
 * that format does (image-size reads the signature and the header only), text is UTF-8, and an image is no larger
 * than the spec allows (whatever later reads its pixels, a tiny file declaring 16,000 px squared would take
 * gigabytes). Throws GarbledAnswerError otherwise.
 */
export function checkAnswer(spec: CaptureSpec, result: CaptureResult): void {
  const { format } = spec;
  if (result.contentType !== CAPTURE_CONTENT_TYPES[format]) {
    throw new GarbledAnswerError('the answer is not of the format asked for');
  }
  if (isContentFormat(format)) {
    if (!isUtf8(result.image)) throw new GarbledAnswerError('the text is not UTF-8');
    return;
  }
  if (result.image.length === 0) throw new GarbledAnswerError('an empty image');
  if (format === 'pdf') {
    if (result.image.toString('latin1', 0, PDF_SIGNATURE.length) !== PDF_SIGNATURE) {
      throw new GarbledAnswerError('the bytes are not a PDF');
    }
    return;
  }
  let size: ReturnType<typeof imageSize>;
  try {
    size = imageSize(result.image);
  } catch {
    throw new GarbledAnswerError('the bytes are no image');
  }
  if (size.type !== SIZE_TYPES[format]) throw new GarbledAnswerError(`the bytes are not a ${format}`);
  const largest = largestImage(spec);
  if (size.width > largest.width || size.height > largest.height) {
    throw new GarbledAnswerError('the image is larger than the capture asked for');
  }
}

/**
 * The largest image an honest renderer makes of the spec, in image pixels: the viewport times the scale, a full
 * page as wide and up to the format's height cap, a single element up to the cap both ways (elementCapture.ts).
 */
function largestImage(spec: CaptureSpec): { width: number; height: number } {
  const cap = heightCap(spec.format) + ROUNDING_PX;
  if (spec.selector !== undefined) return { width: cap, height: cap };
  const scaled = (length: number) => Math.ceil(length * spec.scale) + ROUNDING_PX;
  return { width: scaled(spec.width), height: spec.fullPage ? cap : scaled(spec.height) };
}
