import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type CreditEpoch,
  type CreditLedger,
  MAX_BALANCE,
  type ReservationHold,
} from '../accounts/creditLedger';
import { type CreditReservation, lapsedReservations, reservationOf } from '../accounts/creditReservation';
import { BalanceOverflowError, InsufficientCreditsError } from '../errors';
import { logger } from '../logger';
import { conditionHeld, isConditionFailure, itemKey, numberInFailedItem } from './table';

/** Credits live on the account item (`ACCOUNT#id / ACCOUNT`, attribute `credits`). */
export class DynamoCreditLedger implements CreditLedger {
  /** Accounts this process has already seen granted, so a warm instance does not retry the grant each request. */
  private readonly granted = new Set<string>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** What lapsed reservations are judged by when the balance is read. */
    private readonly now: () => number = Date.now,
  ) {}

  async grantFreeCreditsOnce(accountId: string, amount: number, now: number): Promise<void> {
    if (this.granted.has(accountId)) return;
    // A failed condition means the grant was given before: nothing to do.
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'SET freeCreditsGrantedAt = :now ADD credits :amount',
          // A balance an operator set (its epoch counts the sets) gets no grant on top: `credits set <account> 0`
          // before the account's first sign-in was undone by it (red team, round 20). One set near the ceiling
          // would otherwise get an inexact one.
          ConditionExpression: `attribute_not_exists(freeCreditsGrantedAt) AND attribute_not_exists(${EPOCH}) AND (attribute_not_exists(credits) OR credits <= :ceiling)`,
          ExpressionAttributeValues: { ':now': now, ':amount': amount, ':ceiling': MAX_BALANCE - amount },
        }),
      ),
    );
    this.granted.add(accountId);
  }

  async balance(accountId: string): Promise<number> {
    const read = async () => {
      const { Item } = await this.db.send(
        new GetCommand({ TableName: this.tableName, Key: itemKey.account(accountId), ConsistentRead: true }),
      );
      return Item ?? {};
    };
    // The balance shown once a front's death is past: the reservations it left go back first (rarely any; a look
    // gives back a few, so many take more looks: red team, round 25, 12 lapsed read short once).
    let item = await read();
    for (
      let look = 0;
      look < MAX_REAPING_LOOKS && (await this.reapLapsed(accountId, item, this.now()));
      look++
    )
      item = await read();
    return creditsOf(item);
  }

  async reserve(accountId: string, cost: number, hold?: ReservationHold): Promise<CreditEpoch> {
    try {
      const held = hold && reservingClause(hold.id);
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: `SET credits = credits - :cost${held ? `, ${held.set}` : ''}`,
          ConditionExpression: 'credits >= :cost',
          ...(held ? { ExpressionAttributeNames: held.names } : {}),
          ExpressionAttributeValues: { ':cost': cost, ...held?.values },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      if (hold) await this.reapLapsed(accountId, Attributes ?? {}, hold.now);
      return creditEpochOf(Attributes);
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const available = numberInFailedItem(error, 'credits') ?? (await this.balance(accountId));
      throw new InsufficientCreditsError(cost, available);
    }
  }

  async refund(accountId: string, cost: number, epoch?: CreditEpoch): Promise<void> {
    // A refund whose epoch is over gives nothing.
    await this.giveBack(accountId, cost, epoch);
  }

  async refundOnce(accountId: string, cost: number, refundId: string, epoch?: CreditEpoch): Promise<boolean> {
    return this.giveBack(accountId, cost, epoch, { mark: refundMark(refundId) });
  }

  async chargeReservation(accountId: string, reservationId: string): Promise<void> {
    // Conditional, so that a reservation settled before leaves no item behind either.
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'REMOVE #reservation',
          ConditionExpression: 'attribute_exists(#reservation)',
          ExpressionAttributeNames: { '#reservation': reservationAttribute(reservationId) },
        }),
      ),
    );
  }

  async refundReservation(accountId: string, reservation: CreditReservation): Promise<boolean> {
    const given = await this.giveBack(accountId, reservation.cost, reservation.epoch, {
      reservation: reservationAttribute(reservation.id),
    });
    // Settled before (nothing left to remove), or its epoch is over: then it goes without giving anything.
    if (!given) await this.chargeReservation(accountId, reservation.id);
    return given;
  }

  /**
   * Gives back the lapsed reservations `item` (the account's, as a write answered or a read found it) shows: those of
   * fronts that died before settling them. Whether any was settled; a failure is logged and left to the next look.
   */
  async reapLapsed(accountId: string, item: Record<string, unknown>, now: number): Promise<boolean> {
    const settled = await Promise.all(
      lapsedReservations(reservationsIn(item), now).map(async (reservation) => {
        try {
          if (await this.refundReservation(accountId, reservation))
            logger.warn('Lapsed credit reservation given back', { accountId, cost: reservation.cost });
          return true;
        } catch (error) {
          logger.warn('Lapsed credit reservation not given back yet', { accountId, error: error as Error });
          return false;
        }
      }),
    );
    return settled.includes(true);
  }

  /**
   * Adds `cost` back, in `epoch` and (with `once`) once: whether it was given. A balance within `cost` of the ceiling
   * (an operator filled it while the credits were reserved) is filled to MAX_BALANCE instead, never past it, where
   * its number would no longer be exact (red team, round 13). A reservation between the two tries sends it round
   * again.
   */
  private async giveBack(accountId: string, cost: number, epoch: CreditEpoch | undefined, once?: GivenOnce) {
    const write = (toCeiling: boolean) => {
      const set = toCeiling ? ['credits = :max'] : [];
      if (once && 'mark' in once) set.push('#once = :given');
      return conditionHeld(
        this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: itemKey.account(accountId),
            UpdateExpression: [
              set.length > 0 ? `SET ${set.join(', ')}` : '',
              toCeiling ? '' : 'ADD credits :cost',
              once && 'reservation' in once ? 'REMOVE #once' : '',
            ]
              .filter((clause) => clause !== '')
              .join(' '),
            ...inEpoch(epoch, {
              condition: [
                ...(once === undefined
                  ? []
                  : ['mark' in once ? 'attribute_not_exists(#once)' : 'attribute_exists(#once)']),
                toCeiling ? 'credits > :ceiling' : '(attribute_not_exists(credits) OR credits <= :ceiling)',
              ].join(' AND '),
              ...(once === undefined
                ? {}
                : { names: { '#once': 'mark' in once ? once.mark : once.reservation } }),
              values: {
                ':ceiling': MAX_BALANCE - cost,
                ...(toCeiling ? { ':max': MAX_BALANCE } : { ':cost': cost }),
                ...(once && 'mark' in once ? { ':given': true } : {}),
              },
            }),
          }),
        ),
      );
    };
    for (let round = 0; round < 2; round++) {
      if ((await write(false)) || (await write(true))) return true;
    }
    // Its epoch is over, or it was given already.
    return false;
  }

  async forgetRefund(accountId: string, refundId: string): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: itemKey.account(accountId),
        UpdateExpression: 'REMOVE #mark',
        ExpressionAttributeNames: { '#mark': refundMark(refundId) },
      }),
    );
  }

  async add(accountId: string, amount: number): Promise<number> {
    if (!Number.isSafeInteger(amount)) throw new BalanceOverflowError(MAX_BALANCE);
    // Taking credits away must not go below zero; giving must not pass the ceiling.
    const removing = amount < 0;
    try {
      return await this.update(
        accountId,
        'ADD credits :amount',
        removing
          ? { ':amount': amount, ':needed': -amount }
          : { ':amount': amount, ':ceiling': MAX_BALANCE - amount },
        removing ? 'credits >= :needed' : 'attribute_not_exists(credits) OR credits <= :ceiling',
      );
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      if (!removing) throw new BalanceOverflowError(MAX_BALANCE);
      const available = numberInFailedItem(error, 'credits') ?? (await this.balance(accountId));
      throw new InsufficientCreditsError(-amount, available);
    }
  }

  async set(accountId: string, amount: number): Promise<number> {
    if (!Number.isSafeInteger(amount) || amount < 0) throw new BalanceOverflowError(MAX_BALANCE);
    return this.update(accountId, `SET credits = :amount ADD ${EPOCH} :one`, {
      ':amount': amount,
      ':one': 1,
    });
  }

  private async update(
    accountId: string,
    expression: string,
    values: Record<string, number>,
    condition?: string,
  ): Promise<number> {
    const result = await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: itemKey.account(accountId),
        UpdateExpression: expression,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: condition ? 'ALL_OLD' : undefined,
      }),
    );
    return Number(result.Attributes?.credits ?? 0);
  }
}

/**
 * What makes a refund given at most once: a mark it leaves (`refund#<id>`, a refund that may be asked for again), or
 * the reservation it removes (`rsv#<id>`, which the refund needs to find).
 */
type GivenOnce = { mark: string } | { reservation: string };

function creditsOf(item: Record<string, unknown>): number {
  return typeof item.credits === 'number' ? item.credits : 0;
}

const RESERVATION_PREFIX = 'rsv#';

/** Bounds the writes one balance read may make, whatever an account item holds. */
const MAX_REAPING_LOOKS = 10;

/** The account item's attribute of a synchronous capture's reservation; its value is its epoch (docs/data-model.md). */
function reservationAttribute(reservationId: string): string {
  return `${RESERVATION_PREFIX}${reservationId}`;
}

/**
 * The part of an UpdateItem's SET that takes a reservation. Its value is the balance's epoch as the write finds it,
 * copied on the store's side: the reserving write is the one that learns the epoch.
 */
export function reservingClause(reservationId: string) {
  return {
    set: `#reservation = if_not_exists(${EPOCH}, :noEpoch)`,
    names: { '#reservation': reservationAttribute(reservationId) },
    values: { ':noEpoch': 0 },
  };
}

/** The reservations an account item holds. */
function reservationsIn(item: Record<string, unknown>): CreditReservation[] {
  return Object.entries(item).flatMap(([name, epoch]) => {
    if (!name.startsWith(RESERVATION_PREFIX)) return [];
    const reservation = reservationOf(name.slice(RESERVATION_PREFIX.length), Number(epoch));
    return reservation ? [reservation] : [];
  });
}

/** The account item's attribute that says a refund was given (docs/data-model.md). */
export function refundMark(refundId: string): string {
  return `refund#${refundId}`;
}

/** The account item's attribute that counts the sets of its balance (CreditEpoch). */
const EPOCH = 'creditsEpoch';

/** The CreditEpoch an account item read or written holds. */
export function creditEpochOf(item: Record<string, unknown> | undefined): CreditEpoch {
  return Number(item?.[EPOCH] ?? 0);
}

/**
 * A write's condition, names and values as an UpdateCommand takes them, with the condition that the account's balance
 * is still in `epoch` added to its own (nothing added when no epoch is named).
 */
export function inEpoch(
  epoch: CreditEpoch | undefined,
  write: { condition?: string; names?: Record<string, string>; values: Record<string, unknown> },
) {
  const conditions = write.condition === undefined ? [] : [write.condition];
  const names = { ...write.names };
  const values = { ...write.values };
  if (epoch !== undefined) {
    conditions.push(epoch === 0 ? '(attribute_not_exists(#epoch) OR #epoch = :epoch)' : '#epoch = :epoch');
    names['#epoch'] = EPOCH;
    values[':epoch'] = epoch;
  }
  return {
    ...(conditions.length === 0 ? {} : { ConditionExpression: conditions.join(' AND ') }),
    // DynamoDB refuses an empty map of names.
    ...(Object.keys(names).length === 0 ? {} : { ExpressionAttributeNames: names }),
    ExpressionAttributeValues: values,
  };
}
