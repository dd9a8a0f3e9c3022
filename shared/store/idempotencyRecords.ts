import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TABLE_SCHEMA } from './table';

/** The partition of an account's Idempotency-Key records. */
export function idempotencyPartition(accountId: string): string {
  return `IDEMPOTENCY#${accountId}`;
}

/**
 * Powertools' records of an account's Idempotency-Keys on the single table: a partition per account (the key's hash
 * as sort key), so one account's requests, even the refused ones whose records are written and deleted, never use up
 * a partition's throughput other accounts need; expiring by the table's TTL.
 */
export function idempotencyRecords(client: DynamoDBClient, tableName: string) {
  return (accountId: string) =>
    new DynamoDBPersistenceLayer({
      tableName,
      keyAttr: TABLE_SCHEMA.partitionKey,
      sortKeyAttr: TABLE_SCHEMA.sortKey,
      staticPkValue: idempotencyPartition(accountId),
      expiryAttr: TABLE_SCHEMA.ttlAttribute,
      awsSdkV3Client: client,
    });
}
