import { z } from 'zod';
import { CAPTURE_CONTENT_TYPES } from '../capture/renderer';
import { MAX_KEYS_PER_ACCOUNT } from '../keys/schemas';

/**
 * Response bodies, for the API description only: the handlers build these objects themselves, and
 * test/openapi/contract.test.ts checks real responses against these schemas so the two cannot drift apart.
 */

const timestamp = z.number().int().meta({ description: 'Milliseconds since the epoch' });

const validationDetail = z
  .object({
    code: z.string().meta({
      description: 'Machine-readable reason, e.g. too_small, invalid_json, invalid_selector, url_not_allowed',
    }),
    path: z
      .array(z.union([z.string(), z.number()]))
      .meta({ description: 'Where in the body; empty for the whole body' }),
    message: z.string(),
    field: z
      .string()
      .optional()
      .meta({ description: 'The path as one name, like requests[3].width (batch requests)' }),
  })
  .meta({ id: 'ValidationDetail', description: 'One validation problem' });

// ---- Screenshot route errors: `{ error, ... }` (spec section 7) ----

const errorText = z.string().meta({ description: 'What went wrong, in words' });

export const screenshotError = z.object({ error: errorText }).meta({ id: 'ScreenshotError' });

export const screenshotValidationError = z
  .object({ error: errorText, details: z.array(validationDetail) })
  .meta({ id: 'ScreenshotValidationError' });

export const insufficientCreditsError = z
  .object({
    error: errorText,
    required: z.number().int().meta({ description: 'Credits this request costs' }),
    available: z.number().int().meta({ description: 'Credits the account holds now' }),
  })
  .meta({ id: 'InsufficientCreditsError' });

export const rateLimitedError = z
  .object({
    error: errorText,
    limit: z
      .number()
      .int()
      .meta({ description: 'Requests allowed per window (one clock hour, per account)' }),
    reset: timestamp.meta({ description: 'When the current window ends, milliseconds since the epoch' }),
  })
  .meta({ id: 'RateLimitedError' });

export const captureFailedError = z
  .object({
    error: errorText,
    url: z
      .string()
      .optional()
      .meta({ description: 'The requested URL (present when the capture itself failed)' }),
    message: z
      .string()
      .optional()
      .meta({ description: 'Why the capture failed (present when the capture itself failed)' }),
  })
  .meta({ id: 'CaptureFailedError' });

// ---- Key-management errors: `{ message, details? }` (docs/api.md) ----

export const managementError = z
  .object({
    message: errorText,
    details: z.array(validationDetail).optional().meta({ description: 'Present on 400 validation errors' }),
  })
  .meta({ id: 'ManagementError' });

// ---- Successful bodies ----

const keyId = z.string().meta({
  description: 'Key identifier, used in PATCH and DELETE paths',
  example: 'key_0mf3k2a1b9c8d7e6f5a4b',
});
const keyName = z.string().meta({ description: 'Label chosen at creation' });
const isActive = z
  .boolean()
  .meta({ description: 'true while the key can authenticate requests; false once revoked' });

const apiKeyListItem = z
  .object({
    id: keyId,
    name: keyName,
    key: z.string().meta({
      description: 'Masked value: sk_live_... and the last four characters',
      example: 'sk_live_...9f3a',
    }),
    lastUsed: timestamp
      .nullable()
      .meta({ description: 'Last screenshot request (may lag up to 60 s); null when never used' }),
    isActive,
    createdAt: timestamp,
  })
  .meta({ id: 'ApiKeyListItem' });

export const apiKeyList = z
  .object({ keys: z.array(apiKeyListItem).max(MAX_KEYS_PER_ACCOUNT).meta({ description: 'Newest first' }) })
  .meta({ id: 'ApiKeyList' });

export const createdApiKey = z
  .object({
    id: keyId,
    name: keyName,
    key: z
      .string()
      .regex(/^sk_live_[0-9a-f]{40}$/)
      .meta({ description: 'The full key. Shown only in this response; it cannot be retrieved again' }),
    signingSecret: z
      .string()
      .regex(/^ss_live_[0-9a-f]{64}$/)
      .meta({
        description:
          'Signs links for <img> tags (GET /api/screenshot). Shown only in this response; stored encrypted, it cannot be retrieved again',
      }),
    createdAt: timestamp,
    isActive: z.boolean().meta({
      description:
        'true; false only when another request of the account revoked the key while it was being created',
    }),
  })
  .meta({ id: 'CreatedApiKey' });

export const keyChangeResult = z
  .object({ success: z.literal(true), message: z.string().meta({ example: 'API key revoked' }) })
  .meta({ id: 'KeyChangeResult' });

export const creditBalance = z
  .object({ balance: z.number().int().min(0).meta({ description: 'Credits available for screenshots' }) })
  .meta({ id: 'CreditBalance' });

export const webhookSecret = z
  .object({
    secret: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
      .meta({
        description:
          'The Standard Webhooks secret that signs deliveries: whsec_ and 32 random bytes in base64. Verify with it, e.g. new Webhook(secret).verify(body, headers) from the standardwebhooks package',
        example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5mTMIJMF+uc=',
      }),
  })
  .meta({ id: 'WebhookSecret' });

const nullableText = (description: string) => z.string().nullable().meta({ description });
const properties = (description: string) => z.record(z.string(), z.string()).meta({ description });

export const pageMetadata = z
  .object({
    title: nullableText('The document title'),
    description: nullableText('The description meta tag'),
    lang: nullableText('The lang attribute of the html element'),
    canonicalUrl: nullableText('The canonical link, absolute'),
    finalUrl: nullableText(
      'Where the page ended up after redirects; null for an html document that did not navigate elsewhere, and for an address too long for the metadata budget',
    ),
    statusCode: z
      .number()
      .int()
      .nullable()
      .meta({ description: "The HTTP status of the page's main document" }),
    favicon: nullableText('The icon link, absolute'),
    openGraph: properties('og: properties, keyed without the prefix'),
    twitter: properties('twitter: properties, keyed without the prefix'),
  })
  .meta({
    id: 'PageMetadata',
    description:
      'What the rendered page says about itself (metadata: true): at most 16 KiB as JSON, its first properties kept',
  });

export const imageLink = z
  .object({
    url: z.string().meta({ description: 'Pre-signed address of the stored image' }),
    expiresAt: timestamp.meta({ description: 'When url stops working, milliseconds since the epoch' }),
    contentType: z.enum(Object.values(CAPTURE_CONTENT_TYPES) as [string, ...string[]]),
    width: z.number().int().nullable().meta({ description: 'Image width in pixels; null for text formats' }),
    height: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'Image height in pixels; null for text formats' }),
    bytes: z.number().int().meta({ description: 'Image size in bytes' }),
    etag: z.string().meta({ description: 'Quoted hex MD5 of the image bytes, as the ETag header' }),
    creditsCharged: z.number().int().meta({ description: 'What this request cost; 0 for a cache hit' }),
    cache: z.enum(['HIT', 'MISS', 'BYPASS']).meta({
      description: 'HIT: from the cache; MISS: captured and cached; BYPASS: captured without the cache',
    }),
    truncated: z.boolean().meta({
      description:
        'Whether the image was cut at the height cap (a full page or an element) or the PDF at 100 pages, as X-Screenshot-Truncated says of an image answer',
    }),
    metadata: pageMetadata.optional(),
  })
  .meta({ id: 'ImageLink', description: 'response: json, the stored image' });

const count = (description: string) => z.number().int().min(0).meta({ description });

export const usageReport = z
  .object({
    days: z
      .array(
        z.object({
          date: z
            .string()
            .regex(/^\d{4}-\d{2}-\d{2}$/)
            .meta({ description: 'The UTC day, YYYY-MM-DD', example: '2026-01-31' }),
          captures: count('Requests answered with an image, cache hits included'),
          failed: count('Requests answered with an error (400 and above): invalid, over the limits, failed'),
          cacheHits: count('Captures answered from the image cache'),
          credits: count('Credits charged'),
        }),
      )
      .meta({ description: 'Every UTC day of the window, oldest first; days without requests as zeros' }),
    byKey: z
      .array(
        z.object({
          keyId,
          name: keyName
            .nullable()
            .meta({ description: 'Label chosen at creation; null once the key was deleted' }),
          captures: count('Requests of this key answered with an image'),
          credits: count('Credits charged to requests of this key'),
        }),
      )
      .meta({
        description: 'Each key that made requests in the window, the most credits first; deleted keys too',
      }),
  })
  .meta({ id: 'UsageReport' });

const jobId = z.string().meta({ description: 'The job id', example: 'job_0mhx3k2a0f3c2b1a09e8d7c6' });
const jobStatus = z.enum(['queued', 'running', 'succeeded', 'failed']);
const nullableMoment = (description: string) => timestamp.nullable().meta({ description });

export const acceptedJob = z
  .object({
    id: jobId,
    status: z.literal('queued'),
    createdAt: timestamp,
    statusUrl: z.string().meta({ description: 'GET it for the outcome (also the Location header)' }),
  })
  .meta({ id: 'AcceptedJob', description: 'async: true, accepted: the capture runs from the queue' });

export const webhookOutcome = z
  .object({
    url: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: count('Delivery attempts made'),
    lastStatus: z
      .number()
      .int()
      .nullable()
      .meta({ description: "The receiver's last status; null when none" }),
  })
  .nullable()
  .meta({ id: 'WebhookOutcome', description: "The webhook's outcome; null without a webhookUrl" });

export const job = z
  .object({
    id: jobId,
    status: jobStatus,
    createdAt: timestamp,
    startedAt: nullableMoment('When a worker first started it'),
    finishedAt: nullableMoment('When it succeeded or failed'),
    result: imageLink
      .nullable()
      .meta({ description: 'When succeeded: the response: json body, its url valid 1 hour' }),
    error: z
      .object({
        status: z.number().int().meta({ description: 'What a synchronous capture would have answered' }),
        message: errorText,
      })
      .nullable(),
    webhook: webhookOutcome,
  })
  .meta({ id: 'Job', description: 'An async capture (kept 7 days)' });

export const jobList = z
  .object({ jobs: z.array(job) })
  .meta({ id: 'JobList', description: 'The latest 50, newest first' });

export const acceptedBatch = z
  .object({
    id: z.string().meta({ example: 'bat_0mhx3k2a0f3c2b1a09e8d7c6' }),
    status: z.literal('running'),
    createdAt: timestamp,
    statusUrl: z.string(),
    jobs: z.array(z.object({ id: jobId, status: z.literal('queued') })),
  })
  .meta({ id: 'AcceptedBatch' });

export const batch = z
  .object({
    id: z.string(),
    status: z.enum(['running', 'completed']),
    createdAt: timestamp,
    finishedAt: nullableMoment('When its last job finished'),
    counts: z.object({
      queued: count('Jobs waiting'),
      running: count('Jobs running'),
      succeeded: count('Jobs succeeded'),
      failed: count('Jobs failed'),
    }),
    jobs: z.array(job),
    // Its batch.completed delivery's (its jobs carry none of their own).
    webhook: webhookOutcome,
  })
  .meta({ id: 'Batch' });
