import { createHash } from 'node:crypto';
import type { CreditLedger } from '../accounts/creditLedger';
import type { RateLimitDecision, RateLimiter } from '../accounts/rateLimiter';
import type { CaptureSpec, ImageFormat, Renderer } from '../capture/renderer';
import type { UrlPolicy } from '../egress/urlPolicy';
import { RateLimitedError } from '../errors';
import { validate } from '../http/request';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import type { UsageRecorder } from '../usage/usageRecorder';
import { authenticateApiKey } from './apiKeyAuth';
import { captureSpecOf } from './captureSpec';
import { creditCost } from './cost';
import { screenshotRequest } from './schema';
import { usageOf } from './usageOf';

export interface ScreenshotDeps {
  keys: KeyStore;
  rateLimiter: RateLimiter;
  credits: CreditLedger;
  renderer: Renderer;
  urlPolicy: UrlPolicy;
  /** Takes the usage record of every request that passed authentication. */
  usage: UsageRecorder;
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
  /** When the capture must be over, ms since epoch. */
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

/** The answer to one screenshot request; `rateLimit` is there once the caller was authenticated. */
export type ScreenshotOutcome =
  | { ok: true; screenshot: Screenshot; rateLimit: RateLimitDecision }
  | { ok: false; error: unknown; rateLimit?: RateLimitDecision };

export type CaptureScreenshot = (input: ScreenshotInput) => Promise<ScreenshotOutcome>;

/**
 * One screenshot, in the order of checks docs/api.md fixes: authenticate (401), count against the rate limit
 * (429), validate (400), reserve credits (402), capture (200, or 500 with the credits given back). Every request
 * that passed authentication leaves a usage record, whatever its answer.
 */
export function captureScreenshot(deps: ScreenshotDeps): CaptureScreenshot {
  const now = deps.now ?? Date.now;

  return async (input) => {
    const at = now();
    let identity: KeyIdentity;
    try {
      identity = await authenticateApiKey(input.apiKey, deps.keys);
    } catch (error) {
      return { ok: false, error };
    }
    const request = readOnce(input.request);
    const outcome = await admitted(identity, { ...input, request });
    deps.usage.record(usageOf(identity, outcome, { at, durationMs: now() - at }, request));
    return outcome;
  };

  async function admitted(identity: KeyIdentity, input: ScreenshotInput): Promise<ScreenshotOutcome> {
    let rateLimit: RateLimitDecision | undefined;
    try {
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

      const spec = await validated;
      const cost = creditCost(spec);
      await deps.credits.reserve(identity.accountId, cost);
      let result: Awaited<ReturnType<Renderer['capture']>>;
      try {
        result = await deps.renderer.capture(spec, {
          deadline: input.deadline,
          ...(input.signal ? { signal: input.signal } : {}),
        });
      } catch (error) {
        // The customer is owed the capture's own failure (500, url, reason) even when the refund cannot be written;
        // the log line is what an operator needs to give the credits back by hand.
        await deps.credits.refund(identity.accountId, cost).catch((refundError) =>
          logger.error('Refund failed; credits must be returned by hand', {
            accountId: identity.accountId,
            cost,
            error: refundError as Error,
          }),
        );
        throw error;
      }
      logger.info('screenshot', { accountId: identity.accountId, cost, bytes: result.image.length });
      return {
        ok: true,
        rateLimit: decision,
        screenshot: {
          image: result.image,
          contentType: CONTENT_TYPES[spec.format],
          etag: `"${createHash('md5').update(result.image).digest('hex')}"`,
          creditsCharged: cost,
          truncated: result.truncated,
        },
      };
    } catch (error) {
      return rateLimit ? { ok: false, error, rateLimit } : { ok: false, error };
    }
  }
}

/** The body thunk, read at most once (validation and the usage record both look at it); its errors are kept too. */
function readOnce(request: () => unknown): () => unknown {
  let read: { value: unknown } | { error: unknown } | undefined;
  return () => {
    if (!read) {
      try {
        read = { value: request() };
      } catch (error) {
        read = { error };
      }
    }
    if ('error' in read) throw read.error;
    return read.value;
  };
}

/** The request as a capture spec, or a ValidationError (400). */
async function specOf(request: () => unknown, urlPolicy: UrlPolicy): Promise<CaptureSpec> {
  const fields = validate(screenshotRequest, request());
  await urlPolicy.assertAllowed(fields.url);
  return captureSpecOf(fields);
}
