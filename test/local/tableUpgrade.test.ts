import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmbeddedDynamo } from '../../local/embeddedDynamo';
import { tableSettled, upgradeTable } from '../../local/tableUpgrade';
import { tableDefinition } from '../../shared/store/table';
import { refuseCommands } from '../helpers/refusedCommands';

/**
 * A DATA_DIR made before the table had its queued-jobs index: `npm start` gives the table its index and keeps every
 * item, even when a start was killed halfway through (dynalite cannot add an index to a table in place).
 */

const TABLE = 'upgrade-test';
const UPGRADE_FILE = 'dynamodb-upgrade.json';
const account = {
  pk: { S: 'ACCOUNT#a' },
  sk: { S: 'ACCOUNT' },
  credits: { N: '42' },
  returnedRefunds: { SS: ['rf_1', 'rf_2'] },
};
const key = { pk: account.pk, sk: account.sk };

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'table-upgrade-'));
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const indexNames = async (client: DynamoDBClient) =>
  (
    (await client.send(new DescribeTableCommand({ TableName: TABLE }))).Table?.GlobalSecondaryIndexes ?? []
  ).map((index) => index.IndexName);
const expectedIndexes = (tableDefinition(TABLE).GlobalSecondaryIndexes ?? []).map((index) => index.IndexName);

/** A start on the data dir leaves the table with every index, the item kept, and no copy behind. */
async function expectUpgraded(): Promise<void> {
  const started = await startEmbeddedDynamo({ dataDir, tableName: TABLE });
  try {
    expect(expectedIndexes.length).toBeGreaterThan(0);
    expect(await indexNames(started.client)).toEqual(expectedIndexes);
    expect((await started.client.send(new GetItemCommand({ TableName: TABLE, Key: key }))).Item).toEqual(
      account,
    );
    expect(existsSync(join(dataDir, UPGRADE_FILE))).toBe(false);
  } finally {
    await started.close();
  }
}

describe('a local table of an earlier version', () => {
  it('gets the indexes of the table definition and keeps its items', async () => {
    const old = await startEmbeddedDynamo({ dataDir, tableName: TABLE });
    await tableSettled(old.client, TABLE);
    await old.client.send(new DeleteTableCommand({ TableName: TABLE }));
    await tableSettled(old.client, TABLE);
    // The table as it was: its keys and nothing else.
    const { GlobalSecondaryIndexes: _, AttributeDefinitions = [], ...keys } = tableDefinition(TABLE);
    await old.client.send(
      new CreateTableCommand({ ...keys, AttributeDefinitions: AttributeDefinitions.slice(0, 2) }),
    );
    await tableSettled(old.client, TABLE);
    await old.client.send(new PutItemCommand({ TableName: TABLE, Item: account }));
    expect(await indexNames(old.client)).toEqual([]);
    await old.close();

    await expectUpgraded();
  });

  it("keeps the copy of the items its owner's alone, whatever the umask (red team, round 28)", async () => {
    const store = await startEmbeddedDynamo({ tableName: TABLE });
    await store.client.send(new PutItemCommand({ TableName: TABLE, Item: account }));
    // The upgrade stops once the copy is written: the table cannot be dropped.
    refuseCommands(store.client, 'no-drop', (name) =>
      name === 'DeleteTableCommand' ? { name: 'InternalServerError', message: 'no' } : undefined,
    );
    const copy = join(dataDir, UPGRADE_FILE);
    const umask = process.umask(0o022);
    try {
      await expect(upgradeTable(store.client, TABLE, copy)).rejects.toThrow();
    } finally {
      process.umask(umask);
      await store.close();
    }
    expect((await stat(copy)).mode & 0o777).toBe(0o600);
  });

  it('finishes an upgrade a killed start left halfway, from the copy of the items it kept', async () => {
    // Killed after the table was dropped: only the copy holds the items.
    const cut = await startEmbeddedDynamo({ dataDir, tableName: TABLE });
    await tableSettled(cut.client, TABLE);
    await cut.client.send(new DeleteTableCommand({ TableName: TABLE }));
    await tableSettled(cut.client, TABLE);
    await cut.close();
    await writeFile(join(dataDir, UPGRADE_FILE), JSON.stringify([account]));

    await expectUpgraded();
  });
});
