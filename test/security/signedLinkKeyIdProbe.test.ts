import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { generateApiKey, hashApiKey, lastFour, newKeyId } from '../../shared/keys/apiKey';
import { MAX_KEYS_PER_ACCOUNT } from '../../shared/keys/schemas';
import { DynamoKeyStore } from '../../shared/store/dynamoKeyStore';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team (round 26): a signed link naming a key id that exists took two reads of the table before its `401`, one
 * naming an id that does not (or no longer) exist took one: 7.6 against 4.9 ms, so anyone could tell, without a
 * credential, whether a key id exists or was deleted (docs/api.md 9.5). Every id now costs the same reads.
 */

let store: EmbeddedDynamo;
let keys: DynamoKeyStore;
const reads: string[] = [];

beforeAll(async () => {
  store = await startTestStore();
  const db = DynamoDBDocumentClient.from(store.client);
  db.middlewareStack.add(
    (next, context) => async (args) => {
      reads.push(String(context.commandName));
      return next(args);
    },
    { step: 'initialize', name: 'countReads' },
  );
  keys = new DynamoKeyStore(db, TEST_TABLE);
});
afterAll(() => store?.close());

async function newKey(accountId: string): Promise<string> {
  const value = generateApiKey();
  const id = newKeyId(Date.now());
  await keys.create(
    {
      id,
      accountId,
      name: 'link key',
      keyHash: hashApiKey(value),
      last4: lastFour(value),
      createdAt: Date.now(),
      sealedSigningSecret: 'sealed',
    },
    MAX_KEYS_PER_ACCOUNT,
  );
  return id;
}

/** The table commands a signed link's key lookup sends for `keyId`. */
async function lookup(keyId: string): Promise<string[]> {
  reads.length = 0;
  await keys.findSigningKey(keyId);
  return [...reads];
}

describe("a signed link's key lookup", () => {
  it('reads the table the same way for a key id that exists, one that never did and one deleted', async () => {
    const existing = await newKey('probe-a');
    const deleted = await newKey('probe-a');
    expect(await keys.delete('probe-a', deleted)).toBe(true);
    const known = await lookup(existing);
    expect(known).toEqual(['GetItemCommand', 'GetItemCommand']);
    expect(await lookup(newKeyId(Date.now()))).toEqual(known);
    expect(await lookup(deleted)).toEqual(known);
    expect(await keys.findSigningKey(deleted)).toBeUndefined();
    expect((await keys.findSigningKey(existing))?.identity.keyId).toBe(existing);
  });
});
