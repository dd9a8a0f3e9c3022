import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { CreditLedger } from '../accounts/creditLedger';
import type { RateLimitDecision, RateLimiter } from '../accounts/rateLimiter';
import type { CaptureSpec, Renderer } from '../capture/renderer';
import type { UrlPolicy } from '../egress/urlPolicy';
import { RateLimitedError } from '../errors';
import { errorAnswer } from '../http/errorResponse';
import { parseJsonBody } from '../http/request';
import { type StreamingHandler, streamingRuntime } from '../http/streaming';
import type { KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import { authenticateApiKey } from './apiKeyAuth';
import { captureSpecOf } from './captureSpec';
import { creditCost } from './cost';
import { screenshotRequest } from './schema';

export interface ScreenshotDeps {
  keys: KeyStore;
  rateLimiter: RateLimiter;
  credits: CreditLedger;
  renderer: Renderer;
  urlPolicy: UrlPolicy;
  now?: () => number;
}

export const CONTENT_TYPES = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' } as const;
export const CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';
/** Time kept back from the function's remaining time to refund and answer after a capture that ran out. */
const RESPONSE_RESERVE_MS = 3_000;
const MIN_BUDGET_MS = 1_000;

/**
 * POST /api/screenshot, in the order decisions.md fixes: authenticate, count against the rate limit, validate,
 * reserve credits, capture. Credits are given back when the capture fails; every error is JSON in the spec's shape.
 */
export function screenshotHandler(deps: ScreenshotDeps): StreamingHandler {
  const now = deps.now ?? Date.now;

  return async (event, responseStream, context) => {
    logger.appendKeys({ requestId: context.awsRequestId });
    let rateHeaders: Record<string, string> = {};
    try {
      const identity = await authenticateApiKey(event, deps.keys);
      // Validation needs no store but may wait on DNS (the URL policy resolves the host): it runs alongside the
      // rate-limit write instead of after it. Its verdict is read only once the rate limit has answered, so the
      // order of answers (401, 429, 400, 402) is unchanged.
      const validated = validate(event, deps.urlPolicy);
      validated.catch(() => undefined);
      const [decision] = await Promise.all([
        deps.rateLimiter.hit(identity.accountId, now()),
        deps.keys
          .touchLastUsed(identity, now())
          .catch((error) => logger.warn('lastUsed not recorded', { error })),
      ]);
      rateHeaders = rateLimitHeaders(decision);
      if (!decision.allowed) throw new RateLimitedError(decision.limit, decision.reset);

      const spec = await validated;
      const cost = creditCost(spec);
      await deps.credits.reserve(identity.accountId, cost);

      let result: Awaited<ReturnType<Renderer['capture']>>;
      try {
        result = await deps.renderer.capture(spec, captureBudget(context));
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
      logger.info('screenshot', {
        status: 200,
        accountId: identity.accountId,
        cost,
        bytes: result.image.length,
      });
      // A client that hung up is not a server error, and there is no one left to send an error answer to.
      await send(responseStream, 200, result.image, {
        'Content-Type': CONTENT_TYPES[spec.format],
        'Content-Length': String(result.image.length),
        ETag: `"${createHash('md5').update(result.image).digest('hex')}"`,
        'Cache-Control': CACHE_CONTROL,
        'X-Credits-Charged': String(cost),
        ...(result.truncated ? { 'X-Screenshot-Truncated': 'true' } : {}),
        ...rateHeaders,
      }).catch((sendError) => logger.warn('Response not delivered', { error: sendError }));
    } catch (error) {
      const answer = errorAnswer(error, 'screenshot');
      logger.info('screenshot', { status: answer.status });
      const body = Buffer.from(JSON.stringify(answer.body));
      await send(responseStream, answer.status, body, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': String(body.length),
        'Cache-Control': 'no-store',
        ...rateHeaders,
        ...answer.headers,
      }).catch((sendError) => logger.warn('Response not delivered', { error: sendError }));
    } finally {
      // The customer has the answer; what is left (the next tab) runs before Lambda freezes the process.
      await deps.renderer.settle();
      logger.resetKeys();
    }
  };
}

/** The request body as a capture spec, or a ValidationError (400). */
async function validate(event: APIGatewayProxyEvent, urlPolicy: UrlPolicy): Promise<CaptureSpec> {
  const request = parseJsonBody(event, screenshotRequest);
  await urlPolicy.assertAllowed(request.url);
  return captureSpecOf(request);
}

function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.reset),
  };
}

/** The capture may use what the function has left, less a reserve to refund and answer. */
function captureBudget(context: Context): number {
  return Math.max(MIN_BUDGET_MS, context.getRemainingTimeInMillis() - RESPONSE_RESERVE_MS);
}

async function send(
  stream: Writable,
  statusCode: number,
  body: Buffer,
  headers: Record<string, string>,
): Promise<void> {
  const out = streamingRuntime().HttpResponseStream.from(stream, { statusCode, headers });
  out.end(body);
  await finished(out);
}
