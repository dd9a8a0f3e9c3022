import { HTML_SOURCE } from '../capture/renderer';
import type { KeyIdentity } from '../keys/keyStore';
import type { UsageRecord } from '../usage/usageStore';
import { outcomeStatus, type ScreenshotOutcome } from './outcome';
import { MAX_URL_LENGTH } from './schema';

/** What one authenticated screenshot request leaves in the usage records. */
export function usageOf(
  identity: KeyIdentity,
  outcome: ScreenshotOutcome,
  timing: { at: number; durationMs: number },
  request: () => unknown,
): UsageRecord {
  const host = requestHost(request);
  return {
    accountId: identity.accountId,
    keyId: identity.keyId,
    at: timing.at,
    status: outcomeStatus(outcome),
    credits: outcome.ok && 'screenshot' in outcome ? outcome.screenshot.creditsCharged : 0,
    cacheHit: outcome.ok && 'screenshot' in outcome && outcome.screenshot.cache === 'HIT',
    durationMs: timing.durationMs,
    ...(host ? { host } : {}),
  };
}

/**
 * The host of the body's `url` when it is an http(s) URL, whatever else is wrong with the body: the records say
 * which site a refused request was for too. Only the host: the path and query may carry the customer's secrets. A
 * document given as `html` is recorded as HTML_SOURCE, never its text.
 */
export function requestHost(request: () => unknown): string | undefined {
  let body: { url?: unknown; html?: unknown } | null;
  try {
    body = request() as { url?: unknown; html?: unknown } | null;
  } catch {
    return undefined; // The body itself was refused (413, 415, malformed JSON).
  }
  const url = body?.url;
  if (url === undefined && typeof body?.html === 'string') return HTML_SOURCE;
  if (typeof url !== 'string' || url.length > MAX_URL_LENGTH || !URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.host || undefined : undefined;
}
