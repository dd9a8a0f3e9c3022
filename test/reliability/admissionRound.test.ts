import { randomBytes } from 'node:crypto';
import { DynamoDBDocumentClient, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import type { AdmissionAsk } from '../../shared/accounts/admissionRound';
import { RATE_WINDOW_MS } from '../../shared/accounts/rateLimiter';
import { InsufficientCreditsError, RateLimitedError, TooManyCapturesError } from '../../shared/errors';
import { keyManagement } from '../../shared/keys/keyManagement';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { outcomeStatus } from '../../shared/screenshot/outcome';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoAdmissionRound } from '../../shared/store/dynamoAdmissionRound';
import { DynamoCaptureSlots } from '../../shared/store/dynamoCaptureSlots';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { DynamoKeyStore } from '../../shared/store/dynamoKeyStore';
import { itemKey } from '../../shared/store/table';
import { fakeSessions, MemoryImageStore, MemoryKeyStore, memoryScreenshotDeps } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The admission round in one write of the account item, against dynalite: exact under parallel requests, the order
 * of checks kept when several parts fail at once, nothing taken by a refused request but its count.
 */

const NOW = Date.UTC(2026, 0, 1, 12, 10);
const LIMIT = 100;
const SLOTS = 10;

let store: EmbeddedDynamo;
let db: DynamoDBDocumentClient;
let credits: DynamoCreditLedger;
let accounts = 0;

beforeAll(async () => {
  store = await startTestStore();
  db = DynamoDBDocumentClient.from(store.client);
  // Lapsed reservations are judged by the admissions' clock.
  credits = new DynamoCreditLedger(db, TEST_TABLE, () => NOW);
});
afterAll(() => store?.close());

function round(options: { limit?: number } = {}) {
  const slots = new DynamoCaptureSlots(db, TEST_TABLE, SLOTS);
  return new DynamoAdmissionRound(
    db,
    TEST_TABLE,
    options.limit ?? LIMIT,
    slots,
    new DynamoKeyStore(db, TEST_TABLE),
    credits,
  );
}

async function newAccount(balance: number) {
  const accountId = `admit-${++accounts}`;
  await credits.set(accountId, balance);
  return { accountId, keyId: `key_${accounts}`, isActive: true };
}

const capture = (identity: AdmissionAsk['identity'], cost: number, at = NOW): AdmissionAsk => ({
  identity,
  budget: 'api',
  now: at,
  slot: { until: at + 60_000 },
  cost,
});

async function accountItem(accountId: string) {
  const { Item } = await db.send(
    new GetCommand({ TableName: TEST_TABLE, Key: itemKey.account(accountId), ConsistentRead: true }),
  );
  return Item ?? {};
}

describe('the admission round in DynamoDB', () => {
  it('admits exactly the free slots of a parallel burst, takes only their credits, and counts every request', async () => {
    const admissions = round();
    const identity = await newAccount(25);
    const verdicts = await Promise.all(
      Array.from({ length: 30 }, () => admissions.admit(capture(identity, 2))),
    );
    const admitted = verdicts.filter((verdict) => verdict.admitted);
    expect(admitted).toHaveLength(SLOTS);
    expect(new Set(admitted.map((verdict) => verdict.admitted && verdict.leaseId)).size).toBe(SLOTS);
    const refusals = verdicts.flatMap((verdict) => (verdict.admitted ? [] : [verdict.refusal]));
    expect(refusals.every((refusal) => refusal instanceof TooManyCapturesError)).toBe(true);
    expect(await credits.balance(identity.accountId)).toBe(25 - 2 * SLOTS);
    const remaining = verdicts.map((verdict) => verdict.rateLimit.remaining).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => LIMIT - 30 + i));
  });

  it('takes exactly the balance from a parallel burst and answers the rest 402 with what was left', async () => {
    const admissions = round();
    const identity = await newAccount(7);
    const verdicts = await Promise.all(
      Array.from({ length: 8 }, () => admissions.admit({ ...capture(identity, 1), slot: 'none' })),
    );
    expect(verdicts.filter((verdict) => verdict.admitted)).toHaveLength(7);
    const [refused] = verdicts.flatMap((verdict) => (verdict.admitted ? [] : [verdict.refusal]));
    expect(refused).toBeInstanceOf(InsufficientCreditsError);
    expect((refused as InsufficientCreditsError).available).toBe(0);
    expect(await credits.balance(identity.accountId)).toBe(0);
  });

  it('keeps the order of checks: the rate limit first (nothing counted), then the slots, then the credits', async () => {
    const admissions = round({ limit: SLOTS + 2 });
    const identity = await newAccount(SLOTS);
    for (let i = 0; i < SLOTS; i++)
      expect((await admissions.admit(capture(identity, 1))).admitted).toBe(true);
    // Slots full and no credits left: the slot's 429 comes first, and the request counts.
    const both = await admissions.admit(capture(identity, 1));
    expect(both.admitted || both.refusal).toBeInstanceOf(TooManyCapturesError);
    expect(both.rateLimit.remaining).toBe(1);
    // A slot free again: now the credits refuse, and the request counts.
    const leases = await accountItem(identity.accountId);
    const leaseId = Object.keys(leases)
      .find((name) => name.startsWith('lease_'))
      ?.slice('lease_'.length);
    await admissions.release(identity.accountId, leaseId as string);
    const broke = await admissions.admit(capture(identity, 1));
    expect(broke.admitted || broke.refusal).toBeInstanceOf(InsufficientCreditsError);
    expect(broke.rateLimit.remaining).toBe(0);
    // The window is full: refused by the rate limit, not counted, nothing taken.
    const before = await accountItem(identity.accountId);
    const limited = await admissions.admit(capture(identity, 1));
    expect(limited.admitted || limited.refusal).toBeInstanceOf(RateLimitedError);
    expect(limited.admitted || limited.refusal).not.toBeInstanceOf(TooManyCapturesError);
    expect(limited.rateLimit).toMatchObject({ allowed: false, remaining: 0 });
    const after = await accountItem(identity.accountId);
    expect(after.held).toBe(before.held);
    expect(after[`rate#${NOW - (NOW % RATE_WINDOW_MS)}`]).toBe(SLOTS + 2);
  });

  it("refuses a batch larger than the whole hour's limit even as the hour's first request, counting none of it", async () => {
    const admissions = round({ limit: 10 });
    const identity = await newAccount(100);
    const batch = (requests: number): AdmissionAsk => ({
      ...capture(identity, requests),
      slot: 'none',
      requests,
    });
    const tooMany = await admissions.admit(batch(11));
    expect(tooMany.admitted).toBe(false);
    expect(tooMany.admitted || tooMany.refusal).toBeInstanceOf(RateLimitedError);
    expect(await credits.balance(identity.accountId)).toBe(100);
    const all = await admissions.admit(batch(10));
    expect(all).toMatchObject({ admitted: true, rateLimit: { remaining: 0 } });
  });

  it('accepts without a slot (a job whose worker takes its slot later): counted and reserved, no slot held', async () => {
    const admissions = round();
    const identity = await newAccount(20);
    // Every slot taken: an accept needs none.
    for (let i = 0; i < SLOTS; i++)
      expect((await admissions.admit(capture(identity, 1))).admitted).toBe(true);
    const accepted = await admissions.admit({ ...capture(identity, 3), slot: 'none' });
    expect(accepted).toEqual({
      admitted: true,
      rateLimit: expect.objectContaining({ allowed: true, remaining: LIMIT - SLOTS - 1 }),
      // The balance's epoch its credits were reserved in: newAccount set the balance once.
      creditEpoch: 1,
    });
    expect(await credits.balance(identity.accountId)).toBe(20 - SLOTS - 3);
    expect((await accountItem(identity.accountId)).held).toBe(SLOTS);
  });

  it("names the balance's epoch: a refund of credits reserved before an operator set the balance gives nothing", async () => {
    const admissions = round();
    const identity = await newAccount(20);
    const before = await admissions.admit({ ...capture(identity, 3), slot: 'none' });
    if (!before.admitted) throw new Error('not admitted');
    expect(await credits.refundOnce(identity.accountId, 3, 'rf_kept', before.creditEpoch)).toBe(true);
    const inFlight = await admissions.admit({ ...capture(identity, 3), slot: 'none' });
    if (!inFlight.admitted) throw new Error('not admitted');
    await credits.set(identity.accountId, 0);
    expect(await credits.refundOnce(identity.accountId, 3, 'rf_void', inFlight.creditEpoch)).toBe(false);
    expect(await credits.balance(identity.accountId)).toBe(0);
  });

  it('reaps the leases of functions that died, and only those', async () => {
    const admissions = round();
    const identity = await newAccount(100);
    const short = (at: number) => ({ ...capture(identity, 1, at), slot: { until: at + 1_000 } });
    for (let i = 0; i < SLOTS; i++) expect((await admissions.admit(short(NOW))).admitted).toBe(true);
    expect((await admissions.admit(capture(identity, 1, NOW + 999))).admitted).toBe(false);
    expect((await admissions.admit(capture(identity, 1, NOW + 1_000))).admitted).toBe(true);
    expect((await accountItem(identity.accountId)).held).toBe(1);
  });

  it('holds a slot again for a penalty, until it lapses, and takes none when the slots are all held', async () => {
    const admissions = round();
    const identity = await newAccount(100);
    await admissions.holdSlot(identity.accountId, NOW, NOW + 30_000);
    const checkAt = (at: number) => admissions.admit({ ...capture(identity, 0, at), slot: 'check' });
    const held = async () =>
      Object.keys(await accountItem(identity.accountId)).filter((name) => name.startsWith('lease_')).length;
    expect(await held()).toBe(1);
    for (let i = 1; i < SLOTS; i++) await admissions.admit(capture(identity, 1));
    await admissions.holdSlot(identity.accountId, NOW, NOW + 30_000);
    expect(await held()).toBe(SLOTS);
    expect((await checkAt(NOW + 1_000)).admitted).toBe(false);
    expect((await checkAt(NOW + 30_000)).admitted).toBe(true);
  });

  it('removes the windows of past hours as it goes, never the current one', async () => {
    const admissions = round();
    const identity = await newAccount(100);
    const ask = (at: number) => ({ ...capture(identity, 1, at), slot: 'none' as const });
    await admissions.admit(ask(NOW));
    const later = NOW + 2 * RATE_WINDOW_MS;
    expect((await admissions.admit(ask(later))).rateLimit.remaining).toBe(LIMIT - 1);
    expect((await admissions.admit(ask(later))).rateLimit.remaining).toBe(LIMIT - 2);
    const windows = Object.keys(await accountItem(identity.accountId)).filter((name) =>
      name.startsWith('rate#'),
    );
    expect(windows).toEqual([`rate#${later - (later % RATE_WINDOW_MS)}`]);
  });

  it('keeps a signed link budget apart from the API window of the same account', async () => {
    const admissions = round({ limit: 2 });
    const identity = await newAccount(100);
    const signed = { ...capture(identity, 1), slot: 'none' as const, budget: 'signedLink' as const };
    expect((await admissions.admit(signed)).admitted).toBe(true);
    expect((await admissions.admit(signed)).admitted).toBe(true);
    expect((await admissions.admit(signed)).admitted).toBe(false);
    expect((await admissions.admit({ ...signed, budget: 'api' })).rateLimit.remaining).toBe(1);
  });

  it('tells the renderer whether the account held a slot before, for the headroom, in the same one write', async () => {
    const admissions = round();
    const identity = await newAccount(5);
    const first = await admissions.admit(capture(identity, 1));
    expect(first).toMatchObject({ admitted: true, newcomer: true });
    const second = await admissions.admit(capture(identity, 1));
    expect(second).toMatchObject({ admitted: true, newcomer: false });
    if (first.admitted && first.leaseId) await admissions.release(identity.accountId, first.leaseId);
    if (second.admitted && second.leaseId) await admissions.release(identity.accountId, second.leaseId);
    // A penalty is a slot held: no headroom until it wears off.
    const timedOut = await admissions.admit(capture(identity, 1));
    if (timedOut.admitted && timedOut.leaseId)
      await admissions.release(identity.accountId, timedOut.leaseId, NOW + 120_000);
    expect(await admissions.admit(capture(identity, 1, NOW + 1_000))).toMatchObject({ newcomer: false });
  });

  it('keeps no item shared by all accounts: the capacity is the renderers’ reserved concurrency', async () => {
    const admissions = round();
    await admissions.admit(capture(await newAccount(5), 1));
    const { Items } = await db.send(
      new ScanCommand({
        TableName: TEST_TABLE,
        FilterExpression: 'begins_with(pk, :captures)',
        ExpressionAttributeValues: { ':captures': 'CAPTURES' },
      }),
    );
    expect(Items).toEqual([]);
  });

  it("records lastUsed in the admission write, and reads a key's older value from its listing until then", async () => {
    const keys = new DynamoKeyStore(db, TEST_TABLE);
    const admissions = round();
    const identity = await newAccount(10);
    // A listing written before lastUsed moved to the account item.
    await db.send(
      new PutCommand({
        TableName: TEST_TABLE,
        Item: {
          ...itemKey.accountKey(identity.accountId, identity.keyId),
          keyHash: 'h',
          name: 'old',
          last4: 'abcd',
          isActive: true,
          createdAt: NOW - 5_000,
          lastUsed: NOW - 1_000,
        },
      }),
    );
    expect((await keys.get(identity.accountId, identity.keyId))?.lastUsed).toBe(NOW - 1_000);
    expect((await admissions.admit({ ...capture(identity, 1), slot: 'none' })).admitted).toBe(true);
    expect((await keys.list(identity.accountId))[0]?.lastUsed).toBe(NOW);
  });
});

describe('a window DynamoDB refused, in the screenshot route', () => {
  it('refuses the next requests of this process at once: no host lookup, no read of the cache', async () => {
    const keys = new MemoryKeyStore();
    const { key } = await keyManagement({
      sessions: fakeSessions,
      keys,
      credits,
      cipher: new AesGcmSecretCipher(randomBytes(32)),
      freeCredits: 0,
      now: () => NOW,
    }).createKey('session:full-window', () => ({ name: 'k' }));
    await credits.set('full-window', 50);
    const looked: string[] = [];
    const images = new MemoryImageStore();
    const capture = captureScreenshot(
      memoryScreenshotDeps({
        keys,
        credits,
        admissions: round({ limit: 1 }),
        images,
        urlPolicy: {
          async assertAllowed(url) {
            looked.push(new URL(url).hostname);
          },
        },
        now: () => NOW,
      }),
    );
    const shot = (host: string) =>
      capture({
        apiKey: key,
        request: () => ({ url: `https://${host}/`, cache: true }),
        deadline: NOW + 60_000,
      });

    expect(outcomeStatus(await shot('first.test'))).toBe(200);
    const refused = await shot('second.test');
    expect(outcomeStatus(refused)).toBe(429);
    const reads = { ...images.calls };

    const again = await Promise.all(['third.test', 'fourth.test'].map(shot));

    expect(again.map(outcomeStatus)).toEqual([429, 429]);
    expect(again[1]?.rateLimit).toEqual(refused.rateLimit);
    expect(looked).toEqual(['first.test', 'second.test']);
    expect(images.calls).toEqual(reads);
    // Nothing more was counted: the window holds the one admitted request.
    expect(await accountItem('full-window')).toMatchObject({ [`rate#${NOW - (NOW % RATE_WINDOW_MS)}`]: 1 });
  });
});
