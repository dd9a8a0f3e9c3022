import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { keyManagement } from '../../shared/keys/keyManagement';
import { type CaptureScreenshot, captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { FakeRenderer, fakeSessions, MemoryKeyStore, memoryScreenshotDeps } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team (round 11c): docs/security.md, "Secrets": "an operator who must cut an account off at once sets its
 * credits to zero (`npm run credits -- set <account> 0` ...; captures stop on the next request, whatever key is used
 * or created)". They do not: what the account's requests reserved before the cut-off and then failed is given back
 * after it (giveCreditsBack: `ADD credits :cost`), onto the zeroed balance, and the account captures again, charged
 * to credits the operator took away. Whoever expects the cut-off keeps captures that will fail in flight (a page
 * that never loads: free, 3 credits each at high resolution, ten slots), or, longer, async jobs queued (a batch
 * reserves them all at acceptance and gives each failed job's back when it ends, minutes or hours later). Credits on
 * the real DynamoDB ledger (dynalite), the screenshot use case over in-memory keys and a renderer the test holds.
 *
 * What should hold: after `set 0`, the account's next request is refused with 402 until an operator gives it credits
 * again, whatever was in flight.
 *
 * Fixed: each `set` starts a new epoch of the balance, and a refund lands only in the epoch its credits were reserved
 * in (CreditEpoch, shared/accounts/creditLedger.ts).
 */

let store: EmbeddedDynamo;

beforeAll(async () => {
  store = await startTestStore();
});

afterAll(async () => {
  await store?.close();
});

describe('an account cut off by setting its credits to zero', () => {
  it('cannot capture again with the credits of captures that were in flight and failed', async () => {
    const keys = new MemoryKeyStore();
    const credits = new DynamoCreditLedger(store.client, TEST_TABLE);
    const renderer = new FakeRenderer();
    const cipher = new AesGcmSecretCipher(randomBytes(32));
    const capture: CaptureScreenshot = captureScreenshot(
      memoryScreenshotDeps({ keys, credits, renderer, cipher }),
    );
    const manage = keyManagement({ sessions: fakeSessions, keys, credits, cipher, freeCredits: 0 });
    const accountId = `abuser-${Date.now()}`;
    const { key } = await manage.createKey(`session:${accountId}`, () => ({ name: 'stolen' }));
    await credits.set(accountId, 9);

    // Three captures at high resolution (3 credits each) of a page that will fail, in flight.
    const inFlight = [1, 2, 3].map((n) =>
      capture({
        apiKey: key,
        request: () => ({ url: `https://a.test/slow-fail-${n}`, width: 3000 }),
        deadline: Date.now() + 60_000,
      }),
    );
    while (renderer.captures.length < 3) await new Promise((resolve) => setImmediate(resolve));
    expect(await credits.balance(accountId)).toBe(0);

    // The operator cuts the account off, as docs/security.md says.
    expect(await credits.set(accountId, 0)).toBe(0);

    // The pages fail; their credits go back.
    renderer.finishSlow();
    for (const outcome of await Promise.all(inFlight)) expect(outcome.ok).toBe(false);

    const next = await capture({
      apiKey: key,
      request: () => ({ url: 'https://a.test/page', width: 3000 }),
      deadline: Date.now() + 60_000,
    });
    const balance = await credits.balance(accountId);
    // Before the fix: the refunds put 9 credits back on the zeroed balance, the next capture is answered 200 and
    // leaves 6 (two more follow).
    expect({ ok: next.ok, balanceAfter: balance }).toEqual({ ok: false, balanceAfter: 0 });
  });
});
