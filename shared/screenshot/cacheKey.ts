import { createHash } from 'node:crypto';
import type { DeliveryRequest } from '../delivery/imageDelivery';
import { comparableOutputs } from './outputFields';
import type { ScreenshotRequest } from './schema';

/**
 * Fields that say how to deliver an image, not what it shows: two requests that differ only in these share a cache
 * entry (a link to an image cached by an `<img>` request, a shorter `cacheTtl` asking for a fresher copy).
 */
const DELIVERY_FIELDS: ReadonlySet<string> = new Set<keyof ScreenshotRequest>([
  'cache',
  'cacheTtl',
  'response',
  'async',
  'webhookUrl',
]);

/**
 * The cache key of a request: SHA-256 of the account and the request's capture options after defaults, as canonical
 * JSON (object keys sorted at every depth, arrays in their order). So the order in which a client wrote fields or
 * object keys does not matter, a default written out equals one left out (those that depend on the format too), and
 * any other difference is another key: an `html` document is part of it, whole.
 */
export function cacheKeyOf(accountId: string, request: ScreenshotRequest): string {
  const options = Object.fromEntries(
    Object.entries(comparableOutputs(request)).filter(([name]) => !DELIVERY_FIELDS.has(name)),
  );
  return createHash('sha256')
    .update(canonicalJson([accountId, options]), 'utf8')
    .digest('hex');
}

/** How the request's answer is delivered, with the key of its cache entry when it asks for the cache. */
export function deliveryRequestOf(accountId: string, request: ScreenshotRequest): DeliveryRequest {
  return {
    cacheKey: request.cache ? cacheKeyOf(accountId, request) : undefined,
    cacheTtl: request.cacheTtl,
    response: request.response,
  };
}

/** JSON with object keys sorted (by UTF-16 code units) at every depth; `undefined` members are left out, as JSON does. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}
