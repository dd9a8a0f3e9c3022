import { randomBytes } from 'node:crypto';
import type { CreditEpoch } from './creditEpoch';

/**
 * A synchronous capture's credits, held on the account from its admission until its answer is settled: charged once
 * the client has the image (or the cache keeps it), given back when it fails or is not delivered. A front that dies
 * in between settles nothing; the reservation then lapses at `until`, and whoever next looks at the account (an
 * admission, the balance's read) gives its credits back (docs/data-model.md, "Credit reservations"). Every way out
 * removes it in the same conditional write that settles it, so its credits are given back at most once.
 */
export interface CreditReservation {
  id: string;
  cost: number;
  /** When nobody settled it any more (ms): past any front's life. */
  until: number;
  /** The balance's epoch it was taken in: a balance an operator set since gets nothing back. */
  epoch: CreditEpoch;
}

/**
 * How long after its capture's deadline a live front has surely settled the answer, deployed: its function is
 * stopped 3 s after (RESPONSE_RESERVE_MS), and the charge runs before that. A reservation lapses then, so that only a
 * dead front's do; kept long, as whoever reaps it reads another instance's clock. The local server, whose slowest
 * delivery takes far longer, gives its own (`answeredWithinMs`, local/httpAdapter.ts).
 */
export const ANSWERED_WITHIN_MS = 10 * 60_000;

/**
 * The id carries what the reaper needs, as the epoch is copied into the reservation on the store's side (a reserving
 * write cannot know it in advance): `<until, base 36>.<cost>.<48 random bits>`.
 */
export function newReservationId(cost: number, until: number): string {
  return `${until.toString(36)}.${cost}.${randomBytes(6).toString('hex')}`;
}

/** The reservation an id and epoch name, or undefined when the id is not one newReservationId made. */
export function reservationOf(id: string, epoch: CreditEpoch): CreditReservation | undefined {
  const match = RESERVATION_ID.exec(id);
  if (!match?.[1] || !match[2]) return undefined;
  return { id, until: Number.parseInt(match[1], 36), cost: Number(match[2]), epoch };
}

const RESERVATION_ID = /^([0-9a-z]{1,12})\.(\d{1,16})\.[0-9a-f]{12}$/;

/** Of the reservations an account holds, those whose front is gone; a few per look, oldest first. */
export function lapsedReservations(held: CreditReservation[], now: number): CreditReservation[] {
  return held
    .filter((reservation) => reservation.until <= now)
    .sort((a, b) => a.until - b.until)
    .slice(0, MAX_REAPED_PER_LOOK);
}

/** Bounds the writes one look may make: the rest wait for the next. */
const MAX_REAPED_PER_LOOK = 10;
