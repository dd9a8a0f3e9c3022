import { randomUUID } from 'node:crypto';

/**
 * Port for the account's capture slots (docs/api.md, "Concurrent captures"): a per-account bound. A slot is a lease:
 * it is given back when the capture ends, and lapses on its own at `expiresAt`, so a function that died mid-capture
 * cannot keep it. The capacity all accounts share is not kept here: deployed, the renderers' reserved concurrency
 * is it (shared/capture/invokedRenderer.ts); locally, the admission queue (local/admissionQueue.ts).
 */
export interface CaptureSlots {
  /** How many slots one account may hold at once. */
  readonly limit: number;
  /**
   * Takes one of the account's slots until `expiresAt` (ms since epoch); undefined when the account's bound says no.
   * `signedLink`: for a signed link's capture, which may also hold no more than linkSlotLimit of them.
   */
  acquire(accountId: string, now: number, expiresAt: number, pool?: SlotPool): Promise<SlotLease | undefined>;
  /**
   * Gives the slot back; releasing a lease that already lapsed changes nothing. With `penaltyUntil` (a capture that
   * ended free: shared/accounts/slotPenalty.ts), the account's slot stays taken until then.
   */
  release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void>;
}

/** Whose capture takes a slot: an API key's (or a job's), or a signed link's, which has a bound of its own too. */
export type SlotPool = 'api' | 'signedLink';

/**
 * The slots an account's signed links may hold at once: all but one (one when the account has one). A link is public:
 * its visitors who hang up are refunded and still cost the account the slot for a while (slotPenalty.ts), so a
 * leaked link could otherwise keep every slot and lock its owner's API keys out (red team).
 */
export function linkSlotLimit(limit: number): number {
  return Math.max(1, limit - 1);
}

/** A lease id for `pool`: a signed link's says so, so that giving it back (or reaping it) frees the link's count too. */
export function newLeaseId(pool: SlotPool = 'api'): string {
  const id = randomUUID().replaceAll('-', '');
  return pool === 'signedLink' ? `${LINK_LEASE_PREFIX}${id}` : id;
}

/** The pool a lease was taken for, read from its id. */
export function poolOf(leaseId: string): SlotPool {
  return leaseId.startsWith(LINK_LEASE_PREFIX) ? 'signedLink' : 'api';
}

const LINK_LEASE_PREFIX = 'link';

/** A slot taken. */
export interface SlotLease {
  leaseId: string;
  /**
   * The account held no other slot (running capture or penalty) when this one was taken: its capture may use the
   * headroom beyond the shared capacity (docs/api.md, "Fair sharing of capture capacity").
   */
  newcomer: boolean;
}
