import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { linkSlotLimit, type SlotLease } from '../../shared/accounts/captureSlots';
import { DynamoCaptureSlots, LINK_HELD } from '../../shared/store/dynamoCaptureSlots';
import { itemKey } from '../../shared/store/table';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/** The DynamoDB capture slots against dynalite: exact under parallel requests, never stuck after a crash. */

let store: EmbeddedDynamo;
let slots: DynamoCaptureSlots;
const NOW = Date.UTC(2026, 0, 1, 12);
let accounts = 0;
const newAccount = () => `slots-${++accounts}`;

beforeAll(async () => {
  store = await startTestStore();
  slots = new DynamoCaptureSlots(DynamoDBDocumentClient.from(store.client), TEST_TABLE, 10);
});
afterAll(() => store?.close());

describe('capture slots in DynamoDB', () => {
  it('give exactly the limit to a parallel burst, and take none from another account', async () => {
    const account = newAccount();
    const leases = await Promise.all(
      Array.from({ length: 25 }, () => slots.acquire(account, NOW, NOW + 60_000)),
    );
    expect(leases.filter(Boolean)).toHaveLength(10);
    expect(new Set(leases.map((lease) => lease?.leaseId).filter(Boolean)).size).toBe(10);
    expect(await slots.acquire(newAccount(), NOW, NOW + 60_000)).toBeDefined();
  });

  it('free a slot when it is released, once only', async () => {
    const account = newAccount();
    const leases = await Promise.all(
      Array.from({ length: 10 }, () => slots.acquire(account, NOW, NOW + 60_000)),
    );
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeUndefined();
    const first = (leases[0] as SlotLease).leaseId;
    await slots.release(account, first);
    await slots.release(account, first);
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeDefined();
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeUndefined();
  });

  it("give a signed link's captures all slots but one, even in a burst, and count released and lapsed ones out", async () => {
    const account = newAccount();
    const links = linkSlotLimit(10);
    const burst = await Promise.all(
      Array.from({ length: 25 }, () => slots.acquire(account, NOW, NOW + 1_000, 'signedLink')),
    );
    const taken = burst.filter((lease) => lease !== undefined);
    expect(taken).toHaveLength(links);
    // The last slot is the API keys'.
    expect(await slots.acquire(account, NOW, NOW + 60_000, 'signedLink')).toBeUndefined();
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeDefined();
    // A released link's lease frees a link's place.
    await slots.release(account, (taken[0] as SlotLease).leaseId);
    expect(await slots.acquire(account, NOW, NOW + 60_000, 'signedLink')).toBeDefined();
    // The others lapse: reaped, they leave both counts.
    const later = NOW + 1_000;
    const retaken = await Promise.all(
      Array.from({ length: 12 }, () => slots.acquire(account, later, later + 60_000, 'signedLink')),
    );
    expect(retaken.filter(Boolean)).toHaveLength(links - 1);
    const { Item } = await DynamoDBDocumentClient.from(store.client).send(
      new GetCommand({ TableName: TEST_TABLE, Key: itemKey.account(account), ConsistentRead: true }),
    );
    expect({ links: Item?.[LINK_HELD], held: Item?.held }).toEqual({ links, held: 10 });
  });

  it('free the slots of a function that died once their leases lapse, and only those', async () => {
    const account = newAccount();
    // Five captures whose function died (never released), five still running.
    await Promise.all(Array.from({ length: 5 }, () => slots.acquire(account, NOW, NOW + 1_000)));
    await Promise.all(Array.from({ length: 5 }, () => slots.acquire(account, NOW, NOW + 60_000)));
    expect(await slots.acquire(account, NOW + 999, NOW + 60_000)).toBeUndefined();
    const later = NOW + 1_000;
    const retaken = await Promise.all(
      Array.from({ length: 8 }, () => slots.acquire(account, later, later + 60_000)),
    );
    expect(retaken.filter(Boolean)).toHaveLength(5);
  });
});

/**
 * The capacity all accounts share has no item (the renderers' reserved concurrency is it): the slots only tell the
 * renderer whether the account held any slot before, so that a newcomer's capture may use the headroom.
 */
describe('capture slots in DynamoDB tell a newcomer from an account that holds a slot', () => {
  it('call the first slot of an account a newcomer’s, and none taken while it holds one', async () => {
    const account = newAccount();
    const first = (await slots.acquire(account, NOW, NOW + 60_000)) as SlotLease;
    expect(first.newcomer).toBe(true);
    const second = (await slots.acquire(account, NOW, NOW + 60_000)) as SlotLease;
    expect(second.newcomer).toBe(false);
    await slots.release(account, first.leaseId);
    await slots.release(account, second.leaseId);
    expect((await slots.acquire(account, NOW, NOW + 60_000))?.newcomer).toBe(true);
  });

  it('count a penalty as a slot held until it wears off, and a lapsed lease as none', async () => {
    const account = newAccount();
    const lease = (await slots.acquire(account, NOW, NOW + 60_000)) as SlotLease;
    await slots.release(account, lease.leaseId, NOW + 120_000);
    const during = (await slots.acquire(account, NOW + 1_000, NOW + 60_000)) as SlotLease;
    expect(during.newcomer).toBe(false);
    await slots.release(account, during.leaseId);
    const after = NOW + 120_000;
    expect((await slots.acquire(account, after, after + 60_000))?.newcomer).toBe(true);
  });

  it('write the account item only: no item shared by all accounts', async () => {
    await slots.acquire(newAccount(), NOW, NOW + 60_000);
    const { Items } = await DynamoDBDocumentClient.from(store.client).send(
      new ScanCommand({
        TableName: TEST_TABLE,
        FilterExpression: 'begins_with(pk, :captures)',
        ExpressionAttributeValues: { ':captures': 'CAPTURES' },
      }),
    );
    expect(Items).toEqual([]);
  });
});
