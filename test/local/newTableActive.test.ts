import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, expect, it, vi } from 'vitest';
import { startEmbeddedDynamo } from '../../local/embeddedDynamo';

/**
 * dynalite answers CreateTable with the table CREATING and marks it ACTIVE on a later timer; on a loaded machine
 * the credits CLI's first read on a new DATA_DIR came in between and was refused as ResourceNotFound (CI, session
 * 29). Here that timer is made late on purpose: a started store must already take item requests.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

it('a store started on a new data dir takes item requests at once, even when the table turns ACTIVE late', async () => {
  const timeout = globalThis.setTimeout;
  const late = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
    callback: (...args: unknown[]) => void,
    ms?: number,
    ...args: unknown[]
  ) =>
    // dynalite's own timer that marks a new table ACTIVE (createTableMs 0).
    timeout(
      callback,
      /TableStatus = 'ACTIVE'/.test(String(callback)) ? 300 : ms,
      ...args,
    )) as typeof setTimeout);
  const dataDir = await mkdtemp(join(tmpdir(), 'new-table-'));
  try {
    const store = await startEmbeddedDynamo({ dataDir, tableName: 'new-table' });
    try {
      const read = await store.client.send(
        new GetItemCommand({ TableName: 'new-table', Key: { pk: { S: 'ACCOUNT#a' }, sk: { S: 'ACCOUNT' } } }),
      );
      expect(read.Item).toBeUndefined();
      expect(late.mock.calls.some(([callback]) => /TableStatus = 'ACTIVE'/.test(String(callback)))).toBe(
        true,
      );
    } finally {
      await store.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
