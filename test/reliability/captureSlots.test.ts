import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { DynamoCaptureSlots } from '../../shared/store/dynamoCaptureSlots';
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
    expect(new Set(leases.filter(Boolean)).size).toBe(10);
    expect(await slots.acquire(newAccount(), NOW, NOW + 60_000)).toBeDefined();
  });

  it('free a slot when it is released, once only', async () => {
    const account = newAccount();
    const leases = await Promise.all(
      Array.from({ length: 10 }, () => slots.acquire(account, NOW, NOW + 60_000)),
    );
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeUndefined();
    const first = leases[0] as string;
    await slots.release(account, first);
    await slots.release(account, first);
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeDefined();
    expect(await slots.acquire(account, NOW, NOW + 60_000)).toBeUndefined();
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
