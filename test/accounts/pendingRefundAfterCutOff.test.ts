import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import type { CreditLedger } from '../../shared/accounts/creditLedger';
import { keyManagement } from '../../shared/keys/keyManagement';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { DynamoPendingRefunds } from '../../shared/store/dynamoPendingRefunds';
import { fakeSessions, MemoryKeyStore, memoryScreenshotDeps } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team 12b (credit epochs): docs/api.md, `credits -- set`: "The balance starts anew: credits reserved before it
 * (captures in flight, queued jobs) are not given back into it when they fail, so `set <account> 0` cuts an account
 * off." A failed capture whose refund write failed (the store out of reach a moment: the RefundFailures alarm) is
 * kept as a pending refund without the epoch its credits were reserved in, and docs/deploy.md's runbook for that
 * alarm returns every pending refund (`refunds return <id>` "for each"). Returned after the cut-off, it lands on
 * the zeroed balance in full, whatever the set said: the account captures again on credits the operator took away.
 * (shared/accounts/creditLedger.ts says "a refund that names none (an operator returning a pending refund) always
 * lands", but nothing tells the operator, and the record does not even keep which epoch it was.)
 *
 * What should hold: the pending refund keeps its epoch, and returning it after a set gives nothing (answered as such).
 *
 * Fixed: a pending refund keeps its epoch (shared/accounts/refund.ts), and DynamoPendingRefunds.giveBack answers
 * `balanceSetSince` and removes it when the balance was set since.
 *
 * Since session 28 a synchronous capture's refund is no longer kept as a pending refund (its reservation is:
 * test/accounts/creditReservations.test.ts); an async capture whose job could not be queued still is, and is the
 * way in here.
 */

let store: EmbeddedDynamo;

beforeAll(async () => {
  store = await startTestStore();
});

afterAll(async () => {
  await store?.close();
});

describe('a pending refund of credits reserved before the account was cut off', () => {
  it('is not given back onto the balance the operator set to zero', async () => {
    const keys = new MemoryKeyStore();
    const ledger = new DynamoCreditLedger(store.client, TEST_TABLE);
    // The table out of reach for the refund write alone (the capture's own refund fails, and is kept for an operator).
    let refundsFail = true;
    const credits: CreditLedger = {
      grantFreeCreditsOnce: (...args) => ledger.grantFreeCreditsOnce(...args),
      balance: (...args) => ledger.balance(...args),
      reserve: (...args) => ledger.reserve(...args),
      chargeReservation: (...args) => ledger.chargeReservation(...args),
      refundReservation: (...args) => ledger.refundReservation(...args),
      refund: (...args) => ledger.refund(...args),
      refundOnce: async (...args) => {
        if (refundsFail) throw new Error('the table went away');
        return ledger.refundOnce(...args);
      },
      forgetRefund: (...args) => ledger.forgetRefund(...args),
      add: (...args) => ledger.add(...args),
      set: (...args) => ledger.set(...args),
    };
    const pendingRefunds = new DynamoPendingRefunds(store.client, TEST_TABLE);
    const cipher = new AesGcmSecretCipher(randomBytes(32));
    // The job table answers late, then fails: the capture's credits are to go back.
    let queueing = () => {};
    const queued = new Promise<void>((resolve) => {
      queueing = resolve;
    });
    let failQueue = () => {};
    const queueFails = new Promise<void>((resolve) => {
      failQueue = resolve;
    });
    const queueCapture = async (): Promise<never> => {
      queueing();
      await queueFails;
      throw new Error('the job table went away');
    };
    const capture = captureScreenshot(
      memoryScreenshotDeps({ keys, credits, cipher, pendingRefunds, queueCapture }),
    );
    const manage = keyManagement({ sessions: fakeSessions, keys, credits, cipher, freeCredits: 0 });
    const accountId = `cut-off-${Date.now()}`;
    const { key } = await manage.createKey(`session:${accountId}`, () => ({ name: 'stolen' }));
    await ledger.set(accountId, 3);

    // An async capture at high resolution (3 credits), being queued.
    const inFlight = capture({
      apiKey: key,
      request: () => ({ url: 'https://a.test/page', width: 3000, async: true }),
      deadline: Date.now() + 60_000,
    });
    await queued;
    expect(await ledger.balance(accountId)).toBe(0);

    // The operator cuts the account off.
    expect(await ledger.set(accountId, 0)).toBe(0);

    // The job is not queued; its refund cannot be written and is kept for an operator.
    failQueue();
    expect((await inFlight).ok).toBe(false);
    refundsFail = false;
    const pending = (await pendingRefunds.list()).filter((refund) => refund.accountId === accountId);
    expect(pending).toHaveLength(1);

    // The RefundFailures runbook (docs/deploy.md): return each pending refund.
    for (const refund of pending) {
      expect(await pendingRefunds.giveBack(refund.id)).toMatchObject({ outcome: 'balanceSetSince' });
    }

    // Before a fix: 3, the cut-off undone.
    expect(await ledger.balance(accountId)).toBe(0);
    expect((await pendingRefunds.list()).filter((refund) => refund.accountId === accountId)).toEqual([]);
  });
});
