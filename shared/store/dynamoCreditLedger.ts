import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type CreditEpoch, type CreditLedger, MAX_BALANCE } from '../accounts/creditLedger';
import { BalanceOverflowError, InsufficientCreditsError } from '../errors';
import { conditionHeld, isConditionFailure, itemKey, numberInFailedItem } from './table';

/** Credits live on the account item (`ACCOUNT#id / ACCOUNT`, attribute `credits`). */
export class DynamoCreditLedger implements CreditLedger {
  /** Accounts this process has already seen granted, so a warm instance does not retry the grant each request. */
  private readonly granted = new Set<string>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
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
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.account(accountId),
        ConsistentRead: true,
        ProjectionExpression: 'credits',
      }),
    );
    return typeof Item?.credits === 'number' ? Item.credits : 0;
  }

  async reserve(accountId: string, cost: number): Promise<CreditEpoch> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'SET credits = credits - :cost',
          ConditionExpression: 'credits >= :cost',
          ExpressionAttributeValues: { ':cost': cost },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
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
    return this.giveBack(accountId, cost, epoch, refundMark(refundId));
  }

  /**
   * Adds `cost` back, in `epoch` and (with `mark`) once: whether it was given. A balance within `cost` of the ceiling
   * (an operator filled it while the credits were reserved) is filled to MAX_BALANCE instead, never past it, where
   * its number would no longer be exact (red team, round 13). A reservation between the two tries sends it round
   * again.
   */
  private async giveBack(accountId: string, cost: number, epoch: CreditEpoch | undefined, mark?: string) {
    const write = (toCeiling: boolean) =>
      conditionHeld(
        this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: itemKey.account(accountId),
            UpdateExpression: [
              toCeiling ? 'SET credits = :max' : 'ADD credits :cost',
              mark === undefined ? '' : `${toCeiling ? ',' : ' SET'} #mark = :given`,
            ].join(''),
            ...inEpoch(epoch, {
              condition: [
                ...(mark === undefined ? [] : ['attribute_not_exists(#mark)']),
                toCeiling ? 'credits > :ceiling' : '(attribute_not_exists(credits) OR credits <= :ceiling)',
              ].join(' AND '),
              ...(mark === undefined ? {} : { names: { '#mark': mark } }),
              values: {
                ':ceiling': MAX_BALANCE - cost,
                ...(toCeiling ? { ':max': MAX_BALANCE } : { ':cost': cost }),
                ...(mark === undefined ? {} : { ':given': true }),
              },
            }),
          }),
        ),
      );
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
