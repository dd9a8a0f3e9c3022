import { createHash, randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CANCELLATION_KEPT_MS, type CancellationMark, type CancelledCalls } from '../mcp/cancelledCalls';
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
          mark: randomUUID(),
          [TABLE_SCHEMA.ttlAttribute]: Math.ceil((now + CANCELLATION_KEPT_MS) / 1000),
        },
      }),
    );
  }

  async latest(accountId: string, requestId: string): Promise<CancellationMark> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.cancelledCall(accountId, idHash(requestId)),
        ConsistentRead: true,
      }),
    );
    // An item kept before marks were (with `at` only) is no cancellation a running call can have seen come.
    return typeof Item?.mark === 'string' ? Item.mark : undefined;
  }
}

/** The client's id, of any length, as a key of fixed size. */
function idHash(requestId: string): string {
  return createHash('sha256').update(requestId, 'utf8').digest('hex');
}
