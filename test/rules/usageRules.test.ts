import { beforeEach, describe, expect, it } from 'vitest';
import { routeEvent } from '../../local/apiGatewayEvent';
import { invocationContext } from '../../local/invocationContext';
import { invokeStreaming } from '../../local/invokeStreaming';
import { AppError, type ValidationDetail } from '../../shared/errors';
import { generateApiKey } from '../../shared/keys/apiKey';
import type { CaptureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { MAX_USAGE_DAYS } from '../../shared/usage/schemas';
import { type GetUsage, usageHistory } from '../../shared/usage/usageHistory';
import { DeferredUsageRecorder } from '../../shared/usage/usageRecorder';
import type { UsageRecord } from '../../shared/usage/usageStore';
import { screenshotLambda } from '../../shared/wiring/lambdaHandlers';
import { deferred } from '../helpers/deferred';
import {
  type FakeRenderer,
  fakeSessions,
  type MemoryCreditLedger,
  type MemoryKeyStore,
  type MemoryUsageStore,
} from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * The usage rules against in-memory ports: which screenshot requests leave a record and with what, that nothing is
 * written before the answer is out, and the usage history's window, totals and validation. test/usage/ proves the
 * same through the real handler, DynamoDB's API and Chromium.
 */

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 2, 15, 10, 30);
const DEADLINE = NOW + 60_000;

let clock: number;
let keys: MemoryKeyStore;
let credits: MemoryCreditLedger;
let store: MemoryUsageStore;
let recorder: DeferredUsageRecorder;
let renderer: FakeRenderer;
let capture: CaptureScreenshot;
let getUsage: GetUsage;
let addKey: ReturnType<typeof memoryScreenshotService>['addKey'];

function setUp(rateLimit = 100) {
  clock = NOW;
  ({
    keys,
    credits,
    usageStore: store,
    usage: recorder,
    renderer,
    capture,
    addKey,
  } = memoryScreenshotService({
    rateLimit,
    // Each reading of the clock moves it on by 5 ms, so a request's duration is never 0.
    now: () => (clock += 5),
  }));
  getUsage = usageHistory({ sessions: fakeSessions, usage: store, keys, now: () => clock });
}

const newKey = (accountId: string, name = 'k') => addKey(accountId, clock++, name);

async function shoot(apiKey: string | undefined, body: unknown) {
  const outcome = await capture({ apiKey, request: () => body, deadline: DEADLINE });
  await recorder.flush();
  return outcome;
}

async function failure(call: Promise<unknown>): Promise<{ status: number; details: ValidationDetail[] }> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.status, details: (error.fields().details as ValidationDetail[]) ?? [] };
  }
  throw new Error('expected the call to fail');
}

beforeEach(() => setUp());

describe('usage records of screenshot requests', () => {
  let alice: { key: string; id: string };

  beforeEach(async () => {
    alice = await newKey('alice');
    await credits.set('alice', 3);
  });

  it('records a capture with its time, key, status, cost, cache flag, duration and host', async () => {
    const arrival = clock + 5;
    await shoot(alice.key, { url: 'https://shop.example:8443/orders/42?token=secret#frag', fullPage: true });
    expect(store.records).toEqual([
      {
        accountId: 'alice',
        keyId: alice.id,
        at: arrival,
        status: 200,
        credits: 2,
        cacheHit: false,
        durationMs: expect.any(Number),
        host: 'shop.example:8443',
      },
    ]);
    expect(store.records[0]?.durationMs).toBeGreaterThan(0);
  });

  it('never keeps the path, query, fragment or credentials of the URL', async () => {
    await shoot(alice.key, { url: 'https://user:pw@a.test/private/path?q=secret#x' });
    const stored = JSON.stringify(store.records);
    expect(store.records[0]?.host).toBe('a.test');
    for (const part of ['private', 'path', 'secret', 'user', 'pw', '#x']) expect(stored).not.toContain(part);
  });

  it('records a failed capture as 500 with nothing charged', async () => {
    await shoot(alice.key, { url: 'https://a.test/fail' });
    expect(store.records[0]).toMatchObject({ status: 500, credits: 0, host: 'a.test' });
  });

  it('records a 402 with nothing charged', async () => {
    await shoot(alice.key, { url: 'https://a.test', width: 3000, fullPage: true });
    await shoot(alice.key, { url: 'https://a.test', width: 3000 });
    await shoot(alice.key, { url: 'https://a.test', width: 3000 });
    expect(store.records.map((r) => [r.status, r.credits])).toEqual([
      [200, 3],
      [402, 0],
      [402, 0],
    ]);
  });

  it('records a 429 with the host, and a 400 with the host when the URL itself was readable', async () => {
    setUp(1);
    alice = await newKey('alice');
    await credits.set('alice', 10);
    await shoot(alice.key, { url: 'https://a.test', width: 1 });
    await shoot(alice.key, { url: 'https://b.test' });
    expect(store.records.map((r) => [r.status, r.host])).toEqual([
      [400, 'a.test'],
      [429, 'b.test'],
    ]);
  });

  it('records no host when there is no http(s) URL to take it from', async () => {
    await shoot(alice.key, { url: 'file:///etc/passwd' });
    await shoot(alice.key, { url: 42 });
    await shoot(alice.key, null);
    await capture({
      apiKey: alice.key,
      request: () => {
        throw new AppError(413, 'too large');
      },
      deadline: DEADLINE,
    });
    await recorder.flush();
    expect(store.records.map((r) => [r.status, 'host' in r])).toEqual([
      [400, false],
      [400, false],
      [400, false],
      [413, false],
    ]);
  });

  it('records nothing for a request that failed authentication: there is no account to record it for', async () => {
    await shoot(undefined, { url: 'https://a.test' });
    await shoot(generateApiKey(), { url: 'https://a.test' });
    await keys.revoke('alice', alice.id);
    await shoot(alice.key, { url: 'https://a.test' });
    expect(store.records).toEqual([]);
  });

  it('writes nothing until the answer is out: records wait for flush()', async () => {
    await capture({ apiKey: alice.key, request: () => ({ url: 'https://a.test' }), deadline: DEADLINE });
    expect(store.records).toEqual([]);
    await recorder.flush();
    expect(store.records).toHaveLength(1);
  });

  it("writes a request's records only at its own flush, never at another request's (the local server runs many)", async () => {
    const request = () =>
      capture({ apiKey: alice.key, request: () => ({ url: 'https://a.test' }), deadline: DEADLINE });
    const answered = deferred();
    // The first request's answer is still on its way when the second one ends and flushes.
    const first = recorder.inScope(async () => {
      await request();
      await answered.promise;
      await recorder.flush();
    });
    await recorder.inScope(async () => {
      await request();
      await recorder.flush();
    });
    expect(store.records).toHaveLength(1);
    answered.resolve();
    await first;
    expect(store.records).toHaveLength(2);
  });

  it('writes the records through the Lambda handler even when metrics cannot be published', async () => {
    const handler = screenshotLambda({
      capture,
      usage: recorder,
      renderer: { settle: async () => undefined },
      metrics: {
        flush: () => {
          throw new Error('metrics unavailable');
        },
      },
    });
    const event = routeEvent('screenshot', { bearer: alice.key, body: { url: 'https://a.test' } });
    await invokeStreaming(handler, event, invocationContext()).catch(() => undefined);
    expect(store.records).toHaveLength(1);
  });

  it('never fails a request or a flush when the store refuses the record', async () => {
    const failing = new DeferredUsageRecorder({
      add: async () => {
        throw new Error('store unavailable');
      },
    });
    failing.record({} as UsageRecord);
    await expect(failing.flush()).resolves.toBeUndefined();
  });

  it('reads the body once, for validation and the record alike', async () => {
    let reads = 0;
    await capture({
      apiKey: alice.key,
      request: () => {
        reads++;
        return { url: 'https://a.test' };
      },
      deadline: DEADLINE,
    });
    await recorder.flush();
    expect(reads).toBe(1);
  });
});

describe('the usage history', () => {
  const record = (accountId: string, keyId: string, at: number, status: number, credits: number) =>
    store.add({ accountId, keyId, at, status, credits, cacheHit: false, durationMs: 10 });
  const query = (from?: number | string, to?: number | string) => ({
    ...(from === undefined ? {} : { from: String(from) }),
    ...(to === undefined ? {} : { to: String(to) }),
  });

  it('answers 401 without a valid session, before looking at the query', async () => {
    expect((await failure(getUsage(undefined, { from: 'x' }))).status).toBe(401);
    expect((await failure(getUsage('garbage', {}))).status).toBe(401);
  });

  it('covers the last 30 UTC days by default, today included, idle days as zeros', async () => {
    const { days, byKey } = await getUsage('session:alice', {});
    expect(days).toHaveLength(30);
    expect(days[0]).toEqual({ date: '2026-02-14', captures: 0, failed: 0, cacheHits: 0, credits: 0 });
    expect(days.at(-1)?.date).toBe('2026-03-15');
    expect(byKey).toEqual([]);
  });

  it('sums each day and each key, counting errors as failed and charging only captures', async () => {
    const one = await newKey('alice', 'one');
    const two = await newKey('alice', 'two');
    await record('alice', one.id, NOW, 200, 1);
    await record('alice', one.id, NOW + 1, 200, 3);
    await record('alice', two.id, NOW - DAY, 200, 2);
    await record('alice', two.id, NOW - DAY, 402, 0);
    await record('alice', two.id, NOW - DAY, 429, 0);
    await record('alice', one.id, NOW, 500, 0);
    await record('bob', 'key_bob', NOW, 200, 1);
    const { days, byKey } = await getUsage('session:alice', query(NOW - DAY, NOW));
    expect(days).toEqual([
      { date: '2026-03-14', captures: 1, failed: 2, cacheHits: 0, credits: 2 },
      { date: '2026-03-15', captures: 2, failed: 1, cacheHits: 0, credits: 4 },
    ]);
    expect(byKey).toEqual([
      { keyId: one.id, name: 'one', captures: 2, credits: 4 },
      { keyId: two.id, name: 'two', captures: 1, credits: 2 },
    ]);
  });

  it("orders keys of equal totals by their ids' characters, whatever the host's locale would say", async () => {
    // ICU puts '_' before digits, and a Lithuanian host 'y' with 'i': the characters' codes do neither.
    const ids = ['key_y1', 'key_j1', 'key_a_', 'key_a1'];
    for (const id of ids) await record('alice', id, NOW, 200, 1);
    const { byKey } = await getUsage('session:alice', query(NOW, NOW));
    expect(byKey.map((key) => key.keyId)).toEqual(['key_a1', 'key_a_', 'key_j1', 'key_y1']);
  });

  it('keeps a deleted key in byKey with a null name, so the totals still add up', async () => {
    const gone = await newKey('alice', 'gone');
    await record('alice', gone.id, NOW, 200, 2);
    await keys.delete('alice', gone.id);
    const { days, byKey } = await getUsage('session:alice', query(NOW, NOW));
    expect(byKey).toEqual([{ keyId: gone.id, name: null, captures: 1, credits: 2 }]);
    expect(days[0]?.credits).toBe(2);
  });

  it('counts whole UTC days: a window from one millisecond to the next crossing midnight has two days', async () => {
    const midnight = Date.UTC(2026, 2, 15);
    await record('alice', 'key_a', midnight - 1, 200, 1);
    await record('alice', 'key_a', midnight, 200, 1);
    const { days } = await getUsage('session:alice', query(midnight - 1, midnight));
    expect(days.map((d) => [d.date, d.credits])).toEqual([
      ['2026-03-14', 1],
      ['2026-03-15', 1],
    ]);
  });

  it('accepts the last day of the year 9999', async () => {
    const last = String(Date.UTC(10000, 0, 1) - 1);
    const { days } = await getUsage('session:alice', { from: last, to: last });
    expect(days.map((day) => day.date)).toEqual(['9999-12-31']);
  });

  it(`accepts a window of exactly ${MAX_USAGE_DAYS} days, and 30 days ending with to when from is missing`, async () => {
    const first = Date.UTC(2026, 0, 1);
    const last = first + (MAX_USAGE_DAYS - 1) * DAY + DAY - 1;
    expect((await getUsage('session:alice', query(first, last))).days).toHaveLength(MAX_USAGE_DAYS);
    const { days } = await getUsage('session:alice', query(undefined, first));
    expect([days.length, days[0]?.date, days.at(-1)?.date]).toEqual([30, '2025-12-03', '2026-01-01']);
  });

  it.each([
    ['a number that is not whole', { from: '1.5' }, ['from']],
    ['a negative number', { to: '-1' }, ['to']],
    ['an exponent', { from: '1e12' }, ['from']],
    ['an empty value', { to: '' }, ['to']],
    ['a date string', { from: '2026-01-01' }, ['from']],
    ['a moment after the year 9999', { to: String(Date.UTC(10000, 0, 1)) }, ['to']],
    ['an unknown parameter', { since: '1' }, []],
    ['from later than to', query(NOW, NOW - 1), ['from']],
    ['from in the future with no to', query(NOW + DAY), ['from']],
    [`a window of ${MAX_USAGE_DAYS + 1} days`, query(NOW - MAX_USAGE_DAYS * DAY, NOW), ['to']],
  ])('refuses %s with 400 naming the parameter', async (_, parameters, path) => {
    const { status, details } = await failure(getUsage('session:alice', parameters));
    expect(status).toBe(400);
    expect(details[0]?.path).toEqual(path);
  });
});

describe('the record of a failed capture', () => {
  it('is still written when the renderer throws something that is not an AppError', async () => {
    const alice = await newKey('alice');
    await credits.set('alice', 5);
    renderer.capture = async () => {
      throw new Error('renderer crashed');
    };
    await shoot(alice.key, { url: 'https://a.test' });
    expect(store.records[0]).toMatchObject({ status: 500, credits: 0 });
    expect(await credits.balance('alice')).toBe(5);
  });
});
