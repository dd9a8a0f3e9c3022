import { randomBytes } from 'node:crypto';
import type { CreditEpoch } from './creditLedger';

/** A refund that could not be written when its capture failed: credits owed to an account until an operator returns them. */
export interface PendingRefund {
  /** Sorts by the time of the failure. */
  id: string;
  accountId: string;
  cost: number;
  /** When the refund failed, ms since epoch. */
  failedAt: number;
  /** The balance's epoch its credits were reserved in: a balance an operator set since gets nothing back. */
  creditEpoch?: CreditEpoch;
}

/** What returning a pending refund did. */
export type RefundReturn =
  | { outcome: 'returned'; refund: PendingRefund; balance: number }
  /** The credits had been given back before (an earlier run stopped before removing the record); now removed. */
  | { outcome: 'alreadyReturned'; refund: PendingRefund }
  /** The account's balance was set after the credits were reserved (an account cut off): nothing given; removed. */
  | { outcome: 'balanceSetSince'; refund: PendingRefund }
  | { outcome: 'notFound' };

/**
 * The id of a capture's refund, made before the refund is tried: the refund leaves it as its mark on the account, and
 * a pending refund keeps it, so returning that one can tell whether the first write landed after all. Time first
 * (fixed width base 36), so ids sort by the failure; 48 random bits keep concurrent ones apart.
 */
export function newRefundId(failedAt: number): string {
  return `rf_${failedAt.toString(36).padStart(9, '0')}${randomBytes(6).toString('hex')}`;
}

/** Port for failed refunds kept for an operator (docs/data-model.md, docs/deploy.md). */
export interface PendingRefunds {
  record(refund: PendingRefund): Promise<void>;
  /** Oldest first. */
  list(): Promise<PendingRefund[]>;
  /**
   * Gives the credits back to the account, exactly once however often it is called, and removes the record; nothing
   * when the refund's own first write landed after all (its mark is on the account: a write that timed out).
   */
  giveBack(id: string): Promise<RefundReturn>;
}
