import { readFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  ScanCommand,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { logger } from '../shared/logger';
import { tableDefinition } from '../shared/store/table';
import { replaceWhole } from '../shared/store/wholeFile';

/** DynamoDB's BatchWriteItem bound. */
const BATCH_WRITE_LIMIT = 25;

type Item = Record<string, AttributeValue>;

/** True when the stored table has every secondary index the service's table definition declares. */
export function hasEveryIndex(table: TableDescription, tableName: string): boolean {
  const present = new Set((table.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  return (tableDefinition(tableName).GlobalSecondaryIndexes ?? []).every((index) =>
    present.has(index.IndexName),
  );
}

/**
 * Gives a local table made before an index was added (a DATA_DIR of an earlier version) the table as defined now.
 * dynalite cannot add an index to a table (its UpdateTable changes throughput only), so the items are copied out to
 * `copyFile`, the table is made again and the items written back. Killed halfway, the next start finds the copy and
 * finishes from it (resumeUpgrade): nothing is lost. The table holds no binary attributes, so the copy is plain JSON.
 */
export async function upgradeTable(
  client: DynamoDBClient,
  tableName: string,
  copyFile: string,
): Promise<void> {
  const items: Item[] = [];
  let startKey: Item | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  // Every item of the table, balances and key hashes too: its owner's alone, whichever command started the upgrade
  // (red team, round 28: `npm run credits` on an old DATA_DIR wrote it readable by every user).
  await replaceWhole(copyFile, JSON.stringify(items));
  logger.info('Local table made again with its indexes', { items: items.length });
  await rebuildFrom(client, tableName, items, copyFile);
}

/** Finishes an upgrade a killed start left halfway: true when there was one. */
export async function resumeUpgrade(
  client: DynamoDBClient,
  tableName: string,
  copyFile: string,
): Promise<boolean> {
  const copy = await readFile(copyFile, 'utf8').catch(() => undefined);
  if (copy === undefined) return false;
  await rebuildFrom(client, tableName, JSON.parse(copy) as Item[], copyFile);
  return true;
}

async function rebuildFrom(client: DynamoDBClient, tableName: string, items: Item[], copyFile: string) {
  await tableSettled(client, tableName);
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  await tableSettled(client, tableName);
  await client.send(new CreateTableCommand(tableDefinition(tableName)));
  await tableSettled(client, tableName);
  for (let at = 0; at < items.length; at += BATCH_WRITE_LIMIT) {
    let requests = items.slice(at, at + BATCH_WRITE_LIMIT).map((Item) => ({ PutRequest: { Item } }));
    while (requests.length > 0) {
      const answer = await client.send(
        new BatchWriteItemCommand({ RequestItems: { [tableName]: requests } }),
      );
      requests = (answer.UnprocessedItems?.[tableName] ?? []) as typeof requests;
    }
  }
  await rm(copyFile, { force: true });
}

/**
 * Waits until the table is ACTIVE or gone: dynalite, like DynamoDB, refuses to change a table still being made or
 * dropped (at once locally, but on a later turn).
 */
export async function tableSettled(client: DynamoDBClient, tableName: string): Promise<void> {
  for (;;) {
    const status = await client
      .send(new DescribeTableCommand({ TableName: tableName }))
      .then((described) => described.Table?.TableStatus)
      .catch((error: unknown) => {
        if (error instanceof ResourceNotFoundException) return undefined;
        throw error;
      });
    if (status === undefined || status === 'ACTIVE') return;
    await sleep(10);
  }
}
