import { IdempotencyItemAlreadyExistsError } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import { DeleteItemCommand, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { conditionHeld, TABLE_SCHEMA } from './table';

/** The partition of an account's Idempotency-Key records. */
export function idempotencyPartition(accountId: string): string {
  return `IDEMPOTENCY#${accountId}`;
}

/** Powertools' own name for the attribute, named here so that the delete below can ask for it. */
const IN_PROGRESS_EXPIRY_ATTR = 'in_progress_expiration';

/**
 * Powertools' records of an account's Idempotency-Keys on the single table: a partition per account (the key's hash
 * as sort key), so one account's requests, even the refused ones whose records are written and deleted, never use up
 * a partition's throughput other accounts need; expiring by the table's TTL. One layer serves one request.
 */
export function idempotencyRecords(client: DynamoDBClient, tableName: string) {
  return (accountId: string) => new OwnRecordOnly(client, tableName, idempotencyPartition(accountId));
}

/**
 * Removes only the record its own request wrote. Powertools' delete is unconditional: a refusal's removal tried again
 * after a lost answer (idempotentRoute.ts) took the record of a retry that began meanwhile, even its kept acceptance,
 * and a third request with the key was accepted and charged beside it (red team). A record is told apart by its
 * in-progress expiry, which Powertools sets when it writes it, with a random part of its own (idempotentRoute.ts).
 */
class OwnRecordOnly extends DynamoDBPersistenceLayer {
  #written: number | undefined;

  constructor(
    private readonly db: DynamoDBClient,
    private readonly table: string,
    partition: string,
  ) {
    super({
      tableName: table,
      keyAttr: TABLE_SCHEMA.partitionKey,
      sortKeyAttr: TABLE_SCHEMA.sortKey,
      staticPkValue: partition,
      expiryAttr: TABLE_SCHEMA.ttlAttribute,
      inProgressExpiryAttr: IN_PROGRESS_EXPIRY_ATTR,
      awsSdkV3Client: db,
    });
  }

  protected override async _putRecord(record: IdempotencyRecord): Promise<void> {
    // Known before the write: a write that lands though its answer is lost is still this request's.
    this.#written = record.inProgressExpiryTimestamp;
    try {
      await super._putRecord(record);
    } catch (error) {
      // The SDK sent the write again after a lost answer, and found the record its first attempt wrote: this
      // request's own, not another's (red team: the request that wrote it was answered 409, and so was every retry).
      if (!(error instanceof IdempotencyItemAlreadyExistsError) || this.#written === undefined) throw error;
      // DynamoDB returns the record that stood in the way; dynalite does not, and it is read.
      const standing =
        error.existingRecord?.inProgressExpiryTimestamp ??
        (await this.inProgressExpiryOf(record.idempotencyKey));
      if (standing !== this.#written) throw error;
    }
  }

  private async inProgressExpiryOf(idempotencyKey: string): Promise<number | undefined> {
    const { Item } = await this.db.send(
      new GetItemCommand({
        TableName: this.table,
        Key: this.getKey(idempotencyKey),
        ConsistentRead: true,
        ProjectionExpression: '#inProgressExpiry',
        ExpressionAttributeNames: { '#inProgressExpiry': IN_PROGRESS_EXPIRY_ATTR },
      }),
    );
    const value = Item?.[IN_PROGRESS_EXPIRY_ATTR]?.N;
    return value === undefined ? undefined : Number(value);
  }

  protected override async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    if (this.#written === undefined) throw new Error('No record of this request to remove');
    // A condition that fails: gone already (an earlier removal landed), or another request's; nothing of this
    // request's is left.
    await conditionHeld(
      this.db.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: this.getKey(record.idempotencyKey),
          ConditionExpression: '#inProgressExpiry = :written',
          ExpressionAttributeNames: { '#inProgressExpiry': IN_PROGRESS_EXPIRY_ATTR },
          ExpressionAttributeValues: { ':written': { N: String(this.#written) } },
        }),
      ),
    );
  }
}
