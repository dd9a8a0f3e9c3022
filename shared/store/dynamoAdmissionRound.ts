import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type AdmissionAsk,
  type AdmissionRound,
  type AdmissionVerdict,
  reservationHold,
} from '../accounts/admissionRound';
import { linkSlotLimit, newLeaseId, type SlotPool } from '../accounts/captureSlots';
import type { ReservationHold } from '../accounts/creditLedger';
import { RATE_WINDOW_MS, type RateLimitDecision, windowStart } from '../accounts/rateLimiter';
import { InsufficientCreditsError, RateLimitedError, TooManyCapturesError } from '../errors';
import { logger } from '../logger';
import type { DynamoCaptureSlots } from './dynamoCaptureSlots';
import {
  heldCounts,
  LEASE_PREFIX,
  LINK_HELD,
  linkBound,
  linkCondition,
  liveLeases,
} from './dynamoCaptureSlots';
import { creditEpochOf, type DynamoCreditLedger, reservingClause } from './dynamoCreditLedger';
import type { DynamoKeyStore } from './dynamoKeyStore';
import { accountAttribute, isConditionFailure, itemKey, WINDOW_ATTRIBUTE } from './table';

type Item = Record<string, unknown>;

/** What one write of the account item asks: its parts, each with its own condition. */
interface Parts {
  window: string;
  /** How many requests the window counts (a batch's captures). */
  requests: number;
  slot: { take: { leaseId: string; until: number } } | 'check' | 'none';
  /** Whose capture it is: a signed link's takes its slot from the links' bound too (linkSlotLimit). */
  pool: SlotPool;
  cost?: number;
  /** A synchronous capture's credits are kept as this reservation (CreditReservation). */
  hold?: ReservationHold;
  lastUsed?: { attribute: string; at: number };
  /** Window attributes of past windows, removed on the way. */
  stale: string[];
}

/**
 * The admission round in one conditional UpdateItem of the account item, which holds the credits, the capture
 * slots, the account's rate-limit windows, its keys' signed-link budgets and lastUsed (docs/data-model.md): the
 * window's count goes up if below the limit, a lease is added if fewer than the bound are held, the cost is taken if
 * the balance covers it (a synchronous capture's as a reservation, which its answer settles), lastUsed is set when
 * due. All or nothing, so credits and counts stay exact under any
 * concurrency. The item as it was tells whether the account held a slot before: a newcomer's capture may use the
 * renderers' headroom (docs/api.md 6.5); the capacity itself is the renderers' reserved concurrency, not an item.
 *
 * When a condition fails, nothing was written: the item is read (consistently) and the verdict found in the order of
 * checks. Over the limit: refused, not counted. Slots full: lapsed leases are reaped and the round tried again, or
 * refused. Balance short: refused. A request refused by the slots or the credits still counts against its window,
 * with one more conditional write. Only refused requests pay those extra calls.
 */
export class DynamoAdmissionRound implements AdmissionRound {
  /** Past windows this process saw on an account's item, removed by its next write there. */
  private readonly staleWindows = new Map<string, string[]>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly rateLimitPerHour: number,
    private readonly slots: DynamoCaptureSlots,
    private readonly keys: DynamoKeyStore,
    private readonly credits: DynamoCreditLedger,
  ) {}

  get slotLimit(): number {
    return this.slots.limit;
  }

  async admit(ask: AdmissionAsk): Promise<AdmissionVerdict> {
    const { accountId, keyId } = ask.identity;
    const start = windowStart(ask.now);
    const window =
      ask.budget === 'signedLink'
        ? accountAttribute.signedLinkWindow(keyId, start)
        : accountAttribute.apiWindow(start);
    const hold = reservationHold(ask);
    const parts: Parts = {
      requests: ask.requests ?? 1,
      pool: ask.budget,
      window,
      slot:
        typeof ask.slot === 'object'
          ? { take: { leaseId: newLeaseId(ask.budget), until: ask.slot.until } }
          : ask.slot,
      ...(ask.cost === undefined ? {} : { cost: ask.cost }),
      ...(hold ? { hold } : {}),
      ...(this.keys.claimLastUsed(keyId, ask.now)
        ? { lastUsed: { attribute: accountAttribute.lastUsed(keyId), at: ask.now } }
        : {}),
      // A clock that went back (tests move it) must not remove the window it counts in.
      stale: (this.staleWindows.get(accountId) ?? []).filter((name) => name !== window),
    };
    this.staleWindows.delete(accountId);
    const { verdict, holdsBefore } = await this.admitOnAccount(accountId, parts, ask, start);
    if (!verdict.admitted || typeof parts.slot !== 'object') return verdict;
    const { cost } = parts;
    return {
      ...verdict,
      leaseId: parts.slot.take.leaseId,
      newcomer: holdsBefore === 0,
      ...(hold && cost !== undefined
        ? { reservation: { id: hold.id, until: hold.until, cost, epoch: verdict.creditEpoch } }
        : {}),
    };
  }

  async release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void> {
    await this.slots
      .release(accountId, leaseId, penaltyUntil)
      .catch((error) => logger.warn('Capture slot not released', { error }));
  }

  async holdSlot(accountId: string, now: number, until: number, pool?: SlotPool): Promise<void> {
    await this.slots
      .acquire(accountId, now, until, pool)
      .catch((error) => logger.warn('Capture slot not held', { error }));
  }

  /**
   * The account item's part of the round; `holdsBefore` is how many live leases the account held before this one.
   * Each pass either decides or found the item changed (a lease lapsed and was reaped, a refund came in); the bound
   * only guards against a store that misbehaves.
   */
  private async admitOnAccount(
    accountId: string,
    parts: Parts,
    ask: AdmissionAsk,
    start: number,
  ): Promise<{ verdict: AdmissionVerdict; holdsBefore: number }> {
    const reset = start + RATE_WINDOW_MS;
    const limit = this.rateLimitPerHour;
    const decision = (count: number): RateLimitDecision => ({
      allowed: true,
      limit,
      remaining: Math.max(0, limit - count),
      reset,
    });
    // What is left is the window's own room: a batch refused for having more requests than that leaves it as it was
    // (red team, round 24: it said 0).
    const refusedByRate = (count = limit): AdmissionVerdict => ({
      admitted: false,
      rateLimit: { allowed: false, limit, remaining: Math.max(0, limit - count), reset },
      refusal: new RateLimitedError(limit, reset),
    });
    for (let pass = 0; pass <= this.slots.limit + MAX_CHANGED_PASSES; pass++) {
      const written = await this.write(accountId, parts, ask.now);
      if (written) {
        this.noteStale(accountId, written, start);
        // Reservations of fronts that died, as the write shows them: one more write, only when there are any.
        await this.credits.reapLapsed(accountId, written, ask.now);
        const own = typeof parts.slot === 'object' ? parts.slot.take.leaseId : undefined;
        const holdsBefore = liveLeases(written, ask.now).filter(([id]) => id !== own).length;
        return {
          verdict: {
            admitted: true,
            rateLimit: decision(Number(written[parts.window])),
            creditEpoch: creditEpochOf(written),
          },
          holdsBefore,
        };
      }
      const item = await this.read(accountId);
      this.noteStale(accountId, item, start);
      // A balance held by a front that died (its whole balance, maybe) comes back before it is judged.
      if (await this.credits.reapLapsed(accountId, item, ask.now)) continue;
      const counted = Number(item[parts.window] ?? 0);
      if (counted > limit - parts.requests) {
        await this.recordLastUsed(accountId, parts);
        return { verdict: refusedByRate(counted), holdsBefore: 0 };
      }
      let refusal: TooManyCapturesError | InsufficientCreditsError | undefined;
      if (parts.slot !== 'none' && this.slotsTaken(item, parts.pool)) {
        if (await this.slots.reapLapsed(itemKey.account(accountId), ask.now)) continue;
        refusal = this.slotsFull(ask.now);
      } else if (parts.cost !== undefined && Number(item.credits ?? 0) < parts.cost) {
        refusal = new InsufficientCreditsError(parts.cost, Number(item.credits ?? 0));
      }
      if (!refusal) continue;
      // Refused after the rate limit: the request still counts against its window.
      const countedOnly = await this.write(accountId, { ...parts, slot: 'none', stale: [] }, ask.now, true);
      if (!countedOnly) return { verdict: refusedByRate(), holdsBefore: 0 };
      return {
        verdict: { admitted: false, rateLimit: decision(Number(countedOnly[parts.window])), refusal },
        holdsBefore: 0,
      };
    }
    throw new Error('Admission did not settle: the account item kept changing');
  }

  /**
   * The conditional write of the account item: the item as it stands after it, or undefined when a condition did not
   * hold. `countOnly`: just the window (and lastUsed), for a request refused after the rate limit.
   */
  private async write(
    accountId: string,
    parts: Parts,
    now: number,
    countOnly = false,
  ): Promise<Item | undefined> {
    const set: string[] = [];
    // All of a batch's requests, or none: the window must have room for every one, a new window too.
    const add = ['#window :requests'];
    const conditions = ['((attribute_not_exists(#window) AND :requests <= :limit) OR #window <= :room)'];
    const names: Record<string, string> = { '#window': parts.window };
    const values: Record<string, unknown> = {
      ':requests': parts.requests,
      ':limit': this.rateLimitPerHour,
      ':room': this.rateLimitPerHour - parts.requests,
    };
    if (!countOnly && parts.slot !== 'none') {
      conditions.push(`(attribute_not_exists(held) OR held < :bound)${linkCondition(parts.pool)}`);
      values[':bound'] = this.slots.limit;
      Object.assign(values, linkBound(parts.pool, this.slots.limit));
      if (typeof parts.slot === 'object') {
        add.push(heldCounts(parts.pool, ':one'));
        values[':one'] = 1;
        set.push('#lease = :until');
        names['#lease'] = `${LEASE_PREFIX}${parts.slot.take.leaseId}`;
        values[':until'] = parts.slot.take.until;
      }
    }
    if (!countOnly && parts.cost !== undefined) {
      set.push('credits = credits - :cost');
      conditions.push('credits >= :cost');
      values[':cost'] = parts.cost;
      if (parts.hold) {
        const reserving = reservingClause(parts.hold.id);
        set.push(reserving.set);
        Object.assign(names, reserving.names);
        Object.assign(values, reserving.values);
      }
    }
    if (parts.lastUsed) {
      set.push('#lastUsed = :now');
      names['#lastUsed'] = parts.lastUsed.attribute;
      values[':now'] = now;
    }
    const remove = parts.stale.map((name, index) => {
      names[`#stale${index}`] = name;
      return `#stale${index}`;
    });
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: [
            set.length > 0 ? `SET ${set.join(', ')}` : '',
            `ADD ${add.join(', ')}`,
            remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
          ].join(' '),
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes ?? {};
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  private async read(accountId: string): Promise<Item> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.account(accountId), ConsistentRead: true }),
    );
    return Item ?? {};
  }

  /** lastUsed of a request the rate limit refused, which wrote nothing else (docs/api.md: from step 2 on). */
  private async recordLastUsed(accountId: string, parts: Parts): Promise<void> {
    if (!parts.lastUsed) return;
    await this.keys
      .writeLastUsed(accountId, parts.lastUsed.attribute, parts.lastUsed.at)
      .catch((error) => logger.warn('lastUsed not recorded', { error }));
  }

  /** Whether the item has no slot left for `pool`: every slot, or as many as a signed link's captures may hold. */
  private slotsTaken(item: Item, pool: SlotPool): boolean {
    const { limit } = this.slots;
    if (Number(item.held ?? 0) >= limit) return true;
    return pool === 'signedLink' && Number(item[LINK_HELD] ?? 0) >= linkSlotLimit(limit);
  }

  private slotsFull(now: number): TooManyCapturesError {
    return new TooManyCapturesError(this.slots.limit, now);
  }

  /** Remembers window attributes older than the previous window, for this process's next write of the item. */
  private noteStale(accountId: string, item: Item, start: number): void {
    const stale = Object.keys(item).filter((name) => {
      const match = WINDOW_ATTRIBUTE.exec(name);
      return match?.[1] !== undefined && Number(match[1]) < start;
    });
    if (stale.length > 0) this.staleWindows.set(accountId, stale.slice(0, MAX_STALE_PER_WRITE));
  }
}

/** Passes of the round that may find the item changed by others, beyond one per lapsed lease. */
const MAX_CHANGED_PASSES = 10;

/** Past windows removed by one write, so the expression stays small. */
const MAX_STALE_PER_WRITE = 20;
