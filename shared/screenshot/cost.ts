import { isContentFormat, type OutputFormat } from '../capture/renderer';

/** Credit tiers (docs/api.md): the highest that applies, never a sum. */
export const HIGH_RESOLUTION_THRESHOLD = 2560;
/** A printed document, whatever its size. */
export const PDF_COST = 2;

export interface CostedCapture {
  format: OutputFormat;
  width: number;
  height: number;
  fullPage: boolean;
  /** Device pixel ratio: the image has width × scale pixels across. */
  scale: number;
}

/**
 * A PDF costs PDF_COST and a content format (Markdown, HTML) 1 credit, whatever the viewport. Images are priced in tiers on their pixel size: the viewport times `scale` above the threshold is high resolution (3), whatever
 * else is asked; otherwise a full page is 2, and a viewport or a single element (`selector`, which never goes with
 * `fullPage`) is 1.
 */
export function creditCost(capture: CostedCapture): number {
  if (capture.format === 'pdf') return PDF_COST;
  if (isContentFormat(capture.format)) return 1;
  const pixelWidth = capture.width * capture.scale;
  const pixelHeight = capture.height * capture.scale;
  if (pixelWidth > HIGH_RESOLUTION_THRESHOLD || pixelHeight > HIGH_RESOLUTION_THRESHOLD) return 3;
  return capture.fullPage ? 2 : 1;
}
