import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { PendingRefund, PendingRefunds, RefundReturn } from '../accounts/pendingRefunds';
import { inEpoch, refundMark } from './dynamoCreditLedger';
import { isConditionFailure, itemKey, PENDING_REFUNDS_PARTITION, queryItems } from './table';

/**
 * Failed refunds as items `REFUNDS#PENDING / REFUND#<id>` (docs/data-model.md). Giving one back needs two items and
 * the table has no transactions (dynalite neither), so the account item remembers the refund ids it received
 * (`returnedRefunds`): the credit is added only if the id is not there yet, then the record is removed. A run that
 * stops between the two leaves a record whose next return only removes it. The capture's own refund, tried first
 * under the same id, leaves a mark on the account when it lands (refundOnce): a write that timed out but landed is
 * found by it, and not given again.
 */
export class DynamoPendingRefunds implements PendingRefunds {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async record(refund: PendingRefund): Promise<void> {
    const { id, accountId, cost, failedAt, creditEpoch } = refund;
    const item = { id, accountId, cost, failedAt, ...(creditEpoch === undefined ? {} : { creditEpoch }) };
    await this.db.send(
      new PutCommand({ TableName: this.tableName, Item: { ...itemKey.pendingRefund(refund.id), ...item } }),
    );
  }

  async list(): Promise<PendingRefund[]> {
    const items = await queryItems(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PENDING_REFUNDS_PARTITION },
      ConsistentRead: true,
    });
    return items.map(toRefund);
  }

  async giveBack(id: string): Promise<RefundReturn> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.pendingRefund(id), ConsistentRead: true }),
    );
    if (!Item) return { outcome: 'notFound' };
    const refund = toRefund(Item);
    let balance: number | undefined;
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(refund.accountId),
          UpdateExpression: 'ADD credits :cost, returnedRefunds :ids',
          ...inEpoch(refund.creditEpoch, {
            condition: 'NOT contains(returnedRefunds, :id) AND attribute_not_exists(#mark)',
            names: { '#mark': refundMark(id) },
            values: { ':cost': refund.cost, ':ids': new Set([id]), ':id': id },
          }),
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      balance = Number(Attributes?.credits ?? 0);
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // Not given before, the balance set since the credits were reserved (red team: an account cut off was filled
      // again by the runbook): nothing to give, the record goes.
      if (!(await this.givenBefore(refund))) {
        await this.db.send(new DeleteCommand({ TableName: this.tableName, Key: itemKey.pendingRefund(id) }));
        return { outcome: 'balanceSetSince', refund };
      }
      // The id is on the account already: the credits went back on an earlier run, or with the capture's own refund.
      // Its mark becomes the id among those returned, in one write, so a later or concurrent return finds it there
      // whether or not this run gets to delete the record (red team: a run stopped here paid twice).
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(refund.accountId),
          UpdateExpression: 'ADD returnedRefunds :ids REMOVE #mark',
          ExpressionAttributeNames: { '#mark': refundMark(id) },
          ExpressionAttributeValues: { ':ids': new Set([id]) },
        }),
      );
    }
    await this.db.send(new DeleteCommand({ TableName: this.tableName, Key: itemKey.pendingRefund(id) }));
    return balance === undefined
      ? { outcome: 'alreadyReturned', refund }
      : { outcome: 'returned', refund, balance };
  }

  /** Whether the refund's id is on its account: returned before, or its capture's own refund landed. */
  private async givenBefore({ id, accountId }: PendingRefund): Promise<boolean> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.account(accountId), ConsistentRead: true }),
    );
    const returned = Item?.returnedRefunds;
    return (returned instanceof Set && returned.has(id)) || Item?.[refundMark(id)] !== undefined;
  }
}

function toRefund(item: Record<string, unknown>): PendingRefund {
  return {
    id: String(item.id),
    accountId: String(item.accountId),
    cost: Number(item.cost),
    failedAt: Number(item.failedAt),
    ...(typeof item.creditEpoch === 'number' ? { creditEpoch: item.creditEpoch } : {}),
  };
}
