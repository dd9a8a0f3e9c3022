/** Credit tiers (docs/api.md): the highest that applies, never a sum. */
export const HIGH_RESOLUTION_THRESHOLD = 2560;

export function creditCost(capture: { width: number; height: number; fullPage: boolean }): number {
  if (capture.width > HIGH_RESOLUTION_THRESHOLD || capture.height > HIGH_RESOLUTION_THRESHOLD) return 3;
  return capture.fullPage ? 2 : 1;
}
