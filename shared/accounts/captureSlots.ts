/**
 * Port for the slots captures run in (docs/api.md, "Concurrent captures" and "Fair sharing of capture capacity"):
 * a per-account bound and, where configured, the capacity all accounts share. A slot is a lease: it is given back
 * when the capture ends, and lapses on its own at `expiresAt`, so a function that died mid-capture cannot keep it.
 */
export interface CaptureSlots {
  /** How many slots one account may hold at once. */
  readonly limit: number;
  /**
   * Takes one of the account's slots (and one of the shared capacity) until `expiresAt` (ms since epoch); the lease
   * id, or undefined when the account's bound or the fair share of the capacity says no.
   */
  acquire(accountId: string, now: number, expiresAt: number): Promise<string | undefined>;
  /**
   * Gives the slot back; releasing a lease that already lapsed changes nothing. With `penaltyUntil` (a capture that
   * ran out of its time budget), the shared capacity is freed at once but the account's slot stays taken until then.
   */
  release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void>;
}
