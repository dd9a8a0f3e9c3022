import { createHash } from 'node:crypto';
import type { CaptureSlots } from '../accounts/captureSlots';
import type { CreditLedger } from '../accounts/creditLedger';
import type { RateLimitDecision, RateLimiter } from '../accounts/rateLimiter';
import type { CaptureSpec, ImageFormat, Renderer } from '../capture/renderer';
import type { UrlPolicy } from '../egress/urlPolicy';
import { ClientGoneError, RateLimitedError, TooManyCapturesError } from '../errors';
import { validate } from '../http/request';
import type { KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import { CAPTURE_BUDGET_MS } from '../timing';
import { type Admission, IMMEDIATE_ADMISSION } from './admission';
import { authenticateApiKey } from './apiKeyAuth';
import { captureSpecOf } from './captureSpec';
import { creditCost } from './cost';
import { screenshotRequest } from './schema';

export interface ScreenshotDeps {
  keys: KeyStore;
  rateLimiter: RateLimiter;
  credits: CreditLedger;
  captureSlots: CaptureSlots;
  renderer: Renderer;
  urlPolicy: UrlPolicy;
  /** Where authenticated requests wait for their turn (the local queue); by default they run at once. */
  admission?: Admission;
  /** The time one capture has from admission; CAPTURE_BUDGET_MS unless a test wants it shorter. */
  captureBudgetMs?: number;
  now?: () => number;
}

export interface ScreenshotInput {
  /** The API key the caller presented, if any. */
  apiKey: string | undefined;
  /**
   * The request's fields, read only when the order of checks reaches validation, so a bad body never hides a 401
   * or a 429. It may throw the body's own errors (413, 415, malformed JSON).
   */
  request: () => unknown;
  /**
   * The latest the runtime lets the request run, less what it needs to answer, ms since epoch (the function's
   * timeout). The capture's own budget, counted from admission, usually ends sooner.
   */
  deadline: number;
  /** Aborted when the caller stopped waiting. */
  signal?: AbortSignal;
}

export const CONTENT_TYPES: Record<ImageFormat, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
};

export interface Screenshot {
  image: Buffer;
  contentType: string;
  /** Quoted hex MD5 of the image bytes. */
  etag: string;
  creditsCharged: number;
  /** A full page cut at the height cap. */
  truncated: boolean;
}

/**
 * The answer to one screenshot request; `rateLimit` is there once the caller was authenticated. A success carries
 * `undelivered`, which whoever sends the image calls when it could not be handed over: the credits go back.
 */
export type ScreenshotOutcome =
  | { ok: true; screenshot: Screenshot; rateLimit: RateLimitDecision; undelivered: () => Promise<void> }
  | { ok: false; error: unknown; rateLimit?: RateLimitDecision };

export type CaptureScreenshot = (input: ScreenshotInput) => Promise<ScreenshotOutcome>;

/**
 * One screenshot, in the order of checks docs/api.md fixes: authenticate (401), count against the rate limit
 * (429), take one of the account's capture slots (429), validate (400), reserve credits (402), capture (200, or 500
 * with the credits given back). Only authenticated requests wait for admission, and the capture's time budget runs
 * from there. A client that hangs up stops the capture and is not charged.
 */
export function captureScreenshot(deps: ScreenshotDeps): CaptureScreenshot {
  const now = deps.now ?? Date.now;
  const admission = deps.admission ?? IMMEDIATE_ADMISSION;
  const budgetMs = deps.captureBudgetMs ?? CAPTURE_BUDGET_MS;

  return async (input) => {
    let rateLimit: RateLimitDecision | undefined;
    try {
      const identity = await authenticateApiKey(input.apiKey, deps.keys);
      const queuedAt = now();
      return await admission.run(async () => {
        const admittedAt = now();
        // Time spent waiting for admission is not the runtime's: deployed there is no such wait, and locally the
        // queue stands in for Lambda starting another function.
        const deadline = Math.min(admittedAt + budgetMs, input.deadline + (admittedAt - queuedAt));
        if (input.signal?.aborted) throw new ClientGoneError();
        // Validation needs no store but may wait on DNS (the URL policy resolves the host): it runs alongside the
        // rate-limit write instead of after it. Its verdict is read only once the rate limit has answered, so the
        // order of answers (401, 429, 400, 402) is unchanged.
        const validated = specOf(input.request, deps.urlPolicy);
        validated.catch(() => undefined);
        const [decision] = await Promise.all([
          deps.rateLimiter.hit(identity.accountId, now()),
          deps.keys
            .touchLastUsed(identity, now())
            .catch((error) => logger.warn('lastUsed not recorded', { error })),
        ]);
        rateLimit = decision;
        if (!decision.allowed) throw new RateLimitedError(decision.limit, decision.reset);

        const lease = await deps.captureSlots.acquire(identity.accountId, now(), deadline);
        if (lease === undefined) throw new TooManyCapturesError(deps.captureSlots.limit, now());
        try {
          const spec = await validated;
          const cost = creditCost(spec);
          await deps.credits.reserve(identity.accountId, cost);
          const giveBack = () => refund(deps.credits, identity.accountId, cost);
          let result: Awaited<ReturnType<Renderer['capture']>>;
          try {
            result = await deps.renderer.capture(spec, {
              deadline,
              ...(input.signal ? { signal: input.signal } : {}),
            });
            if (input.signal?.aborted) throw new ClientGoneError();
          } catch (error) {
            await giveBack();
            throw error;
          }
          logger.info('screenshot', { accountId: identity.accountId, cost, bytes: result.image.length });
          return {
            ok: true,
            rateLimit: decision,
            undelivered: giveBack,
            screenshot: {
              image: result.image,
              contentType: CONTENT_TYPES[spec.format],
              etag: `"${createHash('md5').update(result.image).digest('hex')}"`,
              creditsCharged: cost,
              truncated: result.truncated,
            },
          };
        } finally {
          // A release that fails leaves the lease to lapse at the deadline.
          await deps.captureSlots
            .release(identity.accountId, lease)
            .catch((error) => logger.warn('Capture slot not released', { error }));
        }
      });
    } catch (error) {
      return rateLimit ? { ok: false, error, rateLimit } : { ok: false, error };
    }
  };
}

/**
 * Gives back what a capture that was not delivered took. The customer is owed the capture's own answer even when
 * the refund cannot be written; the log line is what an operator needs to give the credits back by hand.
 */
async function refund(credits: CreditLedger, accountId: string, cost: number): Promise<void> {
  await credits.refund(accountId, cost).catch((error) =>
    logger.error('Refund failed; credits must be returned by hand', {
      accountId,
      cost,
      error: error as Error,
    }),
  );
}

/** The request as a capture spec, or a ValidationError (400). */
async function specOf(request: () => unknown, urlPolicy: UrlPolicy): Promise<CaptureSpec> {
  const fields = validate(screenshotRequest, request());
  await urlPolicy.assertAllowed(fields.url);
  return captureSpecOf(fields);
}
