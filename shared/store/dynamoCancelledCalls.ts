import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CANCELLATION_KEPT_MS, type CancelledCalls, takesCall } from '../mcp/cancelledCalls';
import { itemKey, TABLE_SCHEMA } from './table';

/** One item per cancellation, in the account's partition, removed by the table's TTL. */
export class DynamoCancelledCalls implements CancelledCalls {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async mark(accountId: string, requestId: string, now: number): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          ...itemKey.cancelledCall(accountId, idHash(requestId)),
          at: now,
          [TABLE_SCHEMA.ttlAttribute]: Math.ceil((now + CANCELLATION_KEPT_MS) / 1000),
        },
      }),
    );
  }

  async cancelledSince(
    accountId: string,
    requestId: string,
    startedAt: number,
    now: number,
  ): Promise<boolean> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.cancelledCall(accountId, idHash(requestId)),
        ConsistentRead: true,
      }),
    );
    // The TTL removes items late: takesCall tells an older mark from a live one.
    return takesCall(Item === undefined ? undefined : Number(Item.at), startedAt, now);
  }
}

/** The client's id, of any length, as a key of fixed size. */
function idHash(requestId: string): string {
  return createHash('sha256').update(requestId, 'utf8').digest('hex');
}
