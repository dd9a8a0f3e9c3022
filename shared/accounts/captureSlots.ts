/**
 * Port for the per-account bound on captures running at once (docs/api.md, "Concurrent captures"). A slot is a
 * lease: it is given back when the capture ends, and lapses on its own at `expiresAt`, so a function that died
 * mid-capture cannot keep it.
 */
export interface CaptureSlots {
  /** How many captures one account may run at once. */
  readonly limit: number;
  /** Takes one of the account's slots until `expiresAt` (ms since epoch); the lease id, or undefined when all are held. */
  acquire(accountId: string, now: number, expiresAt: number): Promise<string | undefined>;
  /** Gives the slot back; releasing a lease that already lapsed changes nothing. */
  release(accountId: string, leaseId: string): Promise<void>;
}
