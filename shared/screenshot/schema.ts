import { z } from 'zod';
import { DEVICE_NAMES, DEVICE_PRESETS } from '../capture/devices';
import { OUTPUT_FORMATS } from '../capture/renderer';
import { MAX_DELAY_MS } from '../timing';
import { captureOptionFields, combinationIssues } from './optionFields';
import { MAX_HTML_BYTES, outputFields, outputIssues } from './outputFields';

/** Bounds of the request's fields; the OpenAPI text and docs/api.md quote these, never retyped numbers. */
export const MAX_URL_LENGTH = 2048;
export const DIMENSION = { min: 320, max: 3840 } as const;
export const QUALITY = { min: 1, max: 100, default: 90 } as const;
/** Seconds a cached capture may be reused (docs/api.md, "Delivery"). */
export const CACHE_TTL = { min: 60, max: 2_592_000, default: 86_400 } as const;
/** What a successful request answers with: the image itself, or JSON with a link to the stored image. */
export const RESPONSE_KINDS = ['image', 'json'] as const;

const dimension = (fallback: number) =>
  z.number().int().min(DIMENSION.min).max(DIMENSION.max).default(fallback);

/**
 * An absolute http(s) URL of at most MAX_URL_LENGTH characters, without user-info: a user name and password in a URL
 * are a credential (Chromium answers a site's Basic challenge with them) that would pass every rule credentials
 * have (sealed at rest, refused on public links, answered private) unseen, and be stored and logged as part of the URL.
 */
function httpUrl(field: string, withCredentials: string) {
  return z
    .string()
    .max(MAX_URL_LENGTH, `${field} must be at most ${MAX_URL_LENGTH} characters`)
    .pipe(z.url({ protocol: /^https?$/, message: `${field} must be a valid http:// or https:// URL` }))
    .check((ctx) => {
      // Checks run after a failed format check too: an unparsable value has its issue already.
      const url = URL.parse(ctx.value);
      if (url?.username || url?.password)
        ctx.issues.push({
          code: 'invalid_format',
          format: 'url',
          input: ctx.value,
          message: withCredentials,
        });
    })
    .transform((url, ctx) => {
      const kept = escapedForLogs(url);
      if (kept.length <= MAX_URL_LENGTH) return kept;
      // Measured again as kept: a queued job's URL is read again when it runs (review, session 31: %00 is three
      // characters, a C1 control six, and a job accepted with a URL of 415 failed on its own 2,415).
      ctx.issues.push({
        code: 'too_big',
        origin: 'string',
        maximum: MAX_URL_LENGTH,
        inclusive: true,
        input: url,
        message: `${field} must be at most ${MAX_URL_LENGTH} characters as the URL parser escapes it`,
      });
      return z.NEVER;
    });
}

/** A webhook's address, on an async capture or a batch alike. */
export const webhookUrlField = httpUrl(
  'webhookUrl',
  'webhookUrl must not carry a user name or password: deliveries are signed, and never send them',
);

/**
 * The URL as sent, unless it holds white space, `"`, `<`, `>` or a control character (the parser takes them, and
 * escapes them itself): then as the parser writes it, which Chromium loads and a webhook is sent to all the same. The
 * logs cut every URL in a text to its host, and a URL in a text ends at those characters; as sent, what follows them
 * (a query's token) would be logged in clear (red team). A job kept a NUL or ESC as sent, not the address it reached
 * (red team, round 30). Other URLs stay exactly as sent, and so do their cache keys.
 */
function escapedForLogs(url: string): string {
  return /[\s"<>\p{Cc}]/u.test(url) ? new URL(url).href : url;
}

/**
 * The screenshot request body (docs/api.md), the single source of its type. Unknown fields are refused, defaults
 * applied; the URL (or else an `html` document) must be absolute http(s) and at most MAX_URL_LENGTH characters. Whether
 * its host may be reached is decided later, by the URL policy, because that needs DNS.
 */
const screenshotFields = z.strictObject({
  url: httpUrl(
    'url',
    'url must not carry a user name or password: send them as an Authorization header in headers',
  ).optional(),
  width: dimension(DEVICE_PRESETS.desktop.width),
  height: dimension(DEVICE_PRESETS.desktop.height),
  format: z.enum(OUTPUT_FORMATS).default('png'),
  quality: z.number().int().min(QUALITY.min).max(QUALITY.max).default(QUALITY.default),
  fullPage: z.boolean().default(false),
  device: z.enum(DEVICE_NAMES).optional(),
  delay: z.number().int().min(0).max(MAX_DELAY_MS).default(0),
  cache: z.boolean().default(false),
  cacheTtl: z.number().int().min(CACHE_TTL.min).max(CACHE_TTL.max).default(CACHE_TTL.default),
  response: z.enum(RESPONSE_KINDS).default('image'),
  // Optional, not defaulted: a request without it keeps the cache key it had before the field existed.
  metadata: z.boolean().optional(),
  // Async captures (docs/api.md, "Async captures"): answered 202 with a job; the capture runs from the queue.
  async: z.boolean().optional(),
  webhookUrl: webhookUrlField.optional(),
  ...captureOptionFields,
  ...outputFields,
});

export const screenshotRequest = screenshotFields.check((ctx) => {
  for (const issue of [
    ...combinationIssues(ctx.value),
    ...outputIssues(ctx.value),
    ...asyncIssues(ctx.value),
  ])
    ctx.issues.push({ code: 'custom', input: ctx.value, ...issue });
});

/**
 * Of `html` in a capture that is queued (`async: true`, or a batch's request), in bytes of UTF-8: the job keeps its
 * request in one DynamoDB item, which holds 400 KB at most.
 */
export const MAX_QUEUED_HTML_BYTES = 256 * 1024;

/** A webhook is for a job: it needs `async: true`, whose result is the `response: "json"` body. */
function asyncIssues(value: {
  async?: boolean | undefined;
  webhookUrl?: string | undefined;
  html?: string | undefined;
}) {
  if (value.async === true) return queuedIssues(value);
  return value.webhookUrl !== undefined
    ? [{ path: ['webhookUrl'], message: 'webhookUrl is only allowed with async: true (or on a batch)' }]
    : [];
}

/** What a queued capture's request may not hold that a synchronous one may. */
export function queuedIssues(value: { html?: string | undefined }): { path: string[]; message: string }[] {
  return value.html !== undefined && Buffer.byteLength(value.html, 'utf8') > MAX_QUEUED_HTML_BYTES
    ? [
        {
          path: ['html'],
          message: `html must be at most ${MAX_QUEUED_HTML_BYTES} bytes in an async capture or a batch (a synchronous capture takes up to ${MAX_HTML_BYTES})`,
        },
      ]
    : [];
}

export type ScreenshotRequest = z.infer<typeof screenshotRequest>;
