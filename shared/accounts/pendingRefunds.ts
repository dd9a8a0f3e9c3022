/** A refund that could not be written when its capture failed: credits owed to an account until an operator returns them. */
export interface PendingRefund {
  /** Sorts by the time of the failure. */
  id: string;
  accountId: string;
  cost: number;
  /** When the refund failed, ms since epoch. */
  failedAt: number;
}

/** What returning a pending refund did. */
export type RefundReturn =
  | { outcome: 'returned'; refund: PendingRefund; balance: number }
  /** The credits had been given back before (an earlier run stopped before removing the record); now removed. */
  | { outcome: 'alreadyReturned'; refund: PendingRefund }
  | { outcome: 'notFound' };

/** Port for failed refunds kept for an operator (docs/data-model.md, docs/deploy.md). */
export interface PendingRefunds {
  record(refund: Omit<PendingRefund, 'id'>): Promise<PendingRefund>;
  /** Oldest first. */
  list(): Promise<PendingRefund[]>;
  /** Gives the credits back to the account, exactly once however often it is called, and removes the record. */
  giveBack(id: string): Promise<RefundReturn>;
}
