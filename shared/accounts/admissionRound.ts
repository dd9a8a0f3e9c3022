import { InsufficientCreditsError, RateLimitedError, TooManyCapturesError } from '../errors';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import type { CaptureSlots, SlotPool } from './captureSlots';
import type { CreditEpoch, CreditLedger, ReservationHold } from './creditLedger';
import { ANSWERED_WITHIN_MS, type CreditReservation, newReservationId } from './creditReservation';
import type { RateLimitDecision, RateLimiter } from './rateLimiter';

/** What one request asks of admission, all decided in one round (docs/api.md 5.4, steps 2, 2b and 4). */
export interface AdmissionAsk {
  identity: KeyIdentity;
  /** The window it counts against: the account's API window, or its key's own signed-link budget. */
  budget: 'api' | 'signedLink';
  now: number;
  /**
   * `{ until }`: take one of the account's capture slots until then (a capture starting now). `check`: refuse when no
   * slot is free but take none (a body that will be refused with 400: the slot's 429 comes first). `none`: a cache
   * hit, or a job accepted now whose worker takes its slot later (CaptureSlots.acquire).
   */
  slot: { until: number } | 'check' | 'none';
  /**
   * Credits to reserve; absent when nothing is charged (a cache hit, an invalid body). With a slot taken (a capture
   * starting now), they are held as a reservation until its answer is settled (CreditReservation).
   */
  cost?: number;
  /**
   * With such a reservation: how long after the slot's `until` (the capture's deadline) its answer may still be on
   * its way to the client; the reservation lapses then. ANSWERED_WITHIN_MS (deployed) unless the transport says.
   */
  answeredWithinMs?: number;
  /** Requests counted against the window, all or none: a batch's captures (1 by default). */
  requests?: number;
}

/**
 * The verdict, read in the order of checks: refused by the rate limit (nothing counted or taken), by the slots or by
 * the credits (counted against the window, nothing else taken), or admitted holding what was asked (the lease, the
 * reserved credits).
 */
export type AdmissionVerdict =
  | {
      admitted: true;
      rateLimit: RateLimitDecision;
      /** The balance's epoch the credits were reserved in, which their refund names (CreditEpoch). */
      creditEpoch: CreditEpoch;
      /** With a slot taken: the lease, and whether the account held no other slot (SlotLease.newcomer). */
      leaseId?: string;
      newcomer?: boolean;
      /** With a slot taken and a cost: the credits' reservation, which the capture's answer settles. */
      reservation?: CreditReservation;
    }
  | {
      admitted: false;
      rateLimit: RateLimitDecision;
      refusal: RateLimitedError | TooManyCapturesError | InsufficientCreditsError;
    };

/**
 * Port for the admission round of a screenshot request: the rate limit, the capture slot, the credit reservation and
 * the key's lastUsed, in one round trip to the store. A store failure throws, after undoing what the round took.
 */
export interface AdmissionRound {
  /** How many slots one account may hold at once. */
  readonly slotLimit: number;
  admit(ask: AdmissionAsk): Promise<AdmissionVerdict>;
  /** Gives a slot back, as CaptureSlots.release does; never throws (a lease not given back lapses on its own). */
  release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void>;
  /**
   * Takes one of the account's slots until `until`, for nobody to give back: the penalty of a capture whose slot went
   * back before it ended free (its client hung up while the image was encoded or sent). Nothing when every slot is
   * taken; never throws.
   */
  holdSlot(accountId: string, now: number, until: number, pool?: SlotPool): Promise<void>;
}

export interface AdmissionPorts {
  keys: Pick<KeyStore, 'touchLastUsed'>;
  rateLimiter: RateLimiter;
  signedLinkBudget: RateLimiter;
  credits: CreditLedger;
  captureSlots: CaptureSlots;
}

/**
 * The admission round over the separate ports, each asked at once and the round's verdict read from their answers in
 * the order of checks; what a refused request took is given back. The in-memory ports of the rule tests use it; the
 * DynamoDB store has its own (shared/store/dynamoAdmissionRound.ts), which writes the account's item once.
 */
export function admissionOverPorts(ports: AdmissionPorts): AdmissionRound {
  const release = async (accountId: string, leaseId: string, penaltyUntil?: number) => {
    await ports.captureSlots
      .release(accountId, leaseId, penaltyUntil)
      .catch((error) => logger.warn('Capture slot not released', { error }));
  };
  return {
    slotLimit: ports.captureSlots.limit,
    release,
    async holdSlot(accountId, now, until, pool) {
      await ports.captureSlots
        .acquire(accountId, now, until, pool)
        .catch((error) => logger.warn('Capture slot not held', { error }));
    },
    async admit(ask) {
      const { accountId, keyId } = ask.identity;
      const { slot, cost } = ask;
      const hold = reservationHold(ask);
      const [decision, lease, reservation] = await Promise.allSettled([
        ask.budget === 'signedLink'
          ? ports.signedLinkBudget.hit(keyId, ask.now, ask.requests)
          : ports.rateLimiter.hit(accountId, ask.now, ask.requests),
        slot === 'none'
          ? undefined
          : ports.captureSlots.acquire(accountId, ask.now, slotEnd(slot, ask.now), ask.budget),
        cost === undefined ? undefined : ports.credits.reserve(accountId, cost, hold),
        ports.keys
          .touchLastUsed(ask.identity, ask.now)
          .catch((error) => logger.warn('lastUsed not recorded', { error })),
      ]);
      const taken = lease.status === 'fulfilled' ? lease.value : undefined;
      const leaseId = taken?.leaseId;
      const epoch = reservation.status === 'fulfilled' ? reservation.value : undefined;
      const held: CreditReservation | undefined =
        hold && epoch !== undefined && cost !== undefined
          ? { id: hold.id, until: hold.until, cost, epoch }
          : undefined;
      /** Gives back what a refused request took. */
      const undo = async () => {
        await Promise.all([
          leaseId !== undefined && release(accountId, leaseId),
          held
            ? ports.credits.refundReservation(accountId, held)
            : epoch !== undefined && cost !== undefined && ports.credits.refund(accountId, cost, epoch),
        ]);
      };
      const refuse = async (rateLimit: RateLimitDecision, refusal: Refusal): Promise<AdmissionVerdict> => {
        await undo();
        return { admitted: false, rateLimit, refusal };
      };
      const fail = async (error: unknown): Promise<never> => {
        await undo();
        throw error;
      };
      if (decision.status === 'rejected') return fail(decision.reason);
      const rateLimit = decision.value;
      if (!rateLimit.allowed)
        return refuse(rateLimit, new RateLimitedError(rateLimit.limit, rateLimit.reset));
      if (lease.status === 'rejected') return fail(lease.reason);
      if (slot !== 'none' && leaseId === undefined)
        return refuse(rateLimit, new TooManyCapturesError(ports.captureSlots.limit, ask.now));
      if (reservation.status === 'rejected') {
        if (reservation.reason instanceof InsufficientCreditsError)
          return refuse(rateLimit, reservation.reason);
        return fail(reservation.reason);
      }
      if (slot === 'check' && leaseId !== undefined) await release(accountId, leaseId);
      // Nothing reserved (a cache hit, an invalid body): whatever epoch, as nothing will be given back.
      const creditEpoch = epoch ?? 0;
      if (typeof slot !== 'object' || taken === undefined) return { admitted: true, rateLimit, creditEpoch };
      const { newcomer } = taken;
      return {
        admitted: true,
        rateLimit,
        creditEpoch,
        leaseId,
        newcomer,
        ...(held ? { reservation: held } : {}),
      };
    },
  };
}

type Refusal = RateLimitedError | TooManyCapturesError | InsufficientCreditsError;

/** The reservation a capture starting now keeps its credits in, or undefined when none is asked for. */
export function reservationHold(ask: AdmissionAsk): ReservationHold | undefined {
  if (typeof ask.slot !== 'object' || ask.cost === undefined) return undefined;
  const until = ask.slot.until + (ask.answeredWithinMs ?? ANSWERED_WITHIN_MS);
  return { id: newReservationId(ask.cost, until), until, now: ask.now };
}

/** Until when a slot is held: a check takes one only for the moment it is given back. */
function slotEnd(slot: { until: number } | 'check', now: number): number {
  return slot === 'check' ? now + 1 : slot.until;
}
