/**
 * What the account owner's routes need of the credit ledger: the one-time grant on first sign-in and the balance.
 * Declared here, beside its user, so key management depends on no more of the ledger than this
 * (accounts/creditLedger.ts extends it).
 */
export interface OwnerCredits {
  /** Gives the account its one-time free grant if it has never had it and no operator has set its balance. */
  grantFreeCreditsOnce(accountId: string, amount: number, now: number): Promise<void>;
  /** The balance, once the reservations of captures whose front is gone were given back (CreditReservation). */
  balance(accountId: string): Promise<number>;
}
