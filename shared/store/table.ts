import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { SWEEP_SHARDS } from '../jobs/jobStore';

/**
 * The single table (see docs/data-model.md). Generic key names so every entity fits; `expiresAt` (epoch seconds)
 * is the TTL attribute, set on usage items, jobs, batches and idempotency records.
 */
export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'expiresAt',
} as const;

/** Item keys of each entity. Keeping them here is what makes the table "one model". */
export const itemKey = {
  /** The authentication item of an API key, found by the SHA-256 of the key's value. */
  apiKey: (keyHash: string) => ({ pk: `APIKEY#${keyHash}`, sk: 'APIKEY' }),
  /** The signing secret of an API key (sealed), found by the key's id as signed links name it. */
  signingKey: (keyId: string) => ({ pk: `SIGNKEY#${keyId}`, sk: 'SIGNKEY' }),
  /**
   * An account: credit balance, key count, free-grant marker, and what admission writes in one request (its capture
   * slots, its rate-limit windows, its keys' signed-link budgets and lastUsed; docs/data-model.md).
   */
  account: (accountId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: 'ACCOUNT' }),
  /** The listing item of an API key, under its owner's partition, sorted by id (ids sort by creation time). */
  accountKey: (accountId: string, keyId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `KEY#${keyId}` }),
  /** The captures running now for all accounts together: a counter and one lease per capture (docs/data-model.md). */
  /** The account's webhook secret (sealed), and the previous one during a rotation's overlap. */
  webhookSecret: (accountId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: 'WEBHOOKSECRET' }),
  /** A refund that failed, kept for an operator. One partition for all: they are rare, and listed together. */
  pendingRefund: (refundId: string) => ({ pk: PENDING_REFUNDS_PARTITION, sk: `REFUND#${refundId}` }),
  /** An account's usage totals of one UTC day (YYYY-MM-DD): the days of a window sort together. */
  usageDay: (accountId: string, date: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `${USAGE_DAY_PREFIX}${date}`,
  }),
  /** One screenshot request's usage record: by time, then a random id so that records never collide. */
  usageRecord: (accountId: string, at: number, id: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `USAGE#REQUEST#${String(at).padStart(13, '0')}#${id}`,
  }),
  /** An async capture, under its account's partition; ids sort by creation time, so the latest list first. */
  job: (accountId: string, jobId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `${JOB_PREFIX}${jobId}` }),
  /**
   * An async capture's request, apart from its job: an `html` document of up to 256 KiB that only the worker reads, so
   * the job's views and list read small items.
   */
  jobRequest: (accountId: string, jobId: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `JOBREQUEST#${jobId}`,
  }),
  /** A batch of async captures: its job ids and how many have finished. */
  batch: (accountId: string, batchId: string) => ({ pk: `ACCOUNT#${accountId}`, sk: `BATCH#${batchId}` }),
  /** An MCP tool call the agent cancelled, by the SHA-256 of its JSON-RPC id, kept for minutes (TTL). */
  cancelledCall: (accountId: string, idHash: string) => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `MCPCANCELLED#${idHash}`,
  }),
};

export const JOB_PREFIX = 'JOB#';
export const ACCOUNT_PREFIX = 'ACCOUNT#';

/** Attributes of the account item (docs/data-model.md). */
export const accountAttribute = {
  /** The count of the account's API window starting at `windowStart` (ms). */
  apiWindow: (windowStart: number) => `rate#${windowStart}`,
  /** The count of one key's signed-link budget in the window starting at `windowStart` (ms). */
  signedLinkWindow: (keyId: string, windowStart: number) => `signed#${keyId}#${windowStart}`,
  /** When the key last authenticated a screenshot request (ms). */
  lastUsed: (keyId: string) => `lastUsed#${keyId}`,
};

/** Matches a window attribute of the account item; group 1 is its window start. */
export const WINDOW_ATTRIBUTE = /^(?:rate|signed#.+)#(\d+)$/;

export const PENDING_REFUNDS_PARTITION = 'REFUNDS#PENDING';
export const USAGE_DAY_PREFIX = 'USAGE#DAY#';

export const ACCOUNT_KEY_PREFIX = 'KEY#';

/**
 * The table's one secondary index: the jobs still `queued`, by when the sweep would take them for stranded
 * (shared/jobs/sweepStrandedJobs.ts). Sparse: only a queued job's item carries its two attributes, written with the
 * item and removed by the write that starts or ends the job. Keys only: the sweep needs the table's key (account and
 * job) and nothing else, so the index costs little to write.
 */
export const QUEUED_JOBS_INDEX = {
  name: 'QueuedJobs',
  /** `SWEEP#<n>`, n of SWEEP_SHARDS: a queued job's shard, from its id, so writes spread over the index's partitions. */
  partitionKey: 'sweepShard',
  /** When the sweep takes the job for stranded (ms). */
  sortKey: 'sweepAt',
} as const;

/** The index partition of a job: from the random end of its id (spread evenly, the same for every write). */
export function sweepShardOf(jobId: string): string {
  return sweepShard(Number.parseInt(jobId.slice(-4), 16) % SWEEP_SHARDS || 0);
}

export const sweepShard = (shard: number) => `SWEEP#${shard}`;

/** CreateTable input for the local store and the tests; the CDK stack declares the same keys and index. */
export function tableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: TABLE_SCHEMA.partitionKey, AttributeType: 'S' },
      { AttributeName: TABLE_SCHEMA.sortKey, AttributeType: 'S' },
      { AttributeName: QUEUED_JOBS_INDEX.partitionKey, AttributeType: 'S' },
      { AttributeName: QUEUED_JOBS_INDEX.sortKey, AttributeType: 'N' },
    ],
    KeySchema: [
      { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
      { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: QUEUED_JOBS_INDEX.name,
        KeySchema: [
          { AttributeName: QUEUED_JOBS_INDEX.partitionKey, KeyType: 'HASH' },
          { AttributeName: QUEUED_JOBS_INDEX.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ],
  };
}

/** The items a Query finds across its pages (DynamoDB answers at most 1 MB a call), at most `limit` of them. */
export async function queryItems(
  db: DynamoDBDocumentClient,
  input: QueryCommandInput,
  limit = Number.POSITIVE_INFINITY,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await db.send(
      new QueryCommand({
        ...input,
        ...(Number.isFinite(limit) ? { Limit: limit - items.length } : {}),
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length < limit);
  return items;
}

/** True for the SDK error a failed ConditionExpression raises. */
export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/** Awaits a conditional write: true when it was applied, false when its condition did not hold. */
export async function conditionHeld(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * A number attribute of the item as it stood when a conditional write failed, read from the failure itself
 * (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`), so the answer cannot race a later write. Undefined when the
 * store did not return the item: DynamoDB leaves it out when there was no item, and dynalite never returns it
 * (docs/data-model.md).
 */
export function numberInFailedItem(error: unknown, attribute: string): number | undefined {
  const item = (error as { Item?: Record<string, { N?: string } | undefined> }).Item;
  if (!item) return undefined;
  const value = item[attribute]?.N;
  return value === undefined ? 0 : Number(value);
}
