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

describe('capture slots in DynamoDB with a shared capacity', () => {
  let shared: DynamoCaptureSlots;
  beforeAll(() => {
    shared = new DynamoCaptureSlots(DynamoDBDocumentClient.from(store.client), TEST_TABLE, 10, {
      shared: 3,
      headroom: 1,
    });
  });

  it('give one account the shared part, a newcomer the headroom, and nobody more', async () => {
    const [heavy, newcomer, late] = [newAccount(), newAccount(), newAccount()];
    const burst = await Promise.all(
      Array.from({ length: 8 }, () => shared.acquire(heavy, NOW, NOW + 60_000)),
    );
    expect(burst.filter(Boolean)).toHaveLength(3);
    const first = await shared.acquire(newcomer, NOW, NOW + 60_000);
    expect(first).toBeDefined();
    expect(await shared.acquire(newcomer, NOW, NOW + 60_000)).toBeUndefined();
    expect(await shared.acquire(late, NOW, NOW + 60_000)).toBeUndefined();
    // Refused takes were undone: once one capture ends, exactly one more fits.
    await shared.release(heavy, burst.find(Boolean) as string);
    const lateLease = await shared.acquire(late, NOW, NOW + 60_000);
    expect(lateLease).toBeDefined();
    expect(await shared.acquire(late, NOW, NOW + 60_000)).toBeUndefined();
    for (const lease of burst.filter(Boolean).slice(1)) await shared.release(heavy, lease as string);
    await shared.release(newcomer, first as string);
    await shared.release(late, lateLease as string);
  });

  it('keep the account slot of a penalised capture until the penalty wears off, and free the capacity at once', async () => {
    const account = newAccount();
    const lease = (await shared.acquire(account, NOW, NOW + 60_000)) as string;
    await shared.release(account, lease, NOW + 120_000);
    // The capacity is free again: three others fit beside the penalty...
    const others = await Promise.all(
      Array.from({ length: 3 }, () => shared.acquire(newAccount(), NOW, NOW + 60_000)),
    );
    expect(others.every(Boolean)).toBe(true);
    // ...but the penalised account holds a slot, so it gets no headroom, until the penalty has worn off.
    expect(await shared.acquire(account, NOW + 1_000, NOW + 60_000)).toBeUndefined();
    const after = NOW + 120_000;
    expect(await shared.acquire(account, after, after + 60_000)).toBeDefined();
  });
});
