import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import { AppError, ClientGoneError, TooManyCapturesError } from '../../shared/errors';
import { keyManagement } from '../../shared/keys/keyManagement';
import { type CaptureScreenshot, captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { CAPTURE_BUDGET_MS } from '../../shared/timing';
import {
  FakeRenderer,
  fakeSessions,
  MemoryCaptureSlots,
  MemoryCreditLedger,
  MemoryImageStore,
  MemoryKeyStore,
  memoryScreenshotDeps,
} from '../helpers/memoryPorts';

/** The use case's capture limits against in-memory ports: budget from admission, slots, hang-ups, delivery. */

let clock: number;
let keys: MemoryKeyStore;
let credits: MemoryCreditLedger;
let slots: MemoryCaptureSlots;
let renderer: FakeRenderer;
let capture: CaptureScreenshot;
let apiKey: string;

beforeEach(async () => {
  clock = Date.UTC(2026, 0, 1, 10, 30);
  keys = new MemoryKeyStore();
  credits = new MemoryCreditLedger();
  slots = new MemoryCaptureSlots(2);
  renderer = new FakeRenderer();
  admitting(new AdmissionQueue({ shared: 1, headroom: 0 }, 5));
  const manage = keyManagement({
    sessions: fakeSessions,
    keys,
    credits,
    cipher: new AesGcmSecretCipher(randomBytes(32)),
    freeCredits: 0,
  });
  apiKey = (await manage.createKey('session:acct', () => ({ name: 'k' }))).key;
  await credits.set('acct', 10);
});

/** The use case over the in-memory ports, waiting for admission in `queue`. */
function admitting(queue: AdmissionQueue): void {
  capture = captureScreenshot(
    memoryScreenshotDeps({
      keys,
      credits,
      renderer,
      captureSlots: slots,
      admission: queue,
      now: () => clock,
    }),
  );
}

const shoot = (url: string, options: { key?: string; signal?: AbortSignal; deadline?: number } = {}) =>
  capture({
    apiKey: 'key' in options ? options.key : apiKey,
    request: () => ({ url }),
    deadline: options.deadline ?? clock + 90_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });

const statusOf = (outcome: Awaited<ReturnType<CaptureScreenshot>>) =>
  outcome.ok ? 200 : outcome.error instanceof AppError ? outcome.error.status : 500;

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('the capture budget', () => {
  it('runs from admission: time spent waiting in the queue is not taken from it', async () => {
    const first = shoot('https://slow.test');
    await tick();
    const second = shoot('https://a.test', { deadline: clock + 90_000 });
    await tick();
    clock += 40_000; // the second request waits 40 s behind the first
    renderer.finishSlow();
    await Promise.all([first, second]);
    expect(renderer.captures[1]?.limits.deadline).toBe(clock + CAPTURE_BUDGET_MS);
  });
});

describe('unauthenticated requests', () => {
  it('are answered 401 without waiting for a place in the queue', async () => {
    const busy = shoot('https://slow.test');
    await tick();
    expect(statusOf(await shoot('https://a.test', { key: undefined }))).toBe(401);
    renderer.finishSlow();
    await busy;
  });
});

describe('captures at once per account', () => {
  beforeEach(() => admitting(new AdmissionQueue({ shared: 10, headroom: 0 }, 10)));

  it('refuses one more than the bound with 429: limit, reset a second later, after the rate limit', async () => {
    const running = [shoot('https://slow.test'), shoot('https://slow.test')];
    await tick();
    const refused = await shoot('https://not a url');
    expect(refused.ok).toBe(false);
    const error = (refused as { error: unknown }).error;
    expect(error).toBeInstanceOf(TooManyCapturesError);
    expect(error).toMatchObject({ status: 429, limit: 2, reset: clock + 1_000 });
    expect((error as AppError).headers(clock)).toEqual({ 'Retry-After': '1' });
    // Counted against the hourly window, which is checked first.
    expect(refused.rateLimit?.remaining).toBe(97);
    renderer.finishSlow();
    await Promise.all(running);
    expect(slots.held('acct')).toBe(0);
  });

  it('gives the slot back as soon as the renderer answered: while the image is stored, before the answer', async () => {
    const images = new MemoryImageStore();
    const heldWhileStoring: number[] = [];
    const store = images.put.bind(images);
    images.put = async (...args) => {
      await tick();
      heldWhileStoring.push(slots.held('acct'));
      return store(...args);
    };
    capture = captureScreenshot(
      memoryScreenshotDeps({ keys, credits, renderer, images, captureSlots: slots, now: () => clock }),
    );
    const outcome = await capture({
      apiKey,
      request: () => ({ url: 'https://a.test', cache: true }),
      deadline: clock + 90_000,
    });
    expect(outcome.ok).toBe(true);
    expect(heldWhileStoring).toEqual([0]);
  });

  it('gives the slot back after a failed capture and after a refused body', async () => {
    await shoot('https://fail.test');
    await capture({ apiKey, request: () => ({}), deadline: clock + 90_000 });
    expect(slots.held('acct')).toBe(0);
  });
});

describe('a client that hangs up', () => {
  it('stops the capture and is not charged', async () => {
    const hangUp = new AbortController();
    const pending = shoot('https://slow.test', { signal: hangUp.signal });
    await tick();
    hangUp.abort();
    const outcome = await pending;
    expect(outcome.ok ? undefined : outcome.error).toBeInstanceOf(ClientGoneError);
    expect(await credits.balance('acct')).toBe(10);
  });

  it('is given its credits back when the image could not be delivered', async () => {
    const outcome = await shoot('https://a.test');
    expect(await credits.balance('acct')).toBe(9);
    if (!outcome.ok) throw outcome.error;
    await outcome.undelivered();
    expect(await credits.balance('acct')).toBe(10);
  });

  it('keeps the charge for an image stored in its cache, which the same request then answers free', async () => {
    const cached = (response: string) =>
      capture({
        apiKey,
        request: () => ({ url: 'https://a.test', cache: true, response }),
        deadline: clock + 90_000,
      });
    for (const response of ['image', 'json']) {
      await credits.set('acct', 10);
      const outcome = await cached(response);
      if (!outcome.ok || !('screenshot' in outcome)) throw new Error('expected a capture');
      expect(outcome.screenshot.cache).toBe('MISS');
      await outcome.undelivered();
      expect(await credits.balance('acct')).toBe(9);
      const again = await cached(response);
      expect(again.ok && 'screenshot' in again && again.screenshot.cache).toBe('HIT');
      expect(await credits.balance('acct')).toBe(9);
      clock += 2 * 86_400_000; // past the entry's lifetime, so the next round captures again
    }
  });
});
