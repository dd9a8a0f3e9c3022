import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedDynamo, localDynamoClient } from '../../local/embeddedDynamo';
import { KeyDeletedWhileCreatedError } from '../../shared/errors';
import { generateApiKey, hashApiKey, lastFour, newKeyId } from '../../shared/keys/apiKey';
import type { NewKey } from '../../shared/keys/keyStore';
import { MAX_KEYS_PER_ACCOUNT } from '../../shared/keys/schemas';
import { DynamoKeyStore } from '../../shared/store/dynamoKeyStore';
import { itemKey } from '../../shared/store/table';
import { deferred } from '../helpers/deferred';
import { dumpTable, startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The account's keyCount against dynalite, when creates fail or stop half-way: it never keeps a slot no key holds
 * for longer than a stopped creator could still write, and it stays exact under concurrent creates and deletes.
 */

const NOW = Date.UTC(2026, 0, 1, 12);
/** Past the time a stopped creator's reservation lapses (15 minutes). */
const LATER = NOW + 16 * 60_000;

let store: EmbeddedDynamo;
let db: DynamoDBDocumentClient;
let keys: DynamoKeyStore;
let accounts = 0;

beforeAll(async () => {
  store = await startTestStore();
  db = DynamoDBDocumentClient.from(store.client);
  keys = new DynamoKeyStore(db, TEST_TABLE);
});
afterAll(() => store?.close());

const newAccountId = () => `keycount-${++accounts}`;

function newKey(accountId: string, createdAt = NOW): NewKey {
  const value = generateApiKey();
  return {
    id: newKeyId(createdAt),
    accountId,
    name: 'test key',
    keyHash: hashApiKey(value),
    last4: lastFour(value),
    createdAt,
    sealedSigningSecret: 'sealed',
  };
}

/** A key store on its own client whose calls matching `fails` throw before reaching the store (a throttle, an outage). */
function storeFailing(fails: (input: { Item?: unknown }, call: number) => boolean): DynamoKeyStore {
  const client = localDynamoClient(store.endpoint, store.credentials);
  let calls = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (fails(args.input as { Item?: unknown }, ++calls)) throw new Error('injected store failure');
      return next(args);
    },
    { step: 'initialize' },
  );
  return new DynamoKeyStore(DynamoDBDocumentClient.from(client), TEST_TABLE);
}

/** A put of an item whose key attribute starts with `prefix`, in either form the middleware may see it. */
const putOf = (attribute: string, prefix: string) => {
  const key = new RegExp(`"${attribute}":(\\{"S":)?"${prefix}`);
  return (input: { Item?: unknown }) => input.Item !== undefined && key.test(JSON.stringify(input.Item));
};
const LISTING_PUT = putOf('sk', 'KEY#');
const AUTHENTICATION_PUT = putOf('pk', 'APIKEY#');

/** A create whose process died after its first `calls` calls: none of its later writes, nor its undo, land. */
function createThatDies(key: NewKey, calls: number) {
  return storeFailing((_, call) => call > calls).create(key, MAX_KEYS_PER_ACCOUNT);
}

async function accountItem(accountId: string): Promise<Record<string, unknown>> {
  const { Item } = await db.send(
    new GetCommand({ TableName: TEST_TABLE, Key: itemKey.account(accountId), ConsistentRead: true }),
  );
  return Item ?? {};
}

async function listedKeys(accountId: string): Promise<number> {
  const { Count } = await db.send(
    new QueryCommand({
      TableName: TEST_TABLE,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': itemKey.account(accountId).pk, ':prefix': 'KEY#' },
      ConsistentRead: true,
      Select: 'COUNT',
    }),
  );
  return Count ?? 0;
}

/** keyCount, the keys listed, and the reservations left on the account item. */
async function countState(accountId: string) {
  const account = await accountItem(accountId);
  return {
    keyCount: Number(account.keyCount ?? 0),
    listed: await listedKeys(accountId),
    reservations: Object.keys(account).filter((name) => name.startsWith('keySlot#')).length,
  };
}

async function createKeys(accountId: string, count: number): Promise<NewKey[]> {
  const made = Array.from({ length: count }, () => newKey(accountId));
  const stored = await Promise.all(made.map((key) => keys.create(key, MAX_KEYS_PER_ACCOUNT)));
  expect(stored.every(Boolean)).toBe(true);
  return made;
}

/** Creates keys one by one until the account refuses one: how many keys it then holds. */
async function fillUp(accountId: string): Promise<number> {
  while (await keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT));
  const { keyCount, listed } = await countState(accountId);
  expect(keyCount).toBe(listed);
  return listed;
}

describe('a create that fails', () => {
  it.each([
    ['its listing write fails', LISTING_PUT],
    ['its authentication write fails after the listing was written', AUTHENTICATION_PUT],
  ])('leaves keyCount unchanged when %s, and stores nothing of the key', async (_, failingPut) => {
    const accountId = newAccountId();
    await createKeys(accountId, 2);
    const key = newKey(accountId);
    await expect(storeFailing(failingPut).create(key, MAX_KEYS_PER_ACCOUNT)).rejects.toThrow(
      'injected store failure',
    );
    expect(await countState(accountId)).toEqual({ keyCount: 2, listed: 2, reservations: 0 });
    expect(await dumpTable(store)).not.toContain(key.id);
  });

  it('loses no slot when creates fail at the limit again and again: the 100th key is still possible', async () => {
    const accountId = newAccountId();
    await createKeys(accountId, MAX_KEYS_PER_ACCOUNT - 1);
    const throttled = storeFailing(LISTING_PUT);
    for (let i = 0; i < 3; i++) {
      await expect(throttled.create(newKey(accountId), MAX_KEYS_PER_ACCOUNT)).rejects.toThrow();
    }
    expect(await keys.create(newKey(accountId), MAX_KEYS_PER_ACCOUNT)).toEqual({ isActive: true });
    expect(await keys.create(newKey(accountId), MAX_KEYS_PER_ACCOUNT)).toBeUndefined();
    expect(await countState(accountId)).toEqual({ keyCount: 100, listed: 100, reservations: 0 });
  });
});

describe('a create whose process died half-way', () => {
  it('holds its slot while it could still write, and the next create at the limit after that gets the slot back', async () => {
    const accountId = newAccountId();
    await createKeys(accountId, MAX_KEYS_PER_ACCOUNT - 1);
    await expect(createThatDies(newKey(accountId), 1)).rejects.toThrow();
    expect(await countState(accountId)).toEqual({ keyCount: 100, listed: 99, reservations: 1 });

    expect(await keys.create(newKey(accountId, NOW + 60_000), MAX_KEYS_PER_ACCOUNT)).toBeUndefined();
    expect(await keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)).toEqual({ isActive: true });
    expect(await countState(accountId)).toEqual({ keyCount: 100, listed: 100, reservations: 0 });
    expect(await keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)).toBeUndefined();
    expect(await keys.list(accountId)).toHaveLength(100);
  });

  it('keeps the slot of a key it listed before dying until that key is deleted, then frees it once', async () => {
    const accountId = newAccountId();
    await createKeys(accountId, MAX_KEYS_PER_ACCOUNT - 1);
    const halfMade = newKey(accountId);
    await expect(createThatDies(halfMade, 2)).rejects.toThrow();
    expect(await countState(accountId)).toEqual({ keyCount: 100, listed: 100, reservations: 1 });

    // The listing holds the slot: no repair gives it back, however late.
    expect(await keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)).toBeUndefined();
    expect(await keys.delete(accountId, halfMade.id)).toBe(true);
    expect(await countState(accountId)).toEqual({ keyCount: 99, listed: 99, reservations: 0 });
    expect(await keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)).toEqual({ isActive: true });
    expect(await keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)).toBeUndefined();
    expect(await countState(accountId)).toEqual({ keyCount: 100, listed: 100, reservations: 0 });
  });
});

describe('concurrent creates and deletes', () => {
  it('never exceed 100 keys while creates race to repair slots of died creators', async () => {
    const accountId = newAccountId();
    await createKeys(accountId, 90);
    const died = await Promise.allSettled(
      Array.from({ length: 10 }, () => createThatDies(newKey(accountId), 1)),
    );
    expect(died.every((outcome) => outcome.status === 'rejected')).toBe(true);
    expect(await countState(accountId)).toEqual({ keyCount: 100, listed: 90, reservations: 10 });

    const raced = await Promise.all(
      Array.from({ length: 30 }, () => keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)),
    );
    // Every slot of the died creators is given back; the racers take them, unless a racer's repair found them gone.
    const state = await countState(accountId);
    expect(state).toEqual({
      keyCount: state.listed,
      listed: 90 + raced.filter(Boolean).length,
      reservations: 0,
    });
    expect(state.listed).toBeLessThanOrEqual(100);
    expect(await fillUp(accountId)).toBe(100);
  });

  it('keep keyCount equal to the keys listed when deletes race creates and repairs', async () => {
    const accountId = newAccountId();
    const existing = await createKeys(accountId, 90);
    await Promise.allSettled(Array.from({ length: 10 }, () => createThatDies(newKey(accountId), 1)));

    const deleted = existing.slice(0, 5);
    const [created, deletes] = await Promise.all([
      Promise.all(
        Array.from({ length: 30 }, () => keys.create(newKey(accountId, LATER), MAX_KEYS_PER_ACCOUNT)),
      ),
      Promise.all(deleted.map((key) => keys.delete(accountId, key.id))),
    ]);
    expect(deletes.every(Boolean)).toBe(true);
    const state = await countState(accountId);
    expect(state.reservations).toBe(0);
    expect(state.keyCount).toBe(state.listed);
    expect(state.listed).toBe(85 + created.filter(Boolean).length);
    expect(state.listed).toBeLessThanOrEqual(100);
    expect(await fillUp(accountId)).toBe(100);
  });
});

/**
 * A key store whose calls matching `holds` wait until the returned `release` is called: one side of a race stopped
 * at an exact point while the other runs.
 */
function storeHolding(holds: (input: { Item?: unknown; Key?: unknown }, command: string) => boolean) {
  const client = localDynamoClient(store.endpoint, store.credentials);
  const released = deferred();
  const reached = deferred();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (holds(args.input as { Item?: unknown }, context.commandName ?? '')) {
        reached.resolve();
        await released.promise;
      }
      return next(args);
    },
    { step: 'initialize' },
  );
  return {
    keys: new DynamoKeyStore(DynamoDBDocumentClient.from(client), TEST_TABLE),
    held: reached.promise,
    release: released.resolve,
  };
}

/** A new account's key whose create is stopped just before its authentication item: listed, and not working yet. */
async function createStoppedBeforeItWorks() {
  const accountId = newAccountId();
  const key = newKey(accountId);
  const creator = storeHolding(AUTHENTICATION_PUT);
  const created = creator.keys.create(key, MAX_KEYS_PER_ACCOUNT);
  await creator.held;
  return { accountId, key, created, release: creator.release };
}

/** The delete of a listing item (a key's `KEY#` item under its account). */
const LISTING_DELETE = (input: { Key?: unknown }, command: string) =>
  command === 'DeleteItemCommand' && /"sk":(\{"S":)?"KEY#/.test(JSON.stringify(input.Key ?? {}));

describe("the owner's delete or revoke of a key being created (red team: a working key nobody could list or kill)", () => {
  it('leaves no working key when the delete runs before the key works, and the create answers 409', async () => {
    const { accountId, key, created, release } = await createStoppedBeforeItWorks();
    expect(await keys.delete(accountId, key.id)).toBe(true);
    release();
    await expect(created).rejects.toBeInstanceOf(KeyDeletedWhileCreatedError);
    expect(await keys.findByHash(key.keyHash)).toBeUndefined();
    expect(await keys.findSigningKey(key.id)).toBeUndefined();
    expect(await countState(accountId)).toEqual({ keyCount: 0, listed: 0, reservations: 0 });
  });

  it('leaves no working key when the create finished between the two halves of the delete', async () => {
    const { accountId, key, created, release } = await createStoppedBeforeItWorks();
    // The delete finds no authentication item, then stops before removing the listing; the create then finishes.
    const deleter = storeHolding(LISTING_DELETE);
    const deleted = deleter.keys.delete(accountId, key.id);
    await deleter.held;
    release();
    expect(await created).toEqual({ isActive: true });
    deleter.release();
    expect(await deleted).toBe(true);
    expect(await keys.findByHash(key.keyHash)).toBeUndefined();
    expect(await countState(accountId)).toEqual({ keyCount: 0, listed: 0, reservations: 0 });
  });

  it('leaves the key revoked when the revoke runs before the key works', async () => {
    const { accountId, key, created, release } = await createStoppedBeforeItWorks();
    expect(await keys.revoke(accountId, key.id)).toBe(true);
    release();
    // The create says so too: its 201 answers isActive false, as the list does.
    expect(await created).toEqual({ isActive: false });
    expect(await keys.findByHash(key.keyHash)).toMatchObject({ isActive: false });
    expect((await keys.get(accountId, key.id))?.isActive).toBe(false);
  });
});
