import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PageServer, solidPage, startPageServer, unusedPort } from '../helpers/pageServer';
import { awayFromWindowEdge } from '../helpers/rateWindow';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';
import { dumpTable } from '../helpers/store';

/**
 * Usage through the real parts: the screenshot handler (real Chromium, the adapter, DynamoDB's API) writes the
 * records, and GET /api/usage reads them back through its own handler with a real session token.
 */

const RATE_LIMIT = 30;
const PARALLEL = 20;

let pages: PageServer;
let harness: ScreenshotHarness;
let closedPort: number;

beforeAll(async () => {
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  closedPort = await unusedPort();
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: `${pages.hostPort},127.0.0.1:${closedPort}`,
    RATE_LIMIT_PER_HOUR: String(RATE_LIMIT),
    // Twenty captures of one account run at once below: room for all of them.
    MAX_CONCURRENT_CAPTURES: '20',
  });
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

const small = { width: 320, height: 320 };
const SECRET_PATH = '/red?token=hunter2&session=abc#private';

interface StoredRecord {
  sk: { S: string };
  keyId: { S: string };
  at: { N: string };
  status: { N: string };
  credits: { N: string };
  cacheHit: { BOOL: boolean };
  durationMs: { N: string };
  host?: { S: string };
  expiresAt: { N: string };
}

/** The raw usage records of an account, as the table holds them. */
async function recordsOf(accountId: string): Promise<StoredRecord[]> {
  const items = JSON.parse(await dumpTable(harness.store)) as (StoredRecord & { pk: { S: string } })[];
  return items
    .filter((item) => item.pk.S === `ACCOUNT#${accountId}` && item.sk.S.startsWith('USAGE#REQUEST#'))
    .sort((a, b) => Number(a.at.N) - Number(b.at.N));
}

const summed = (days: { captures: number; failed: number; credits: number }[]) =>
  days.reduce(
    (sum, day) => ({
      captures: sum.captures + day.captures,
      failed: sum.failed + day.failed,
      credits: sum.credits + day.credits,
    }),
    { captures: 0, failed: 0, credits: 0 },
  );

describe('records of every answer after authentication', () => {
  let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;
  const statuses: number[] = [];

  beforeAll(async () => {
    await awayFromWindowEdge();
    account = await harness.newAccount();
    const shoot = async (body: unknown) => {
      const response = await harness.shoot(account.apiKey, body);
      statuses.push(response.status);
      return response;
    };
    await harness.shoot(undefined, { url: `${pages.origin}/red` }); // 401: recorded nowhere
    await shoot({ url: `${pages.origin}${SECRET_PATH}`, ...small, fullPage: true });
    await shoot({ url: `http://127.0.0.1:${closedPort}/private/path?q=1` });
    await harness.credits.set(account.accountId, 0);
    await shoot({ url: `${pages.origin}/red`, ...small });
    // Invalid requests count against the rate limit too: spend the rest of the hour on them, then one more.
    while (statuses.length < RATE_LIMIT) await shoot({ url: `${pages.origin}/red`, width: 1 });
    await shoot({ url: `${pages.origin}/red?again=1` });
  });

  it('answered 200, 500, 402, 400s and then 429', () => {
    expect(statuses.slice(0, 4)).toEqual([200, 500, 402, 400]);
    expect(statuses.at(-1)).toBe(429);
  });

  it('left one record per authenticated request, with status, cost, cache flag, duration, host and time', async () => {
    const records = await recordsOf(account.accountId);
    expect(records.map((record) => Number(record.status.N))).toEqual(statuses);
    const [captured, failed, broke] = records;
    expect(captured).toMatchObject({
      keyId: { S: account.keyId },
      credits: { N: '2' },
      cacheHit: { BOOL: false },
      host: { S: pages.hostPort },
    });
    expect(failed).toMatchObject({ credits: { N: '0' }, host: { S: `127.0.0.1:${closedPort}` } });
    expect(broke).toMatchObject({ credits: { N: '0' }, status: { N: '402' } });
    for (const record of records) {
      expect(Number(record.durationMs.N)).toBeGreaterThanOrEqual(0);
      expect(Math.abs(Number(record.at.N) - Date.now())).toBeLessThan(5 * 60_000);
      // Kept 7 days by TTL (epoch seconds): the day totals answer the history.
      expect(Number(record.expiresAt.N) - Number(record.at.N) / 1000).toBeCloseTo(7 * 86_400, -1);
    }
  });

  it('rolls them up into day totals kept 90 days after their day', async () => {
    const items = JSON.parse(await dumpTable(harness.store)) as {
      pk: { S: string };
      sk: { S: string };
      captures: { N: string };
      failed: { N: string };
      expiresAt: { N: string };
    }[];
    const days = items.filter(
      (item) => item.pk.S === `ACCOUNT#${account.accountId}` && item.sk.S.startsWith('USAGE#DAY#'),
    );
    expect(days.length).toBeGreaterThanOrEqual(1);
    const counted = days.reduce((sum, day) => sum + Number(day.captures.N) + Number(day.failed.N), 0);
    expect(counted).toBe(statuses.length);
    for (const day of days) {
      const dayEnd = Date.parse(`${day.sk.S.slice('USAGE#DAY#'.length)}T00:00:00Z`) / 1000 + 86_400;
      expect(Number(day.expiresAt.N) - dayEnd).toBe(90 * 86_400);
    }
  });

  it('keeps no path, query or fragment of any URL', async () => {
    const table = await dumpTable(harness.store);
    for (const secret of ['hunter2', 'token=', 'session=abc', 'private', '/red', 'again=1', 'q=1']) {
      expect(table).not.toContain(secret);
    }
  });

  it('adds them up in the usage history: captures, failures and the credits charged', async () => {
    const { status, body } = await harness.usage(account.token);
    expect(status).toBe(200);
    expect(summed(body.days)).toEqual({ captures: 1, failed: statuses.length - 1, credits: 2 });
    expect(body.byKey).toEqual([{ keyId: account.keyId, name: 'test', captures: 1, credits: 2 }]);
  });
});

describe(`${PARALLEL} captures at once through the real handler`, () => {
  let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;
  let second: { apiKey: string; keyId: string };
  let charged: Map<string, number>;

  beforeAll(async () => {
    await awayFromWindowEdge();
    account = await harness.newAccount();
    second = await harness.addKey(account.token);
    const before = await harness.credits.balance(account.accountId);
    const responses = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) =>
        harness.shoot(i % 3 === 0 ? second.apiKey : account.apiKey, {
          url: `${pages.origin}/red?n=${i}`,
          ...small,
          fullPage: i % 2 === 0,
        }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(PARALLEL).fill(200));
    charged = new Map([
      [account.keyId, 0],
      [second.keyId, 0],
    ]);
    responses.forEach((response, i) => {
      const keyId = i % 3 === 0 ? second.keyId : account.keyId;
      charged.set(keyId, (charged.get(keyId) ?? 0) + Number(response.headers['X-Credits-Charged']));
    });
    const spent = before - (await harness.credits.balance(account.accountId));
    expect(spent).toBe([...charged.values()].reduce((a, b) => a + b, 0));
  });

  it('counts every one, and the credits add up to exactly what the balance lost', async () => {
    const { body } = await harness.usage(account.token);
    const total = [...charged.values()].reduce((a, b) => a + b, 0);
    expect(summed(body.days)).toEqual({ captures: PARALLEL, failed: 0, credits: total });
  });

  it('splits them by key, with the key names', async () => {
    const { body } = await harness.usage(account.token);
    const byKey = Object.fromEntries(body.byKey.map((key: { keyId: string }) => [key.keyId, key])) as Record<
      string,
      unknown
    >;
    expect(byKey[account.keyId]).toEqual({
      keyId: account.keyId,
      name: 'test',
      captures: PARALLEL - Math.ceil(PARALLEL / 3),
      credits: charged.get(account.keyId),
    });
    expect(byKey[second.keyId]).toEqual({
      keyId: second.keyId,
      name: 'another',
      captures: Math.ceil(PARALLEL / 3),
      credits: charged.get(second.keyId),
    });
  });

  it('keeps a deleted key in the totals, with a null name', async () => {
    await harness.manage('deleteKey', { bearer: account.token, pathParameters: { id: second.keyId } });
    const { body } = await harness.usage(account.token);
    expect(body.byKey).toContainEqual(expect.objectContaining({ keyId: second.keyId, name: null }));
    expect(summed(body.days).credits).toBe([...charged.values()].reduce((a, b) => a + b, 0));
  });

  it("never shows one account's usage to another", async () => {
    const other = await harness.newAccount();
    const { body } = await harness.usage(other.token);
    expect(summed(body.days)).toEqual({ captures: 0, failed: 0, credits: 0 });
    expect(body.byKey).toEqual([]);
  });
});

describe('GET /api/usage through its handler', () => {
  it('answers an account with no requests with 30 days of zeros, today last', async () => {
    const { token } = await harness.newAccount();
    const { status, body } = await harness.usage(token);
    expect(status).toBe(200);
    expect(body.days).toHaveLength(30);
    expect(body.days.at(-1)).toEqual({
      date: new Date().toISOString().slice(0, 10),
      captures: 0,
      failed: 0,
      cacheHits: 0,
      credits: 0,
    });
    expect(body.byKey).toEqual([]);
  });

  it('refuses a request without a session token with 401, and an API key is not a session token', async () => {
    expect((await harness.usage(undefined)).status).toBe(401);
    const { apiKey } = await harness.newAccount();
    expect((await harness.usage(apiKey)).status).toBe(401);
  });

  it.each([
    [{ from: 'yesterday' }, 'from'],
    [{ from: '2000', to: '1000' }, 'from'],
    [{ from: '0', to: String(100 * 86_400_000) }, 'to'],
    [{ to: '1.5' }, 'to'],
  ])('answers %j with 400 and details naming %s', async (query, field) => {
    const { token } = await harness.newAccount();
    const { status, body } = await harness.usage(token, query);
    expect(status).toBe(400);
    expect(body.message).toBe('Invalid query parameters');
    expect(body.details[0].path).toEqual([field]);
  });
});
