/**
 * Port for the account's capture slots (docs/api.md, "Concurrent captures"): a per-account bound. A slot is a lease:
 * it is given back when the capture ends, and lapses on its own at `expiresAt`, so a function that died mid-capture
 * cannot keep it. The capacity all accounts share is not kept here: deployed, the renderers' reserved concurrency
 * is it (shared/capture/invokedRenderer.ts); locally, the admission queue (local/admissionQueue.ts).
 */
export interface CaptureSlots {
  /** How many slots one account may hold at once. */
  readonly limit: number;
  /** Takes one of the account's slots until `expiresAt` (ms since epoch); undefined when the account's bound says no. */
  acquire(accountId: string, now: number, expiresAt: number): Promise<SlotLease | undefined>;
  /**
   * Gives the slot back; releasing a lease that already lapsed changes nothing. With `penaltyUntil` (a capture that
   * ended free: shared/accounts/slotPenalty.ts), the account's slot stays taken until then.
   */
  release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void>;
}

/** A slot taken. */
export interface SlotLease {
  leaseId: string;
  /**
   * The account held no other slot (running capture or penalty) when this one was taken: its capture may use the
   * headroom beyond the shared capacity (docs/api.md, "Fair sharing of capture capacity").
   */
  newcomer: boolean;
}
