import type { RateLimitDecision } from '../accounts/rateLimiter';
import type { Screenshot } from '../delivery/imageDelivery';
import { PayloadTooLargeError } from '../errors';
import { holdsHtml, MAX_HTML_BODY_BYTES, MAX_SCREENSHOT_BODY_BYTES } from '../screenshot/bodySize';
import type { CaptureScreenshot, ScreenshotCredential } from '../screenshot/captureScreenshot';
import { RASTER_TYPES } from '../screenshot/outputFields';
import type { QueuedJob } from '../screenshot/queuedCaptures';
import { screenshotRequest } from '../screenshot/schema';
import { requestFromQuery } from '../signing/queryRequest';
import { canonicalQuery, KEY_ID_PARAM, SIGNATURE_PARAM } from '../signing/signedLink';
import { problemsOf } from '../validation';
import { errorResponse } from './errorAnswer';
import { isAsyncBody, withIdempotencyKeyChecked } from './idempotencyKey';
import { bearerCredential, jsonBody } from './request';
import { type HttpRequest, type HttpResponse, type HttpRoute, jsonResponse, NO_SNIFF } from './types';

export const CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';
/** A browser keeps an image at most this long (CACHE_CONTROL's max-age). */
const BROWSER_MAX_AGE_SECONDS = 3600;
/** For an image captured with the caller's headers or cookies: the caller's browser may keep it, no shared cache. */
export const PRIVATE_CACHE_CONTROL = 'private, max-age=3600';
/**
 * A signed link's image not in the cache (`cache=false`, or storing it failed): the signed-link CDN honours
 * `stale-while-revalidate`, which would keep it a day past a revoked key; an hour is what docs/api.md 15.3 promises.
 */
export const UNCACHED_LINK_CACHE_CONTROL = `public, max-age=${BROWSER_MAX_AGE_SECONDS}`;
/**
 * How long a browser or the signed-link CDN keeps a redirect to a stored file (a signed link's large hit), at most:
 * the pre-signed address it names works for an hour, or less deployed, once the function's credentials expire.
 */
export const REDIRECT_MAX_AGE_SECONDS = 300;

/**
 * /api/screenshot: POST with the API key and the JSON body, or GET as a signed link (the options in the query, with
 * keyId and signature), into the one use case; the image, a link to it, a redirect to it (a signed link's large
 * hit), a 304 or the error out.
 */
export function screenshotRoute(capture: CaptureScreenshot): HttpRoute {
  return async (request) => {
    const ifNoneMatch = request.headers['if-none-match'];
    const outcome = await capture({
      ...callerOf(request),
      deadline: request.deadline,
      signal: request.signal,
      ...(ifNoneMatch === undefined ? {} : { ifNoneMatch }),
    });
    const rateHeaders = outcome.rateLimit ? rateLimitHeaders(outcome.rateLimit) : {};
    if (!outcome.ok) return errorResponse(outcome.error, 'screenshot', { ...NO_SNIFF, ...rateHeaders });
    if ('queued' in outcome)
      return acceptedAnswer(outcome.queued, request.baseUrl, { ...NO_SNIFF, ...rateHeaders });
    // An answer the client never received is not charged: the adapter calls `undelivered` when it could not send it.
    const signedLink = request.method === 'GET';
    return { ...answer(outcome.screenshot, rateHeaders, signedLink), undelivered: outcome.undelivered };
  };
}

/** The credential and the request's fields (read lazily), from a POST body or a signed link's query. */
function callerOf(request: HttpRequest): ScreenshotCredential & { request: () => unknown } {
  if (request.method !== 'GET') {
    return { apiKey: bearerCredential(request), request: screenshotBody(request) };
  }
  const { [KEY_ID_PARAM]: keyId, [SIGNATURE_PARAM]: signature, ...options } = request.query;
  return {
    signed: {
      keyId,
      signature,
      canonicalQuery: canonicalQuery(request.query),
      // One value per name: a link whose meaning depends on which copy a reader keeps is refused.
      repeatedNames: request.repeatedQueryNames ?? [],
    },
    request: () => requestFromQuery(screenshotRequest, options),
  };
}

/**
 * The POST body: at most MAX_SCREENSHOT_BODY_BYTES, or MAX_HTML_BODY_BYTES when it holds an `html` document, which
 * only reading it can tell. A larger body is refused with the bound that applies to it.
 */
function screenshotBody(request: HttpRequest): () => unknown {
  const read = withIdempotencyKeyChecked(
    request,
    jsonBody(request, MAX_HTML_BODY_BYTES),
    (body) => problemsOf(screenshotRequest, body),
    isAsyncBody,
  );
  const oversized = Buffer.byteLength(request.body, 'utf8') > MAX_SCREENSHOT_BODY_BYTES;
  return () => {
    let body: unknown;
    try {
      body = read();
    } catch (error) {
      // Size comes first (docs/api.md): a body past the bound that cannot be read holds no `html` document either.
      if (oversized) throw new PayloadTooLargeError(MAX_SCREENSHOT_BODY_BYTES);
      throw error;
    }
    if (!holdsHtml(body) && oversized) throw new PayloadTooLargeError(MAX_SCREENSHOT_BODY_BYTES);
    return body;
  };
}

/** 202: the job, and where to ask about it (docs/api.md, "Async captures"). */
function acceptedAnswer(job: QueuedJob, baseUrl: string, headers: Record<string, string>): HttpResponse {
  const statusUrl = `${baseUrl}/api/jobs/${job.id}`;
  return jsonResponse(
    202,
    { id: job.id, status: job.status, createdAt: job.createdAt, statusUrl },
    { ...headers, Location: statusUrl },
  );
}

function answer(
  screenshot: Screenshot,
  rateHeaders: Record<string, string>,
  signedLink: boolean,
): HttpResponse {
  const headers: Record<string, string> = {
    ETag: screenshot.etag,
    // On the 304 and the link too: they stand for the same stored bytes.
    ...safeAnswerHeaders(screenshot.contentType),
    'X-Credits-Charged': String(screenshot.creditsCharged),
    ...(screenshot.cache ? { 'X-Cache': screenshot.cache } : {}),
    ...(screenshot.truncated ? { 'X-Screenshot-Truncated': 'true' } : {}),
    ...rateHeaders,
  };
  const cacheControl = cacheControlOf(screenshot, signedLink);
  if (screenshot.notModified) {
    return { status: 304, headers: { ...headers, 'Cache-Control': cacheControl }, body: '' };
  }
  if (screenshot.redirected && screenshot.link) {
    // No ETag: a client revalidating the redirect with it would be told (304) to keep an address that may be dead.
    const { ETag: _, ...redirectHeaders } = headers;
    const seconds = Math.min(REDIRECT_MAX_AGE_SECONDS, screenshot.freshForSeconds ?? 0);
    return {
      status: 302,
      headers: {
        ...redirectHeaders,
        Location: screenshot.link.url,
        'Cache-Control': `public, max-age=${seconds}, s-maxage=${seconds}`,
      },
      body: '',
    };
  }
  if (screenshot.link) {
    const { link } = screenshot;
    return jsonResponse(
      200,
      {
        url: link.url,
        expiresAt: link.expiresAt,
        contentType: screenshot.contentType,
        width: link.width,
        height: link.height,
        bytes: link.bytes,
        etag: screenshot.etag,
        creditsCharged: screenshot.creditsCharged,
        cache: screenshot.cache ?? 'BYPASS',
        truncated: screenshot.truncated,
        ...(screenshot.metadata ? { metadata: screenshot.metadata } : {}),
      },
      headers,
    );
  }
  return {
    status: 200,
    headers: {
      'Content-Type': screenshot.contentType,
      'Cache-Control': cacheControl,
      ...headers,
    },
    body: screenshot.image ?? Buffer.alloc(0),
  };
}

/**
 * A signed link's image in the cache is kept by shared caches (the signed-link CDN) for what is left of its `cacheTtl`
 * (`s-maxage`), and by a browser no longer than that either; no stale copy is served past it. A signed link's image
 * outside the cache is kept an hour, no stale copy after it. Every other answer has the fixed lifetime of docs/api.md
 * 5.3.
 */
function cacheControlOf(screenshot: Screenshot, signedLink: boolean): string {
  if (screenshot.credentialed) return PRIVATE_CACHE_CONTROL;
  const fresh = screenshot.freshForSeconds;
  if (!signedLink) return CACHE_CONTROL;
  if (fresh === undefined) return UNCACHED_LINK_CACHE_CONTROL;
  return `public, max-age=${Math.min(BROWSER_MAX_AGE_SECONDS, fresh)}, s-maxage=${fresh}`;
}

/**
 * A captured page's bytes must never run as a document on our origin (the local dashboard shares it): no type
 * sniffing, and whatever a browser could render as a document (a PDF, HTML, Markdown shown as text/html by a
 * careless viewer) in a sandbox with no script and an opaque origin.
 */
function safeAnswerHeaders(contentType: string): Record<string, string> {
  return {
    ...NO_SNIFF,
    ...(RASTER_TYPES.has(contentType) ? {} : { 'Content-Security-Policy': 'sandbox' }),
  };
}

export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.reset),
  };
}
