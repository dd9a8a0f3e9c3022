import type { OwnerCredits } from '../keys/ownerCredits';
import type { CreditEpoch } from './creditEpoch';
import type { CreditReservation } from './creditReservation';

/**
 * The largest balance: every balance is a whole number from 0 to this, so it is exact in JavaScript and in JSON.
 * Operator changes that would pass it are refused (BalanceOverflowError).
 */
export const MAX_BALANCE = Number.MAX_SAFE_INTEGER;

export type { CreditEpoch } from './creditEpoch';

/** Port for account credit balances. Every change is a single atomic, conditional write. */
export interface CreditLedger extends OwnerCredits {
  /**
   * Takes `cost` credits, or throws InsufficientCreditsError with the balance at that moment; answers their epoch.
   * With `hold` (a synchronous capture), they are kept as a reservation until settled, and the account's lapsed
   * reservations are given back on the way (CreditReservation).
   */
  reserve(accountId: string, cost: number, hold?: ReservationHold): Promise<CreditEpoch>;
  /** A reserved capture was answered: its reservation goes, its credits stay spent. Nothing if it was settled. */
  chargeReservation(accountId: string, reservationId: string): Promise<void>;
  /**
   * Gives a reservation's credits back and removes it, in one write, unless it was settled before: whether they were
   * given (not when its epoch is over; it goes all the same).
   */
  refundReservation(accountId: string, reservation: CreditReservation): Promise<boolean>;
  /** Gives back what reserve took (a failed capture costs nothing), unless the balance was set since. */
  refund(accountId: string, cost: number, epoch?: CreditEpoch): Promise<void>;
  /**
   * `refund`, at most once per `refundId`, however often it is called: false when that refund was given before, or
   * the balance was set since its epoch (nothing given). The account keeps a mark of it until forgetRefund(), so a
   * process that died after giving it cannot give it twice.
   */
  refundOnce(accountId: string, cost: number, refundId: string, epoch?: CreditEpoch): Promise<boolean>;
  /** Drops the mark of a refund once nothing will ask for it again. */
  forgetRefund(accountId: string, refundId: string): Promise<void>;
  /**
   * Operator tool: adds (or with a negative amount, removes, never below zero) credits; returns the new balance.
   * Throws BalanceOverflowError, changing nothing, when the balance would pass MAX_BALANCE.
   */
  add(accountId: string, amount: number): Promise<number>;
  /** Operator tool: sets the balance (0 to MAX_BALANCE, else BalanceOverflowError) in a new epoch; returns it. */
  set(accountId: string, amount: number): Promise<number>;
}

/** What `reserve` keeps of a synchronous capture's credits: the reservation's id and lapse, and the time it is now. */
export interface ReservationHold {
  id: string;
  until: number;
  /** What lapsed reservations are judged by. */
  now: number;
}
