import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { SEND_STALL_MS, slowestDeliveryMs } from '../../local/httpAdapter';
import type { CreditLedger } from '../../shared/accounts/creditLedger';
import { ANSWERED_WITHIN_MS } from '../../shared/accounts/creditReservation';
import { MAX_ANSWER_BYTES } from '../../shared/capture/rendererProtocol';
import { readServiceConfig } from '../../shared/config';
import { keyManagement } from '../../shared/keys/keyManagement';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { itemKey } from '../../shared/store/table';
import { RESPONSE_RESERVE_MS } from '../../shared/timing';
import { DeferredUsageRecorder } from '../../shared/usage/usageRecorder';
import { createStores, documentClient } from '../../shared/wiring/stores';
import { InMemoryServiceMetrics } from '../helpers/inMemoryMetrics';
import { FakeRenderer, fakeSessions, memoryScreenshotDeps } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team, round 21: a front killed between a synchronous capture's admission and its answer (the local process
 * killed; deployed, an out-of-memory kill or a timeout) wrote no refund and no usage record: the balance fell by 14
 * while usage showed 13. Now the admission keeps the credits as a reservation on the account, which the answer
 * settles; one nobody settled lapses and is given back, exactly once, by the account's next admission or balance read.
 * Over DynamoDB's API (dynalite), through the screenshot use case as the fronts run it.
 */

let store: EmbeddedDynamo;
let stores: ReturnType<typeof createStores>;
beforeAll(async () => {
  store = await startTestStore();
  stores = createStores(store.client, { ...readServiceConfig({}), tableName: TEST_TABLE });
});
afterAll(() => store?.close());

/** The time the fronts here give a capture. */
const CAPTURE_MS = 10_000;
/** Past the lapse of a reservation made now. */
const LAPSED = CAPTURE_MS + ANSWERED_WITHIN_MS + 1_000;

let accounts = 0;

/** An account with `balance` credits and a key, and fronts over the same stores, each with a clock of its own. */
async function account(balance: number) {
  const accountId = `reserved-${++accounts}`;
  await stores.credits.set(accountId, balance);
  const { keys } = stores;
  const manage = keyManagement({
    sessions: fakeSessions,
    keys,
    credits: stores.credits,
    cipher: new AesGcmSecretCipher(randomBytes(32)),
    freeCredits: 0,
  });
  const { key: apiKey } = await manage.createKey(`session:${accountId}`, () => ({ name: 'reserved' }));
  const front = (now: () => number, credits: CreditLedger = stores.credits) => {
    const renderer = new FakeRenderer();
    const usage = new DeferredUsageRecorder(stores.usageStore);
    const metrics = new InMemoryServiceMetrics();
    const capture = captureScreenshot(
      memoryScreenshotDeps({
        keys,
        credits,
        admissions: stores.admissions,
        pendingRefunds: stores.pendingRefunds,
        renderer,
        usage,
        metrics,
        now,
      }),
    );
    /** One capture whose answer reaches its client, as the Lambda adapter settles it. */
    const captureAnswered = (url: string) =>
      usage.inScope(async () => {
        const outcome = await capture({ apiKey, request: () => ({ url }), deadline: now() + CAPTURE_MS });
        await usage.flush();
        return outcome;
      });
    /** A front that dies mid-capture: admitted, its page never answers, and nothing after that runs. */
    const dies = async () => {
      void capture({ apiKey, request: () => ({ url: 'https://a.test/slow' }), deadline: now() + CAPTURE_MS });
      await expect.poll(() => renderer.captures.length).toBe(1);
    };
    return { capture, captureAnswered, dies, metrics };
  };
  return { accountId, apiKey, front };
}

async function reservationsOn(accountId: string): Promise<string[]> {
  const { Item } = await store.client.send(
    new GetCommand({ TableName: TEST_TABLE, Key: itemKey.account(accountId), ConsistentRead: true }),
  );
  return Object.keys(Item ?? {}).filter((name) => name.startsWith('rsv#'));
}

describe('a reservation', () => {
  it('outlives any live front: deployed, its function; locally, the slowest delivery the server keeps going', () => {
    // Deployed, the front is stopped 3 s after its capture's deadline.
    expect(ANSWERED_WITHIN_MS).toBeGreaterThan(RESPONSE_RESERVE_MS + 60_000);
    // Locally, the largest answer at the least pace the local server allows (a MiB per 30 s: 95 minutes).
    const slowest = Math.ceil(MAX_ANSWER_BYTES / (1024 * 1024)) * SEND_STALL_MS;
    expect(slowestDeliveryMs()).toBeGreaterThan(slowest);
    expect(slowestDeliveryMs(1_000)).toBeGreaterThan(Math.ceil(MAX_ANSWER_BYTES / (1024 * 1024)) * 1_000);
  });

  it("lapses that long after its capture's deadline, as the front says", async () => {
    const { accountId, front } = await account(5);
    const start = Date.now();
    await front(() => start).dies();
    const [lapse] = (await reservationsOn(accountId)).map((name) => Number.parseInt(name.slice(4), 36));
    expect(lapse).toBe(start + CAPTURE_MS + ANSWERED_WITHIN_MS);
  });
});

describe('a synchronous capture whose front dies before its answer', () => {
  it('leaves its credits reserved, given back by the next admission once the reservation lapsed', async () => {
    const { accountId, front } = await account(10);
    const start = Date.now();
    await front(() => start).dies();
    expect(await stores.credits.balance(accountId)).toBe(9);
    expect(await reservationsOn(accountId)).toHaveLength(1);

    // Before it lapsed, another front's capture leaves it alone (the first front may still answer).
    const alive = front(() => start + 60_000);
    expect((await alive.captureAnswered('https://a.test/one')).ok).toBe(true);
    expect(await stores.credits.balance(accountId)).toBe(8);
    expect(await reservationsOn(accountId)).toHaveLength(1);

    // Once it lapsed, the next admission gives it back: only the answered captures are paid.
    const later = front(() => start + LAPSED);
    expect((await later.captureAnswered('https://a.test/two')).ok).toBe(true);
    expect(await stores.credits.balance(accountId)).toBe(8);
    expect(await reservationsOn(accountId)).toEqual([]);
  });

  it('is given back by a read of the balance (GET /api/credits) once lapsed, once however many look', async () => {
    const { accountId, front } = await account(5);
    await front(() => Date.now() - LAPSED).dies();
    const balances = await Promise.all(Array.from({ length: 6 }, () => stores.credits.balance(accountId)));
    expect(balances.every((balance) => balance === 5)).toBe(true);
    expect(await stores.credits.balance(accountId)).toBe(5);
    expect(await reservationsOn(accountId)).toEqual([]);
  });

  it('are all given back by one read of the balance, however many fronts died (red team, round 25)', async () => {
    const { accountId, front } = await account(24);
    // Apart, so that each finds the slot of the one before lapsed (not its reservation).
    const first = Date.now() - LAPSED - 12 * (CAPTURE_MS + 1_000);
    for (let i = 0; i < 12; i++) await front(() => first + i * (CAPTURE_MS + 1_000)).dies();
    expect(await reservationsOn(accountId)).toHaveLength(12);
    expect(await stores.credits.balance(accountId)).toBe(24);
    expect(await reservationsOn(accountId)).toEqual([]);
  });

  it('lets an account whose whole balance a dead front holds capture again once it lapsed', async () => {
    const { accountId, front } = await account(1);
    const start = Date.now();
    await front(() => start).dies();
    // Not yet: 402, the credit is still the first front's.
    const soon = await front(() => start + 1_000).captureAnswered('https://a.test/one');
    expect(soon.ok).toBe(false);
    const later = await front(() => start + LAPSED).captureAnswered('https://a.test/one');
    expect(later.ok).toBe(true);
    expect(await stores.credits.balance(accountId)).toBe(0);
    expect(await reservationsOn(accountId)).toEqual([]);
  });

  it('gives nothing into a balance an operator set since (an account cut off), and the reservation goes', async () => {
    const { accountId, front } = await account(3);
    await front(() => Date.now() - LAPSED).dies();
    await stores.credits.set(accountId, 0);
    expect(await stores.credits.balance(accountId)).toBe(0);
    expect(await reservationsOn(accountId)).toEqual([]);
  });
});

describe('the ledger', () => {
  it('holds what it reserves with a hold, and gives back the lapsed ones it finds on the way', async () => {
    const { accountId, front } = await account(10);
    await front(() => Date.now() - LAPSED).dies();
    const now = Date.now();
    await stores.credits.reserve(accountId, 2, {
      id: `${(now + 60_000).toString(36)}.2.${'a'.repeat(12)}`,
      until: now + 60_000,
      now,
    });
    expect(await reservationsOn(accountId)).toEqual([
      `rsv#${(now + 60_000).toString(36)}.2.${'a'.repeat(12)}`,
    ]);
    // 10, less the new 2; the dead front's 1 is back.
    expect(await stores.credits.balance(accountId)).toBe(8);
  });

  it('gives nothing for reservation attributes it did not write (a malformed id, a cost past 16 digits)', async () => {
    const { accountId } = await account(5);
    const forged = [
      'rsv#junk',
      `rsv#1.${'9'.repeat(17)}.${'b'.repeat(12)}`,
      `rsv#1.3.${'c'.repeat(11)}`,
    ] as const;
    await documentClient(store.client).send(
      new UpdateCommand({
        TableName: TEST_TABLE,
        Key: itemKey.account(accountId),
        UpdateExpression: 'SET #a = :zero, #b = :zero, #c = :zero',
        ExpressionAttributeNames: { '#a': forged[0], '#b': forged[1], '#c': forged[2] },
        ExpressionAttributeValues: { ':zero': 0 },
      }),
    );
    expect(await stores.credits.balance(accountId)).toBe(5);
    expect((await reservationsOn(accountId)).sort()).toEqual([...forged].sort());
  });
});

describe('a synchronous capture whose front lives', () => {
  it('settles its reservation with the answer: charged, never given back once it would have lapsed', async () => {
    const { accountId, front } = await account(4);
    const start = Date.now();
    const outcome = await front(() => start).captureAnswered('https://a.test/page');
    expect(outcome.ok).toBe(true);
    expect(await reservationsOn(accountId)).toEqual([]);
    expect((await front(() => start + LAPSED).captureAnswered('https://a.test/next')).ok).toBe(true);
    expect(await stores.credits.balance(accountId)).toBe(2);
  });

  it('gives a failed capture back in the same write that removes its reservation', async () => {
    const { accountId, front } = await account(4);
    const outcome = await front(() => Date.now()).captureAnswered('https://a.test/fail');
    expect(outcome.ok).toBe(false);
    expect(await stores.credits.balance(accountId)).toBe(4);
    expect(await reservationsOn(accountId)).toEqual([]);
  });

  it('gives a hang-up back once, whether the front or the lapse comes first', async () => {
    const { accountId, apiKey, front } = await account(6);
    const start = Date.now() - LAPSED;
    const late = front(() => start);
    const outcome = await late.capture({
      apiKey,
      request: () => ({ url: 'https://a.test/page' }),
      deadline: start + CAPTURE_MS,
    });
    if (!outcome.ok || !('screenshot' in outcome)) throw new Error('captured');
    // The front was slow to hear of the hang-up; the reservation lapsed, and balance reads race its refund.
    await Promise.all([
      outcome.undelivered(),
      ...Array.from({ length: 4 }, () => stores.credits.balance(accountId)),
    ]);
    await outcome.settled?.();
    expect(await stores.credits.balance(accountId)).toBe(6);
    expect(await reservationsOn(accountId)).toEqual([]);
  });

  it('leaves a refund it cannot write to the reservation: counted, no pending refund, back once lapsed', async () => {
    const { accountId, front } = await account(4);
    const ledger = new DynamoCreditLedger(documentClient(store.client), TEST_TABLE);
    const failing: CreditLedger = Object.assign(Object.create(ledger), {
      refundReservation: async () => {
        throw new Error('DynamoDB unreachable');
      },
    });
    const start = Date.now() - LAPSED;
    const broken = front(() => start, failing);
    expect((await broken.captureAnswered('https://a.test/fail')).ok).toBe(false);
    expect(broken.metrics.pending.refundFailures).toBe(1);
    expect((await stores.pendingRefunds.list()).filter((refund) => refund.accountId === accountId)).toEqual(
      [],
    );
    expect(await stores.credits.balance(accountId)).toBe(4);
    expect(await reservationsOn(accountId)).toEqual([]);
  });
});
