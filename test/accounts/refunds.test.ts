import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import type { CreditLedger } from '../../shared/accounts/creditLedger';
import type { PendingRefunds } from '../../shared/accounts/pendingRefunds';
import { giveCreditsBack } from '../../shared/accounts/refund';
import { readServiceConfig } from '../../shared/config';
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

let accounts = 0;
const newAccount = async (balance: number) => {
  const accountId = `refund-${++accounts}`;
  await stores.credits.set(accountId, balance);
  return accountId;
};

describe('DynamoPendingRefunds', () => {
  it('lists recorded refunds oldest first', async () => {
    const accountId = await newAccount(0);
    const later = await stores.pendingRefunds.record({ accountId, cost: 2, failedAt: 2_000_000_000_000 });
    const earlier = await stores.pendingRefunds.record({ accountId, cost: 1, failedAt: 1_000_000_000_000 });
    const listed = (await stores.pendingRefunds.list()).filter((refund) => refund.accountId === accountId);
    expect(listed).toEqual([earlier, later]);
  });

  it('gives the credits back and removes the record', async () => {
    const accountId = await newAccount(5);
    const refund = await stores.pendingRefunds.record({ accountId, cost: 3, failedAt: Date.now() });
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
    const refund = await stores.pendingRefunds.record({ accountId, cost: 2, failedAt: Date.now() });
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
    const refund = await stores.pendingRefunds.record({ accountId, cost: 3, failedAt: Date.now() });
    await Promise.all(Array.from({ length: 5 }, () => stores.pendingRefunds.giveBack(refund.id)));
    expect(await stores.credits.balance(accountId)).toBe(3);
  });
});

describe('giveCreditsBack', () => {
  const failing = (): never => {
    throw new Error('DynamoDB unreachable');
  };
  /** The real stores, with the given writes replaced. */
  const deps = (overrides: { refund?: CreditLedger['refund']; record?: PendingRefunds['record'] } = {}) => {
    const metrics = new InMemoryServiceMetrics();
    const credits: CreditLedger = Object.assign(
      Object.create(stores.credits),
      overrides.refund && { refund: overrides.refund },
    );
    const pendingRefunds: PendingRefunds = Object.assign(
      Object.create(stores.pendingRefunds),
      overrides.record && { record: overrides.record },
    );
    return { metrics, deps: { credits, pendingRefunds, metrics, now: () => 1_700_000_000_000 } };
  };

  it('refunds the account and records nothing when the refund is written', async () => {
    const accountId = await newAccount(4);
    const { deps: d, metrics } = deps();
    await giveCreditsBack(d, accountId, 2);
    expect(await stores.credits.balance(accountId)).toBe(6);
    expect(metrics.pending.refundFailures).toBe(0);
    expect((await stores.pendingRefunds.list()).some((r) => r.accountId === accountId)).toBe(false);
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
