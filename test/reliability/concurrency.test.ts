import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RATE_WINDOW_MS, windowStart } from '../../shared/accounts/rateLimiter';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, slowPage, solidPage, startPageServer } from '../helpers/pageServer';
import { awayFromWindowEdge } from '../helpers/rateWindow';

const BALANCE = 10;
const RATE_LIMIT = 100;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    // Loads in about 300 ms, so captures are still in flight while the test acts.
    ...slowPage(300, '#ff0000'),
    // Loads in about 2 s: long enough for a whole burst to be in flight at once.
    '/slower': solidPage('#ff0000', '', '<img src="/slower.png">'),
    '/slower.png': (_, res) => {
      setTimeout(() => res.writeHead(404).end(), 2_000);
    },
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    FREE_CREDITS: String(BALANCE),
    RATE_LIMIT_PER_HOUR: String(RATE_LIMIT),
    // Every request of a burst runs at once (as Lambda scales out), none is turned away with 503, and the
    // per-account bound on captures at once does not cut the bursts these tests aim at credits and the rate limit.
    LOCAL_MAX_CAPTURES: '200',
    LOCAL_MAX_QUEUED: '200',
    MAX_CONCURRENT_CAPTURES: '1000',
  });
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

interface Outcome {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** POST /api/screenshot, reading the whole answer (JSON errors parsed; images only counted). */
async function screenshot(apiKey: string, body: unknown, via: TestLocalService = service): Promise<Outcome> {
  const response = await via.request('/api/screenshot', { bearer: apiKey, body });
  const bytes = Buffer.from(await response.arrayBuffer());
  const isJson = response.headers.get('content-type')?.startsWith('application/json') ?? false;
  return {
    status: response.status,
    headers: response.headers,
    body: isJson ? JSON.parse(bytes.toString('utf8')) : {},
  };
}

const capture = { width: 320, height: 320 };
const countOf = (outcomes: Outcome[], status: number) =>
  outcomes.filter((outcome) => outcome.status === status).length;

describe('sixty captures at once on a balance of ten', () => {
  let outcomes: Outcome[];
  let accountToken: string;

  beforeAll(async () => {
    const account = await service.newAccount();
    accountToken = account.token;
    outcomes = await Promise.all(
      Array.from({ length: 60 }, () =>
        screenshot(account.apiKey, { url: `${pages.origin}/red`, ...capture }),
      ),
    );
  });

  it('captures exactly ten', () => {
    expect(countOf(outcomes, 200)).toBe(BALANCE);
  });

  it('refuses the other fifty with 402, naming the cost and an empty balance', () => {
    const refused = outcomes.filter((outcome) => outcome.status === 402);
    expect(refused).toHaveLength(50);
    for (const outcome of refused)
      expect(outcome.body).toEqual({ error: expect.any(String), required: 1, available: 0 });
  });

  it('ends with a balance of zero, exactly what the charges add up to', async () => {
    const charged = outcomes.reduce(
      (sum, outcome) => sum + Number(outcome.headers.get('x-credits-charged') ?? 0),
      0,
    );
    const { balance } = (await (await service.request('/api/credits', { bearer: accountToken })).json()) as {
      balance: number;
    };
    expect(balance).toBe(0);
    expect(charged).toBe(BALANCE - balance);
  });
});

describe('a burst of 150 requests across two keys of one account, limit 100', () => {
  let outcomes: Outcome[];
  let burstStarted: number;

  beforeAll(async () => {
    const account = await service.newAccount();
    const second = await (
      await service.request('/api/keys', { bearer: account.token, body: { name: 'second' } })
    ).json();
    const keys = [account.apiKey, second.key as string];
    await awayFromWindowEdge();
    burstStarted = Date.now();
    // Every authenticated request counts, so invalid bodies (400, no capture) do; a few real captures ride along.
    outcomes = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        screenshot(
          keys[i % 2] as string,
          i % 30 === 0 ? { url: `${pages.origin}/red`, ...capture } : { url: 'nope' },
        ),
      ),
    );
  });

  it('lets exactly 100 past the limit', () => {
    const statuses = outcomes.map((outcome) => outcome.status);
    expect(
      outcomes.filter((outcome) => outcome.status !== 429),
      statuses.join(','),
    ).toHaveLength(RATE_LIMIT);
    expect(outcomes.filter((outcome) => ![200, 400, 429].includes(outcome.status))).toEqual([]);
  });

  it('refuses exactly 50 with 429, the limit, and the end of the current window as reset', () => {
    const reset = windowStart(burstStarted) + RATE_WINDOW_MS;
    const limited = outcomes.filter((outcome) => outcome.status === 429);
    expect(limited).toHaveLength(50);
    for (const outcome of limited) {
      expect(outcome.body).toEqual({ error: expect.any(String), limit: RATE_LIMIT, reset });
      expect(outcome.headers.get('x-ratelimit-reset')).toBe(String(reset));
      expect(Number(outcome.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
  });

  it('hands out each remaining count exactly once, from 99 down to 0', () => {
    const remaining = outcomes
      .filter((outcome) => outcome.status !== 429)
      .map((outcome) => Number(outcome.headers.get('x-ratelimit-remaining')))
      .sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: RATE_LIMIT }, (_, i) => i));
  });
});

describe('a key revoked while its requests are in flight', () => {
  interface Timed {
    startedAt: number;
    endedAt: number;
    status: number;
  }
  const timeline: Timed[] = [];
  let revokeSentAt = 0;
  let revokedAt = 0;

  beforeAll(async () => {
    const account = await service.newAccount();
    const workers = 4;
    const afterRevocation = 3;

    // Each worker sends request after request (cheap invalid ones and slow captures, alternating), until it has
    // started `afterRevocation` of them after the revocation was answered.
    const worker = async (n: number) => {
      for (let i = 0; ; i++) {
        const startedAt = performance.now();
        if (revokedAt && timeline.filter((t) => t.startedAt > revokedAt).length >= workers * afterRevocation)
          return;
        const body = (i + n) % 2 === 0 ? { url: `${pages.origin}/slow`, ...capture } : {};
        const { status } = await screenshot(account.apiKey, body);
        timeline.push({ startedAt, endedAt: performance.now(), status });
      }
    };
    const revoke = async () => {
      while (timeline.length < workers * 2) await new Promise((resolve) => setTimeout(resolve, 10));
      revokeSentAt = performance.now();
      const response = await service.request(`/api/keys/${account.keyId}`, {
        method: 'PATCH',
        bearer: account.token,
        body: { isActive: false },
      });
      expect(response.status).toBe(200);
      revokedAt = performance.now();
    };
    await Promise.all([revoke(), ...Array.from({ length: workers }, (_, n) => worker(n))]);
  });

  it('refuses with 401 every request that started after the revocation was answered', () => {
    const after = timeline.filter((t) => t.startedAt > revokedAt);
    expect(after.length).toBeGreaterThanOrEqual(12);
    expect(after.map((t) => t.status)).toEqual(after.map(() => 401));
  });

  it('authenticated the requests that finished before the revocation was sent', () => {
    const before = timeline.filter((t) => t.endedAt < revokeSentAt);
    expect(before.length).toBeGreaterThan(0);
    for (const t of before) expect(t.status).not.toBe(401);
  });
});

describe('a burst larger than the capture queue', () => {
  let small: TestLocalService;
  let outcomes: Outcome[];
  let balanceAfter: number;
  let strangers: Outcome[];
  let strangersAnsweredWhileBusy: boolean;

  beforeAll(async () => {
    small = await startTestLocalService({
      ALLOW_PRIVATE_HOSTS: pages.hostPort,
      FREE_CREDITS: String(BALANCE),
      LOCAL_MAX_CAPTURES: '2',
      LOCAL_MAX_QUEUED: '3',
    });
    const account = await small.newAccount();
    const send = () => screenshot(account.apiKey, { url: `${pages.origin}/slower`, ...capture }, small);
    const burst = Promise.all(Array.from({ length: 8 }, send));
    let burstDone = false;
    void burst.then(() => {
      burstDone = true;
    });
    // While every slot and queue place is taken: requests without a valid key.
    await new Promise((resolve) => setTimeout(resolve, 300));
    strangers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        screenshot(i % 2 ? 'sk_live_0000000000000000000000000000000000000000' : '', capture, small),
      ),
    );
    strangersAnsweredWhileBusy = !burstDone;
    outcomes = await burst;
    balanceAfter = (await (await small.request('/api/credits', { bearer: account.token })).json()).balance;
  });

  afterAll(() => small?.close());

  it('runs the bound, queues the next ones, and turns the rest away with 503', () => {
    expect(countOf(outcomes, 200)).toBe(5);
    const busy = outcomes.filter((outcome) => outcome.status === 503);
    expect(busy).toHaveLength(3);
    for (const outcome of busy) {
      expect(outcome.body).toEqual({ error: expect.stringMatching(/busy/i) });
      expect(outcome.headers.get('retry-after')).toBe('1');
    }
  });

  it('authenticates before queueing: requests without a valid key get 401 at once, never a place or a 503', () => {
    expect(strangers.map((outcome) => outcome.status)).toEqual(strangers.map(() => 401));
    expect(strangersAnsweredWhileBusy).toBe(true);
  });

  it('charges only the captures it ran', () => {
    expect(balanceAfter).toBe(BALANCE - 5);
  });
});

describe('a client that hangs up while its capture runs', () => {
  it('stops the capture, is not charged and not logged as a server error, and the next request is served', async () => {
    const account = await service.newAccount();
    const balance = async () =>
      (await (await service.request('/api/credits', { bearer: account.token })).json()).balance as number;
    const before = await balance();
    // On the class: each request logs through a logger of its own (withLogKeys, shared/logger.ts).
    const errors = vi.spyOn(Logger.prototype, 'error');
    const hungUp = vi.spyOn(Logger.prototype, 'info');
    try {
      const seen = pages.hits.length;
      const hangUp = new AbortController();
      const abandoned = fetch(`${service.url}/api/screenshot`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${account.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: `${pages.origin}/slower`, ...capture }),
        signal: hangUp.signal,
      });
      while (!pages.hits.slice(seen).includes('/slower.png'))
        await new Promise((resolve) => setTimeout(resolve, 10));
      const hungUpAt = performance.now();
      hangUp.abort();
      await expect(abandoned).rejects.toThrow();
      // The capture stops at once (the page's image would take 2 s) and answers no one.
      await vi.waitFor(
        () => expect(hungUp).toHaveBeenCalledWith('Client hung up; answer not sent', { status: 499 }),
        { timeout: 10_000 },
      );
      expect(performance.now() - hungUpAt).toBeLessThan(1_500);
      expect(await balance()).toBe(before);
      expect(errors).not.toHaveBeenCalled();
      expect((await screenshot(account.apiKey, { url: `${pages.origin}/red`, ...capture })).status).toBe(200);
    } finally {
      errors.mockRestore();
      hungUp.mockRestore();
    }
  });
});

describe('eleven captures at once from one account, with the default bound of ten', () => {
  let bounded: TestLocalService;
  let outcomes: Outcome[];
  let sentAt: number;
  let other: Outcome;

  beforeAll(async () => {
    bounded = await startTestLocalService({
      ALLOW_PRIVATE_HOSTS: pages.hostPort,
      LOCAL_MAX_CAPTURES: '200',
      LOCAL_MAX_QUEUED: '200',
    });
    const account = await bounded.newAccount();
    const neighbour = await bounded.newAccount();
    const slow = { url: `${pages.origin}/slower`, ...capture };
    sentAt = Date.now();
    const burst = Promise.all(Array.from({ length: 11 }, () => screenshot(account.apiKey, slow, bounded)));
    // Another account, while the first holds all its slots.
    await new Promise((resolve) => setTimeout(resolve, 500));
    other = await screenshot(neighbour.apiKey, { url: `${pages.origin}/red`, ...capture }, bounded);
    outcomes = await burst;
  });

  afterAll(() => bounded?.close());

  it('runs exactly ten and refuses one with 429, the bound as limit, and a retry a second later', () => {
    expect(countOf(outcomes, 200)).toBe(10);
    const refused = outcomes.filter((outcome) => outcome.status === 429);
    expect(refused).toHaveLength(1);
    const [tooMany] = refused as [Outcome];
    expect(tooMany.body).toEqual({
      error: 'Too many captures in progress for this account',
      limit: 10,
      reset: expect.any(Number),
    });
    expect(tooMany.body.reset as number).toBeGreaterThan(sentAt + 1_000 - 1);
    expect(tooMany.body.reset as number).toBeLessThan(Date.now() + 1_000);
    expect(tooMany.headers.get('retry-after')).toBe('1');
  });

  it('leaves another account unaffected', () => {
    expect(other.status).toBe(200);
  });
});
