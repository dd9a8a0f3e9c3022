import { CaptureFailedError, CaptureTimedOutError, ClientGoneError } from '../errors';
import { TIMED_OUT_SLOT_PENALTY_MS } from '../timing';

/**
 * Until when a capture that ended free keeps its account's slot (docs/api.md 6.5, "Penalty"), or undefined to give
 * it back at once. A free capture still held a renderer: without a cost in slots, an account could keep its whole
 * share of the capacity busy for nothing (a long `delay` before a click that matches nothing, or a hang-up just
 * before the image). A time budget's end keeps it TIMED_OUT_SLOT_PENALTY_MS; any other failure of the page, or a
 * client that went away, as long again as the capture ran (asLongAgain); a failure of ours, not at all. A hang-up
 * keeps it at least until `rendererStopsBy` too: deployed, a renderer still capturing is not stopped by a hang-up and
 * may run until the capture's deadline, and a slot given back sooner would let the account run more renderers than it
 * has slots.
 */
export function slotPenaltyUntil(
  error: unknown,
  startedAt: number,
  endedAt: number,
  rendererStopsBy: number,
): number | undefined {
  if (error instanceof CaptureTimedOutError) return endedAt + TIMED_OUT_SLOT_PENALTY_MS;
  if (error instanceof ClientGoneError) return Math.max(asLongAgain(startedAt, endedAt), rendererStopsBy);
  if (error instanceof CaptureFailedError && error.fault === 'page') return asLongAgain(startedAt, endedAt);
  return undefined;
}

/** A free capture's slot time: as long again as it ran, at most TIMED_OUT_SLOT_PENALTY_MS. */
export function asLongAgain(startedAt: number, endedAt: number): number {
  return endedAt + Math.min(TIMED_OUT_SLOT_PENALTY_MS, Math.max(0, endedAt - startedAt));
}
