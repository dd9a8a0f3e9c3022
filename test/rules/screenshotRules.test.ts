import { beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/errors';
import { generateApiKey } from '../../shared/keys/apiKey';
import type { CaptureScreenshot } from '../../shared/screenshot/captureScreenshot';
import type { FakeRenderer, MemoryCreditLedger, MemoryKeyStore } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * The screenshot use case's rules, against in-memory ports: order of checks, cost tiers, refunds, rate limit.
 * No DynamoDB, Chromium or network; the same rules are proved end to end in test/screenshot/.
 */

const NOW = Date.UTC(2026, 0, 1, 10, 30);
const DEADLINE = NOW + 60_000;

let keys: MemoryKeyStore;
let credits: MemoryCreditLedger;
let renderer: FakeRenderer;
let capture: CaptureScreenshot;
let apiKey: string;
let addKey: ReturnType<typeof memoryScreenshotService>['addKey'];

async function newKey(accountId: string, balance: number): Promise<string> {
  const { key } = await addKey(accountId, NOW);
  await credits.set(accountId, balance);
  return key;
}

function setUp(rateLimit = 100) {
  ({ keys, credits, renderer, capture, addKey } = memoryScreenshotService({ rateLimit, now: () => NOW }));
}

const shoot = (body: unknown, key: string | undefined = apiKey) =>
  capture({ apiKey: key, request: () => body, deadline: DEADLINE });

const statusOf = (outcome: Awaited<ReturnType<CaptureScreenshot>>) =>
  outcome.ok ? 200 : outcome.error instanceof AppError ? outcome.error.status : 500;

beforeEach(async () => {
  setUp();
  apiKey = await newKey('acct', 10);
});

describe('the order of checks', () => {
  it('answers 401 before reading the body, so a bad body never hides a missing key', async () => {
    let read = false;
    const outcome = await capture({
      apiKey: undefined,
      request: () => {
        read = true;
        return {};
      },
      deadline: DEADLINE,
    });
    expect(statusOf(outcome)).toBe(401);
    expect(outcome.rateLimit).toBeUndefined();
    expect(read).toBe(false);
  });

  it('answers 401 for a well-formed key nobody holds, and for a revoked key', async () => {
    expect(statusOf(await shoot({ url: 'https://a.test' }, generateApiKey()))).toBe(401);
    const [record] = await keys.list('acct');
    await keys.revoke('acct', record?.id ?? '');
    const outcome = await shoot({ url: 'https://a.test' });
    expect(statusOf(outcome)).toBe(401);
    expect((outcome as { error: Error }).error.message).toMatch(/revoked/);
  });

  it('answers 429 before validation once the window is spent, and counts invalid requests too', async () => {
    setUp(2);
    apiKey = await newKey('acct', 10);
    expect(statusOf(await shoot({ url: 42 }))).toBe(400);
    expect(statusOf(await shoot({ url: 'https://a.test' }))).toBe(200);
    const outcome = await shoot({ url: 42 });
    expect(statusOf(outcome)).toBe(429);
    expect(outcome.rateLimit).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    expect(renderer.captures).toHaveLength(1);
  });

  it('answers 400 before 402: an invalid request from a broke account is a validation error', async () => {
    await credits.set('acct', 0);
    expect(statusOf(await shoot({ url: 'ftp://a.test' }))).toBe(400);
    expect(statusOf(await shoot({ url: 'https://blocked.test' }))).toBe(400);
    expect(statusOf(await shoot({ url: 'https://a.test' }))).toBe(402);
  });

  it('carries the body errors (413, 415, malformed JSON) at the validation step', async () => {
    const outcome = await capture({
      apiKey,
      request: () => {
        throw new AppError(413, 'too large');
      },
      deadline: DEADLINE,
    });
    expect(statusOf(outcome)).toBe(413);
    expect(outcome.rateLimit?.remaining).toBe(99);
  });

  it('passes the runtime deadline to the renderer when it ends before the capture budget', async () => {
    await capture({ apiKey, request: () => ({ url: 'https://a.test' }), deadline: NOW + 5_000 });
    expect(renderer.captures[0]?.limits.deadline).toBe(NOW + 5_000);
  });
});

describe('cost tiers', () => {
  it.each([
    ['a default viewport', { url: 'https://a.test' }, 1],
    ['a full page', { url: 'https://a.test', fullPage: true }, 2],
    ['exactly 2560 wide', { url: 'https://a.test', width: 2560 }, 1],
    ['wider than 2560', { url: 'https://a.test', width: 2561 }, 3],
    ['taller than 2560 on a full page', { url: 'https://a.test', height: 2561, fullPage: true }, 3],
    ['the mobile preset, whatever width says', { url: 'https://a.test', device: 'mobile', width: 3840 }, 1],
  ])('charges %s %i credit(s)', async (_, body, cost) => {
    const outcome = await shoot(body);
    expect(outcome.ok && 'screenshot' in outcome && outcome.screenshot.creditsCharged).toBe(cost);
    expect(await credits.balance('acct')).toBe(10 - cost);
  });

  it('answers 402 with the cost and the balance, and charges nothing', async () => {
    await credits.set('acct', 2);
    const outcome = await shoot({ url: 'https://a.test', width: 3000 });
    expect(outcome.ok).toBe(false);
    expect((outcome as { error: AppError }).error.fields()).toEqual({ required: 3, available: 2 });
    expect(await credits.balance('acct')).toBe(2);
    expect(renderer.captures).toHaveLength(0);
  });
});

describe('refunds', () => {
  it('gives the credits back when the capture fails, and answers the capture failure', async () => {
    const outcome = await shoot({ url: 'https://a.test/fail', fullPage: true });
    expect(statusOf(outcome)).toBe(500);
    expect((outcome as { error: AppError }).error.fields()).toEqual({
      url: 'https://a.test/fail',
      message: 'Navigation timed out',
    });
    expect(await credits.balance('acct')).toBe(10);
  });

  it('still answers the capture failure when the refund cannot be written', async () => {
    credits.failRefunds = true;
    const outcome = await shoot({ url: 'https://a.test/fail' });
    expect(statusOf(outcome)).toBe(500);
    expect((outcome as { error: AppError }).error.fields()).toMatchObject({ url: 'https://a.test/fail' });
  });
});

describe('a successful capture', () => {
  it('answers the image with its type, quoted MD5 ETag, cost and the rate-limit decision', async () => {
    const outcome = await shoot({ url: 'https://a.test', format: 'webp' });
    if (!outcome.ok) throw outcome.error;
    if (!('screenshot' in outcome)) throw new Error('Queued');
    expect(outcome.screenshot).toMatchObject({
      contentType: 'image/webp',
      etag: expect.stringMatching(/^"[0-9a-f]{32}"$/),
      creditsCharged: 1,
      truncated: false,
    });
    expect(outcome.rateLimit).toEqual({
      allowed: true,
      limit: 100,
      remaining: 99,
      reset: Date.UTC(2026, 0, 1, 11),
    });
  });

  it('says when a full page was cut at the height cap', async () => {
    const outcome = await shoot({ url: 'https://a.test/tall', fullPage: true });
    expect(outcome.ok && 'screenshot' in outcome && outcome.screenshot.truncated).toBe(true);
  });

  it('records the key as used', async () => {
    await shoot({ url: 'https://a.test' });
    expect((await keys.list('acct'))[0]?.lastUsed).toBe(NOW);
  });
});
