/** Credit tiers (docs/api.md): the highest that applies, never a sum. */
export const HIGH_RESOLUTION_THRESHOLD = 2560;

export interface CostedCapture {
  width: number;
  height: number;
  fullPage: boolean;
  /** Device pixel ratio: the image has width × scale pixels across. */
  scale: number;
}

/**
 * Tiers on the image's pixel size: the viewport times `scale` above the threshold is high resolution (3), whatever
 * else is asked; otherwise a full page is 2, and a viewport or a single element (`selector`, which never goes with
 * `fullPage`) is 1.
 */
export function creditCost(capture: CostedCapture): number {
  const pixelWidth = capture.width * capture.scale;
  const pixelHeight = capture.height * capture.scale;
  if (pixelWidth > HIGH_RESOLUTION_THRESHOLD || pixelHeight > HIGH_RESOLUTION_THRESHOLD) return 3;
  return capture.fullPage ? 2 : 1;
}
