/**
 * How the capture capacity is shared between accounts (docs/api.md, "Fair sharing of capture capacity"). `shared`
 * captures run for anyone, each account within its own bound; `headroom` more are kept for accounts that hold no
 * slot at all, so an account that fills the shared part cannot keep a newcomer waiting.
 */
export interface CaptureCapacity {
  shared: number;
  headroom: number;
}

/**
 * Whether one more capture may start, given how many run for all accounts and how many slots the account already
 * holds (running captures and penalties alike).
 */
export function mayStart(capacity: CaptureCapacity, running: number, accountHolds: number): boolean {
  return running < capacity.shared || (accountHolds === 0 && running < capacity.shared + capacity.headroom);
}

/**
 * The split of the reserved capture concurrency (everything that can capture at once deployed) into the shared
 * renderer's reservation and the headroom renderer's: a tenth, at least one, kept as headroom once there are two or
 * more. Deployed, Lambda enforces this rule itself: the front asks the shared renderer, and only a newcomer the
 * headroom one when the first is throttled (shared/capture/invokedRenderer.ts).
 */
export function capacityOfReserved(reserved: number): CaptureCapacity {
  const headroom = reserved >= 2 ? Math.max(1, Math.floor(reserved / 10)) : 0;
  return { shared: reserved - headroom, headroom };
}
