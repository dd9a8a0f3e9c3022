import type { RateLimitDecision } from '../accounts/rateLimiter';
import type { CaptureScreenshot } from '../screenshot/captureScreenshot';
import { errorResponse } from './errorAnswer';
import { bearerCredential, jsonBody } from './request';
import type { HttpRoute } from './types';

export const CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';

/** The largest screenshot body accepted (docs/api.md, "Limits"). */
export const MAX_SCREENSHOT_BODY_BYTES = 96 * 1024;

/** POST /api/screenshot: the API key and the JSON body in, the image (or the error) out. */
export function screenshotRoute(capture: CaptureScreenshot): HttpRoute {
  return async (request) => {
    const outcome = await capture({
      apiKey: bearerCredential(request),
      request: jsonBody(request, MAX_SCREENSHOT_BODY_BYTES),
      deadline: request.deadline,
      signal: request.signal,
    });
    const rateHeaders = outcome.rateLimit ? rateLimitHeaders(outcome.rateLimit) : {};
    if (!outcome.ok) return errorResponse(outcome.error, 'screenshot', rateHeaders);
    const { screenshot } = outcome;
    return {
      status: 200,
      headers: {
        'Content-Type': screenshot.contentType,
        ETag: screenshot.etag,
        'Cache-Control': CACHE_CONTROL,
        'X-Credits-Charged': String(screenshot.creditsCharged),
        ...(screenshot.truncated ? { 'X-Screenshot-Truncated': 'true' } : {}),
        ...rateHeaders,
      },
      body: screenshot.image,
    };
  };
}

function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.reset),
  };
}
