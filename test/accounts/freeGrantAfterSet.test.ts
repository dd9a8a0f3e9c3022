import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { MemoryCreditLedger } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team (round 20): `npm run credits -- set <account> 0` on an account that had not signed in yet did not hold:
 * its first session-token call then added the free grant (balance 100), against docs/security.md's cut-off, and
 * `set 1000` for a new customer gave 1100. A balance an operator set gets no grant after; `add` stays relative.
 * On the DynamoDB ledger (dynalite) and the in-memory one the rule tests use.
 */

const FREE = 100;
let store: EmbeddedDynamo;

beforeAll(async () => {
  store = await startTestStore();
});

afterAll(async () => {
  await store?.close();
});

describe.each([
  ['DynamoDB', () => new DynamoCreditLedger(store.client, TEST_TABLE)],
  ['in memory', () => new MemoryCreditLedger()],
])('the free grant (%s ledger)', (_, ledger) => {
  const account = () => `grant-${Math.random().toString(36).slice(2)}`;
  /** The ledger as another process sees it: the table's (a process remembers the accounts it granted), or the same. */
  const elsewhere = (credits: DynamoCreditLedger | MemoryCreditLedger) =>
    credits instanceof DynamoCreditLedger ? ledger() : credits;

  it('is given once to a new account', async () => {
    const credits = ledger();
    const id = account();
    await credits.grantFreeCreditsOnce(id, FREE, 1);
    await elsewhere(credits).grantFreeCreditsOnce(id, FREE, 2);
    expect(await credits.balance(id)).toBe(FREE);
  });

  it.each([0, 1000])(
    'is not given on top of a balance an operator set before it (set %i)',
    async (amount) => {
      const credits = ledger();
      const id = account();
      await credits.set(id, amount);
      await credits.grantFreeCreditsOnce(id, FREE, 1);
      expect(await credits.balance(id)).toBe(amount);
    },
  );

  it('leaves a balance an operator set after it as set', async () => {
    const credits = ledger();
    const id = account();
    await credits.grantFreeCreditsOnce(id, FREE, 1);
    await credits.set(id, 0);
    await elsewhere(credits).grantFreeCreditsOnce(id, FREE, 2);
    expect(await credits.balance(id)).toBe(0);
  });

  it('is still given after credits an operator added', async () => {
    const credits = ledger();
    const id = account();
    await credits.add(id, 50);
    await credits.grantFreeCreditsOnce(id, FREE, 1);
    expect(await credits.balance(id)).toBe(50 + FREE);
  });
});
