import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import type { CreditLedger } from '../../shared/accounts/creditLedger';
import { newRefundId, type PendingRefund, type PendingRefunds } from '../../shared/accounts/pendingRefunds';
import { giveCreditsBack } from '../../shared/accounts/refund';
import { readServiceConfig } from '../../shared/config';
import { StoreUnavailableError } from '../../shared/errors';
import { itemKey } from '../../shared/store/table';
import { createStores } from '../../shared/wiring/stores';
import { InMemoryServiceMetrics } from '../helpers/inMemoryMetrics';
import { startTestStore, TEST_TABLE } from '../helpers/store';

let store: EmbeddedDynamo;
let stores: ReturnType<typeof createStores>;
beforeAll(async () => {
  store = await startTestStore();
  stores = createStores(store.client, { ...readServiceConfig({}), tableName: TEST_TABLE });
});
afterAll(() => store?.close());

/** A pending refund, as a capture whose refund failed leaves it. */
async function recorded(accountId: string, cost: number, failedAt: number): Promise<PendingRefund> {
  const refund = { id: newRefundId(failedAt), accountId, cost, failedAt };
  await stores.pendingRefunds.record(refund);
  return refund;
}

let accounts = 0;
const newAccount = async (balance: number) => {
  const accountId = `refund-${++accounts}`;
  await stores.credits.set(accountId, balance);
  return accountId;
};

describe('DynamoPendingRefunds', () => {
  it('lists recorded refunds oldest first', async () => {
    const accountId = await newAccount(0);
    const later = await recorded(accountId, 2, 2_000_000_000_000);
    const earlier = await recorded(accountId, 1, 1_000_000_000_000);
    const listed = (await stores.pendingRefunds.list()).filter((refund) => refund.accountId === accountId);
    expect(listed).toEqual([earlier, later]);
  });

  it('gives the credits back and removes the record', async () => {
    const accountId = await newAccount(5);
    const refund = await recorded(accountId, 3, Date.now());
    expect(await stores.pendingRefunds.giveBack(refund.id)).toEqual({
      outcome: 'returned',
      refund,
      balance: 8,
    });
    expect(await stores.credits.balance(accountId)).toBe(8);
    expect((await stores.pendingRefunds.list()).map((r) => r.id)).not.toContain(refund.id);
    expect(await stores.pendingRefunds.giveBack(refund.id)).toEqual({ outcome: 'notFound' });
  });

  it('never gives the same refund twice, even when a run stopped before removing the record', async () => {
    const accountId = await newAccount(0);
    const refund = await recorded(accountId, 2, Date.now());
    await stores.pendingRefunds.giveBack(refund.id);
    // The record as it would be left by a run that credited the account and then died.
    await store.client.send(
      new PutCommand({ TableName: TEST_TABLE, Item: { ...itemKey.pendingRefund(refund.id), ...refund } }),
    );
    expect(await stores.pendingRefunds.giveBack(refund.id)).toEqual({ outcome: 'alreadyReturned', refund });
    expect(await stores.credits.balance(accountId)).toBe(2);
  });

  it('returns concurrent calls for one refund exactly once', async () => {
    const accountId = await newAccount(0);
    const refund = await recorded(accountId, 3, Date.now());
    await Promise.all(Array.from({ length: 5 }, () => stores.pendingRefunds.giveBack(refund.id)));
    expect(await stores.credits.balance(accountId)).toBe(3);
  });
});

/** The refund marks the account item holds. */
async function refundMarks(accountId: string): Promise<string[]> {
  const { Item } = await store.client.send(
    new GetCommand({ TableName: TEST_TABLE, Key: itemKey.account(accountId), ConsistentRead: true }),
  );
  return Object.keys(Item ?? {}).filter((name) => name.startsWith('refund#'));
}

describe('giveCreditsBack', () => {
  const failing = (): never => {
    throw new Error('DynamoDB unreachable');
  };
  /** The real stores, with the given writes replaced. */
  const deps = (
    overrides: { refund?: CreditLedger['refundOnce']; record?: PendingRefunds['record'] } = {},
  ) => {
    const metrics = new InMemoryServiceMetrics();
    const credits: CreditLedger = Object.assign(
      Object.create(stores.credits),
      overrides.refund && { refundOnce: overrides.refund },
    );
    const pendingRefunds: PendingRefunds = Object.assign(
      Object.create(stores.pendingRefunds),
      overrides.record && { record: overrides.record },
    );
    return { metrics, deps: { credits, pendingRefunds, metrics, now: () => 1_700_000_000_000 } };
  };

  it('refunds the account and records nothing when the refund is written, leaving no mark', async () => {
    const accountId = await newAccount(4);
    const { deps: d, metrics } = deps();
    await giveCreditsBack(d, accountId, 2);
    expect(await stores.credits.balance(accountId)).toBe(6);
    expect(metrics.pending.refundFailures).toBe(0);
    expect((await stores.pendingRefunds.list()).some((r) => r.accountId === accountId)).toBe(false);
    expect(await refundMarks(accountId)).toEqual([]);
  });

  it('never gives twice a refund whose write landed but answered as failed (red team: a timeout paid twice)', async () => {
    const accountId = await newAccount(4);
    const { deps: d, metrics } = deps({
      refund: async (...args) => {
        await stores.credits.refundOnce(...args);
        throw new StoreUnavailableError();
      },
    });
    await giveCreditsBack(d, accountId, 2);
    expect(await stores.credits.balance(accountId)).toBe(6);
    expect(metrics.pending.refundFailures).toBe(1);
    // Kept for an operator all the same (the service cannot tell), and returning it gives nothing more.
    const [pending] = (await stores.pendingRefunds.list()).filter((r) => r.accountId === accountId);
    expect(pending).toMatchObject({ accountId, cost: 2 });
    expect(await stores.pendingRefunds.giveBack(pending?.id as string)).toEqual({
      outcome: 'alreadyReturned',
      refund: pending,
    });
    expect(await stores.credits.balance(accountId)).toBe(6);
    expect(await refundMarks(accountId)).toEqual([]);
    // A return that stopped before deleting the record leaves it: the next return still gives nothing (red team).
    await store.client.send(
      new PutCommand({
        TableName: TEST_TABLE,
        Item: { ...itemKey.pendingRefund(pending?.id as string), ...pending },
      }),
    );
    expect(await stores.pendingRefunds.giveBack(pending?.id as string)).toMatchObject({
      outcome: 'alreadyReturned',
    });
    expect(await stores.credits.balance(accountId)).toBe(6);
  });

  it('counts a failed refund and keeps it for an operator', async () => {
    const accountId = await newAccount(4);
    const { deps: d, metrics } = deps({ refund: async () => failing() });
    await giveCreditsBack(d, accountId, 2);
    expect(metrics.pending.refundFailures).toBe(1);
    expect((await stores.pendingRefunds.list()).filter((r) => r.accountId === accountId)).toEqual([
      expect.objectContaining({ accountId, cost: 2, failedAt: 1_700_000_000_000 }),
    ]);
  });

  it('still resolves when neither the refund nor its record can be written', async () => {
    const { deps: d, metrics } = deps({ refund: async () => failing(), record: async () => failing() });
    await expect(giveCreditsBack(d, 'unreachable', 1)).resolves.toBeUndefined();
    expect(metrics.pending.refundFailures).toBe(1);
  });
});
