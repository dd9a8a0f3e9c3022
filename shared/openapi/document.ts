import { z } from 'zod';
import {
  type CreateDocumentOptions,
  createDocument,
  type oas31,
  type oas32,
  type ZodOpenApiOperationObject,
  type ZodOpenApiOverrideMetaContext,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import { CAPTURE_CONTENT_TYPES, MAX_PDF_PAGES } from '../capture/renderer';
import { SIGNED_LINK_INLINE_HIT_BYTES } from '../delivery/imageDelivery';
import { MAX_BATCH_BODY_BYTES } from '../http/jobRoutes';
import { MAX_BODY_BYTES } from '../http/request';
import { REDIRECT_MAX_AGE_SECONDS } from '../http/screenshotRoute';
import { FIELDS_REFUSED_IN_BATCH, MAX_BATCH_SIZE } from '../jobs/submitBatch';
import { createKeyBody, MAX_KEY_NAME_LENGTH, MAX_KEYS_PER_ACCOUNT, updateKeyBody } from '../keys/schemas';
import { type OperationName, operationOf, ROUTES, type RouteDefinition } from '../routes';
import { MAX_HTML_BODY_BYTES, MAX_SCREENSHOT_BODY_BYTES } from '../screenshot/bodySize';
import { HIGH_RESOLUTION_THRESHOLD, PDF_COST } from '../screenshot/cost';
import { type ScreenshotRequest, screenshotRequest } from '../screenshot/schema';
import { FIELDS_REFUSED_ON_SIGNED_LINKS } from '../screenshot/signedLinkFields';
import { KEY_ID_PARAM, SIGNATURE_PARAM } from '../signing/signedLink';
import { AFTER_LOAD_BUDGET_MS, NAVIGATION_BUDGET_MS, TIMED_OUT_SLOT_PENALTY_MS } from '../timing';
import { DEFAULT_USAGE_DAYS, MAX_USAGE_DAYS, MOMENT_PATTERN } from '../usage/schemas';
import { USAGE_RETENTION_DAYS } from '../usage/usageStore';
import {
  acceptedBatch,
  acceptedJob,
  apiKeyList,
  batch,
  captureFailedError,
  createdApiKey,
  creditBalance,
  imageLink,
  insufficientCreditsError,
  job,
  jobList,
  keyChangeResult,
  managementError,
  rateLimitedError,
  screenshotError,
  screenshotValidationError,
  usageReport,
  webhookSecret,
} from './schemas';
import { SCREENSHOT_FIELD_DESCRIPTIONS, URL_SHAPE } from './screenshotFieldDescriptions';

/**
 * The OpenAPI 3.1 description of every route in ROUTES. Request bodies are the very zod schemas the handlers
 * validate with; paths, methods, operation ids and security come from the route table, so a route cannot exist
 * without being described (OPERATIONS is keyed by handler: a new route does not compile until it is documented).
 */

/**
 * Request bodies are components of their own (`components.requestBodies`), with their schemas inline, not schema
 * components: generators such as openapi-typescript make a defaulted property required in a schema component (right
 * for answers), but leave it optional in a request body, where the server fills it in.
 */
const requestBody = (id: string, schema: z.ZodType) => ({ id, required: true, content: json(schema) });

/**
 * The screenshot body as the document shows it: the zod schema stays as the handler needs it; descriptions and the
 * URL's shape are added to the rendered copy, and the fields refused where it is used (`without`) left out.
 */
function describeScreenshotBody(
  { jsonSchema }: ZodOpenApiOverrideMetaContext,
  without: readonly string[] = [],
): void {
  const properties = (jsonSchema.properties ?? {}) as Record<string, oas31.SchemaObject>;
  for (const field of without) delete properties[field];
  for (const [field, description] of Object.entries(SCREENSHOT_FIELD_DESCRIPTIONS)) {
    const property = properties[field];
    if (property) property.description = description;
  }
  if (properties.url) Object.assign(properties.url, URL_SHAPE);
  // The handler's rule that zod checks in code: exactly one of the two.
  jsonSchema.oneOf = ['url', 'html'].map((field) => ({ properties: { [field]: {} }, required: [field] }));
}

const screenshotBody = screenshotRequest.meta({
  examples: [{ url: 'https://example.com', format: 'png', fullPage: true }],
  override: (context: ZodOpenApiOverrideMetaContext) => describeScreenshotBody(context),
});

/** A batch's request: a screenshot body without the fields a batch refuses (red team, round 24: they were listed). */
const batchRequestBody = screenshotRequest.meta({
  override: (context: ZodOpenApiOverrideMetaContext) =>
    describeScreenshotBody(context, FIELDS_REFUSED_IN_BATCH),
});

const createKeyRequest = createKeyBody.meta({
  description:
    `name is trimmed first; it must then be 1 to ${MAX_KEY_NAME_LENGTH} characters that show as what they are: no ` +
    'control character, line or paragraph separator, interlinear annotation control, default-ignorable character ' +
    "(but the joiners U+200C and U+200D, variation selectors and an emoji flag's tags), lone surrogate or U+FFFD, at " +
    'least one character that draws something, at most four combining marks and one variation selector in a row',
  examples: [{ name: 'production server' }],
});
const updateKeyRequest = updateKeyBody.meta({
  description:
    'false revokes the key (permanent); true on an active key changes nothing, on a revoked key answers 409',
  examples: [{ isActive: false }],
});

// ---- Headers ----

const integerHeader = (id: string, description: string) =>
  z.number().int().meta({ description, header: { id } });

const rateLimitHeaders = {
  'X-RateLimit-Limit': integerHeader(
    'X-RateLimit-Limit',
    'Requests allowed per window (one clock hour, per account)',
  ),
  'X-RateLimit-Remaining': integerHeader('X-RateLimit-Remaining', 'Requests left in the current window'),
  'X-RateLimit-Reset': integerHeader(
    'X-RateLimit-Reset',
    'When the current window ends, milliseconds since the epoch',
  ),
};

const cacheHeader = {
  'X-Cache': z.enum(['HIT', 'MISS']).optional().meta({
    description: 'With cache: true, whether the answer came from the cache (HIT, free) or a new capture',
  }),
};

const imageHeaders = z.object({
  'Content-Length': z.number().int().meta({ description: 'Image size in bytes' }),
  ETag: z.string().meta({
    description: 'Quoted hex MD5 of the image bytes',
    example: '"9e107d9d372bb6826bd81d3542a419d6"',
  }),
  'Cache-Control': z.string().meta({
    description: 'private, max-age=3600 for a capture made with headers or cookies',
    example: 'public, max-age=3600, stale-while-revalidate=86400',
  }),
  'X-Credits-Charged': z
    .number()
    .int()
    .meta({
      description: `Credits this capture cost: 1 basic, 2 full page, 3 when width or height × scale is above ${HIGH_RESOLUTION_THRESHOLD} px; ${PDF_COST} for a PDF`,
    }),
  'X-Screenshot-Truncated': z
    .literal('true')
    .optional()
    .meta({
      description: `Present when a full-page capture was cut at the height limit, or a PDF at ${MAX_PDF_PAGES} pages`,
    }),
  'X-Content-Type-Options': z
    .literal('nosniff')
    .meta({ description: 'On every answer of this route: the content type is never to be guessed' }),
  'Content-Security-Policy': z
    .literal('sandbox')
    .optional()
    .meta({ description: 'On a PDF: a browser showing it runs no script with our origin' }),
  ...cacheHeader,
  ...rateLimitHeaders,
});

/** The rate window's headers, as a mask of zod's `pick` and `partial`. */
const RATE_LIMIT_MASK = Object.fromEntries(
  Object.keys(rateLimitHeaders).map((name) => [name, true]),
) as Record<keyof typeof rateLimitHeaders, true>;

/** The answer with a link (`response: "json"`): no image, so no Content-Length or Cache-Control of one. */
const linkHeaders = imageHeaders.pick({
  ETag: true,
  'X-Credits-Charged': true,
  'X-Screenshot-Truncated': true,
  'X-Cache': true,
  ...RATE_LIMIT_MASK,
});

/** A 202's: where to follow the job (or batch), and the rate window it was counted in; no image, so no ETag. */
const acceptedHeaders = z.object({
  Location: z.string().meta({ description: 'The status URL, as statusUrl in the body' }),
  ...rateLimitHeaders,
});

/** A 429 of the rate limit: when to try again, beside the window's headers. */
const rateLimitedHeaders = z.object({
  ...rateLimitHeaders,
  'Retry-After': z.number().int().meta({ description: 'Whole seconds until the caller may try again' }),
});

// ---- Responses ----

const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
const binary: oas31.SchemaObject = { type: 'string', format: 'binary' };

/** An error of the screenshot route after authentication: it carries the rate-limit headers too. */
const screenshotFailure = (description: string, schema: z.ZodType): ZodOpenApiResponseObject => ({
  description,
  headers: z.object(rateLimitHeaders),
  content: json(schema),
});

const managementFailure = (description: string): ZodOpenApiResponseObject => ({
  description,
  content: json(managementError),
});

const UNAVAILABLE =
  'The data store is out of reach or did not answer in time; nothing was charged. Retry after Retry-After';
const retryAfterOne = z.object({
  'Retry-After': z.number().int().meta({ description: 'Whole seconds to wait before retrying' }),
});

/** What any route that reads the table may answer, in one of the two error styles. */
const serverFailures = (failure: (description: string) => ZodOpenApiResponseObject) => ({
  '500': failure('Unexpected server error (no internals in the body)'),
  '503': { ...failure(UNAVAILABLE), headers: retryAfterOne },
});
const sessionFailures = {
  '401': managementFailure('Session token missing, malformed, expired or wrongly signed'),
  ...serverFailures(managementFailure),
};
/** A refusal of the MCP transport: a JSON-RPC error with no id. */
const jsonRpcFailure = (description: string): ZodOpenApiResponseObject => ({
  description,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['jsonrpc', 'error'],
        properties: {
          jsonrpc: { const: '2.0' },
          id: { type: 'null' },
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: { code: { type: 'integer' }, message: { type: 'string' } },
          },
        },
      },
    },
  },
});
/** `{ error }`, on routes of the screenshot style whose answer may come before the rate limit's headers. */
const screenshotStyleFailure = (description: string): ZodOpenApiResponseObject => ({
  description,
  content: json(screenshotError),
});
const bodyFailures = {
  '400': managementFailure('Invalid body (malformed JSON, unknown fields, failed validation); see details'),
  '413': managementFailure(`Body larger than ${MAX_BODY_BYTES / 1024} KiB`),
  '415': managementFailure('Content-Type is not application/json'),
};
const keyNotFound = managementFailure(
  'No such key, or it belongs to another account (same answer either way)',
);
const jobIdParameter = { path: z.object({ id: z.string().meta({ description: 'The id from the 202' }) }) };
const keyIdParameter = {
  path: z.object({ id: z.string().meta({ description: 'Key id from the list or creation' }) }),
};

/** The answers both ways of asking for a screenshot share, after the credential and the body. */
const deliveredResponses = {
  '200': {
    description:
      'The image (or the text of markdown and html) as raw bytes in the requested format, or with response: json a link to the stored file',
    headers: imageHeaders,
    content: {
      // Media types without their parameters (the charset of text formats), as OpenAPI keys them.
      ...Object.fromEntries(
        Object.values(CAPTURE_CONTENT_TYPES).map((type) => [type.split(';')[0], { schema: binary }]),
      ),
      ...json(imageLink),
    },
  },
  '304': {
    description:
      'With the cache: If-None-Match names the ETag of the cached image. No body, nothing charged; counts towards the rate limit',
    // The Cache-Control the image's 200 would carry (red team, round 23: undeclared).
    headers: linkHeaders.extend({ 'Cache-Control': imageHeaders.shape['Cache-Control'] }),
  },
};

/**
 * A signed link's answer from the cache, and its 304, carry no rate-limit headers: they cost no budget (docs/api.md
 * 15.3; red team, round 23: declared required).
 */
function withoutRequiredRateLimit<T extends { headers: z.ZodObject }>(response: T): T {
  return { ...response, headers: response.headers.partial(RATE_LIMIT_MASK) };
}

/** Every answer of POST /api/screenshot; the signed GET has the same except those about a body. */
const screenshotResponses = {
  ...deliveredResponses,
  '202': {
    description: 'async: true, accepted: the job, and its status URL in Location too',
    headers: acceptedHeaders,
    content: json(acceptedJob),
  },
  '400': screenshotFailure(
    'Invalid body or a URL that is not allowed; see details',
    screenshotValidationError,
  ),
  '401': {
    description:
      'API key (or signed link) missing, invalid, revoked or deleted, or a signature that does not match',
    content: json(screenshotError),
  },
  '402': screenshotFailure('Not enough credits for this capture', insufficientCreditsError),
  '413': screenshotFailure(`Body larger than ${MAX_SCREENSHOT_BODY_BYTES / 1024} KiB`, screenshotError),
  '415': screenshotFailure('Content-Type is not application/json', screenshotError),
  '429': {
    description:
      'Rate limit exceeded for this account, or it already runs as many captures at once as it may ' +
      '(MAX_CONCURRENT_CAPTURES, default 10, or its fair share of the capacity all accounts share; a capture that ' +
      `ran out of its time budget holds its slot ${TIMED_OUT_SLOT_PENALTY_MS / 1000} s longer, another capture that ` +
      'ended free because of the page or a hang-up as long again as it ran: limit is that number, ' +
      'reset one second later)',
    headers: rateLimitedHeaders,
    content: json(rateLimitedError),
  },
  '500': screenshotFailure(
    'The capture failed (unreachable page, timeout, blocked address): url and message say which and why; ' +
      'any other server error carries error only',
    captureFailedError,
  ),
  '503': {
    description: `${UNAVAILABLE}. The local server also answers 503 while it starts and when its capture queue is full`,
    headers: retryAfterOne,
    content: json(screenshotError),
  },
};

/** A browser or client revalidating an image it holds (docs/api.md, "Conditional requests"). */
const conditionalRequestHeader = z.object({
  'If-None-Match': z.string().optional().meta({
    description:
      'The ETag of an image the caller holds; when it names the cached image, the answer is 304 with no body, free',
    example: '"f50694d7ea2bbd82523df198dd67322c"',
  }),
});

const idempotencyHeader = {
  'Idempotency-Key': z.string().min(1).max(255).optional().meta({
    description:
      'On async captures and batches: 1 to 255 visible ASCII characters. The same key and body within 24 hours answer the first 202 again, charging nothing',
  }),
};

const moment = (description: string) =>
  z.string().regex(MOMENT_PATTERN).optional().meta({ description, example: '1767225600000' });
// The query as it travels (text); the handler's usageQuery turns it into numbers.
const usageParameters = z.strictObject({
  from: moment(
    'Start of the window, milliseconds since the epoch: its UTC day is the first one ' +
      `(default: the ${DEFAULT_USAGE_DAYS} days ending with the day of to)`,
  ),
  to: moment('End of the window, milliseconds since the epoch (default: now): its UTC day is the last one'),
});

const OPERATIONS: Record<OperationName, ZodOpenApiOperationObject> = {
  screenshot: {
    tags: ['Screenshots'],
    summary: 'Capture a web page',
    description:
      'Checks, in order: API key (401), rate limit (429), the cache (200 or 304, free), captures running for the ' +
      'account (429), body (400, 413, 415), credits (402), then captures: the page has ' +
      `${NAVIGATION_BUDGET_MS / 1000} s to load, then ${AFTER_LOAD_BUDGET_MS / 1000} s for delay and the image. ` +
      'Only a new capture that was delivered is charged.',
    requestBody: requestBody('ScreenshotRequest', screenshotBody),
    requestParams: { header: conditionalRequestHeader.extend(idempotencyHeader) },
    responses: {
      ...screenshotResponses,
      '409': managementFailure('async: the same Idempotency-Key is still being accepted'),
      '422': managementFailure('async: the same Idempotency-Key with another body'),
    },
  },
  signedScreenshot: {
    tags: ['Screenshots'],
    summary: 'Capture a web page through a signed link (for <img> tags)',
    description:
      'The fields of the screenshot body as query parameters (numbers and booleans as text, arrays and objects as ' +
      `JSON), plus ${KEY_ID_PARAM} and ${SIGNATURE_PARAM}: the lower-case hex HMAC-SHA256, keyed with the key's ` +
      `signing secret, of every other parameter sorted by name, RFC 3986-encoded, as name=value joined with &. ` +
      `cache is true unless cache=false. A link is public: ${FIELDS_REFUSED_ON_SIGNED_LINKS.join(' and ')} are ` +
      "refused (400). Checks, in order: signature and key (401), the cache (200, 302 or 304, free), the key's " +
      'own link budget (429), captures running (429), query (400), credits (402), then captures.',
    requestParams: { query: signedLinkQuery(), header: conditionalRequestHeader },
    responses: {
      ...Object.fromEntries(
        // No body to be too large or of the wrong type, and no async (refused on a link).
        Object.entries(screenshotResponses).filter(([status]) => !['202', '413', '415'].includes(status)),
      ),
      '200': withoutRequiredRateLimit(deliveredResponses['200']),
      '304': withoutRequiredRateLimit(deliveredResponses['304']),
      '302': withoutRequiredRateLimit({
        description: `A cache hit of more than ${SIGNED_LINK_INLINE_HIT_BYTES} bytes: Location is a pre-signed address of the stored file (valid for an hour), kept by caches at most ${REDIRECT_MAX_AGE_SECONDS} s. Free`,
        headers: linkHeaders.omit({ ETag: true }).extend({
          Location: z.string().meta({ description: 'The stored file' }),
          'Cache-Control': z.string().meta({ example: 'public, max-age=300, s-maxage=300' }),
        }),
      }),
    },
  },
  listKeys: {
    tags: ['API keys'],
    summary: "List the account's API keys, masked, newest first",
    responses: { '200': { description: 'The keys', content: json(apiKeyList) }, ...sessionFailures },
  },
  createKey: {
    tags: ['API keys'],
    summary: 'Create an API key',
    requestBody: requestBody('CreateKeyRequest', createKeyRequest),
    responses: {
      '201': { description: 'The new key; its full value is shown only here', content: json(createdApiKey) },
      ...bodyFailures,
      ...sessionFailures,
      '409': managementFailure(`The account already holds the maximum of ${MAX_KEYS_PER_ACCOUNT} keys`),
    },
  },
  updateKey: {
    tags: ['API keys'],
    summary: 'Revoke an API key',
    requestParams: keyIdParameter,
    requestBody: requestBody('UpdateKeyRequest', updateKeyRequest),
    responses: {
      '200': {
        description: 'Revoked (or already active, for isActive true)',
        content: json(keyChangeResult),
      },
      ...bodyFailures,
      ...sessionFailures,
      '404': keyNotFound,
      '409': managementFailure('A revoked key cannot be reactivated'),
    },
  },
  deleteKey: {
    tags: ['API keys'],
    summary: 'Delete an API key permanently',
    requestParams: keyIdParameter,
    responses: {
      '200': {
        description: 'Deleted; the key fails with 401 from the next request',
        content: json(keyChangeResult),
      },
      ...sessionFailures,
      '404': keyNotFound,
    },
  },
  getCredits: {
    tags: ['Credits'],
    summary: "The account's credit balance",
    responses: { '200': { description: 'The balance', content: json(creditBalance) }, ...sessionFailures },
  },
  getUsage: {
    tags: ['Usage'],
    summary: "The account's usage per UTC day and per API key",
    description:
      `The window covers whole UTC days, from the day of \`from\` to the day of \`to\` (both included), at most ` +
      `${MAX_USAGE_DAYS} days. Without \`to\`, now; without \`from\`, the ${DEFAULT_USAGE_DAYS} days ending with the day ` +
      `of \`to\`. Daily totals are kept ${USAGE_RETENTION_DAYS} days; older days answer zeros. Each request counts ` +
      'once its answer has been sent.',
    requestParams: { query: usageParameters },
    responses: {
      '200': { description: 'The usage history', content: json(usageReport) },
      '400': managementFailure(
        'A parameter that is not a whole number of milliseconds, from later than to, a window of more than ' +
          `${MAX_USAGE_DAYS} days, or an unknown parameter; see details`,
      ),
      ...sessionFailures,
    },
  },
  getWebhookSecret: {
    tags: ['Webhooks'],
    summary: "The account's webhook secret, created on first use",
    description:
      'Deliveries carry webhook-id, webhook-timestamp (seconds) and webhook-signature: v1,<base64 HMAC-SHA256 of ' +
      '"{id}.{timestamp}.{body}"> under this secret, by the Standard Webhooks scheme. Stored sealed.',
    responses: {
      '200': { description: 'The current secret', content: json(webhookSecret) },
      ...sessionFailures,
    },
  },
  rotateWebhookSecret: {
    tags: ['Webhooks'],
    summary: 'Replace the webhook secret',
    description:
      'For 24 hours after a rotation every delivery is signed by both the new and the previous secret ' +
      '(two v1 signatures, space-separated), so receivers can switch without missing one; after that, by the new one only.',
    responses: {
      '200': { description: 'The new secret', content: json(webhookSecret) },
      ...sessionFailures,
      '409': managementFailure('Another rotation of the same secret ran at the same moment; try again'),
    },
  },
  mcp: {
    tags: ['Agents'],
    summary: 'The MCP server (Model Context Protocol, Streamable HTTP, stateless, JSON responses)',
    description:
      'JSON-RPC messages of the Model Context Protocol. Tools: take_screenshot, get_page_markdown and get_page_pdf; ' +
      'each call is one screenshot request of the key (rate limit, credits, captures running, usage). A tool that ' +
      'fails answers a result with isError: true and the REST error message. Send Accept: application/json, ' +
      'text/event-stream, as MCP clients do.',
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 message' } } },
    },
    responses: {
      '200': {
        description: 'The JSON-RPC answer',
        content: {
          'application/json': { schema: { type: 'object', description: 'A JSON-RPC 2.0 message' } },
        },
      },
      '202': { description: 'A notification, accepted; no body' },
      '400': jsonRpcFailure('Not JSON (-32700), or a JSON-RPC batch (-32600): send one message per request'),
      '401': { description: 'API key missing, unknown or revoked', content: json(screenshotError) },
      '406': jsonRpcFailure('Accept does not name both application/json and text/event-stream'),
      '413': screenshotStyleFailure(`Body larger than ${MAX_HTML_BODY_BYTES} bytes`),
      '415': jsonRpcFailure('Content-Type is not application/json'),
      ...serverFailures(screenshotStyleFailure),
    },
  },
  getJob: {
    tags: ['Jobs'],
    summary: 'An async capture: its status and, once succeeded, its result',
    description: 'The API key of the account that submitted it. Jobs are kept 7 days.',
    requestParams: jobIdParameter,
    responses: {
      '200': { description: 'The job', content: json(job) },
      '401': { description: 'API key missing, unknown or revoked', content: json(managementError) },
      '404': managementFailure("No such job, or another account's (same answer either way)"),
      ...serverFailures(managementFailure),
    },
  },
  listJobs: {
    tags: ['Jobs'],
    summary: "The account's latest jobs (the dashboard's jobs view)",
    responses: {
      '200': { description: 'The latest 50 jobs, newest first', content: json(jobList) },
      ...sessionFailures,
    },
  },
  createBatch: {
    tags: ['Jobs'],
    summary: 'Submit 1 to 100 captures at once, all or nothing',
    description:
      'Each body is a screenshot body without async, webhookUrl or response. Every one is validated (details name ' +
      'requests[i].field), the rate window must have room for all, and the balance must cover their sum. ' +
      'Idempotency-Key makes a retry safe.',
    requestParams: { header: z.object(idempotencyHeader) },
    requestBody: requestBody(
      'BatchRequest',
      z.object({
        requests: z.array(batchRequestBody).min(1).max(MAX_BATCH_SIZE),
        webhookUrl: z.string().optional().meta({ description: 'Where batch.completed is sent' }),
      }),
    ),
    responses: {
      '202': {
        description: 'Accepted: one job per capture',
        headers: acceptedHeaders,
        content: json(acceptedBatch),
      },
      '400': screenshotFailure(
        'Invalid body or a URL that is not allowed; see details',
        screenshotValidationError,
      ),
      '401': { description: 'API key missing, unknown or revoked', content: json(screenshotError) },
      '402': screenshotFailure(
        'Not enough credits for all of them (required: the sum)',
        insufficientCreditsError,
      ),
      '409': managementFailure('The same Idempotency-Key is still being accepted'),
      '413': screenshotStyleFailure(`Body larger than ${MAX_BATCH_BODY_BYTES / 1024 / 1024} MiB`),
      '415': screenshotStyleFailure('Content-Type is not application/json'),
      '422': managementFailure('The same Idempotency-Key with another body'),
      '429': {
        ...screenshotFailure('The rate window has no room for all of them', rateLimitedError),
        headers: rateLimitedHeaders,
      },
      ...serverFailures(screenshotStyleFailure),
    },
  },
  getBatch: {
    tags: ['Jobs'],
    summary: 'A batch: counts and every job',
    requestParams: jobIdParameter,
    responses: {
      '200': { description: 'The batch', content: json(batch) },
      '401': { description: 'API key missing, unknown or revoked', content: json(managementError) },
      '404': managementFailure("No such batch, or another account's (same answer either way)"),
      ...serverFailures(managementFailure),
    },
  },
  getOpenApi: {
    tags: ['Meta'],
    summary: 'This API description (OpenAPI 3.1)',
    responses: {
      '200': {
        description: 'The OpenAPI document',
        content: {
          'application/json': { schema: { type: 'object', description: 'An OpenAPI 3.1 document' } },
        },
      },
    },
  },
};

/**
 * The signed link's query: keyId, signature and url, and every other field of the screenshot body as text, taken
 * from the schema itself so a new field is described here too.
 */
function signedLinkQuery() {
  const fields = Object.keys(screenshotRequest.shape).filter(
    (name) => name !== 'url' && !FIELDS_REFUSED_ON_SIGNED_LINKS.includes(name),
  ) as (keyof ScreenshotRequest)[];
  return z.object({
    url: z.string().meta({ description: SCREENSHOT_FIELD_DESCRIPTIONS.url }),
    ...Object.fromEntries(
      fields.map((name) => [
        name,
        z
          .string()
          .optional()
          .meta({ description: `As the body's ${name}: ${SCREENSHOT_FIELD_DESCRIPTIONS[name]}` }),
      ]),
    ),
    [KEY_ID_PARAM]: z
      .string()
      .meta({ description: 'Id of the API key whose signing secret signed the link' }),
    [SIGNATURE_PARAM]: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/)
      .meta({ description: 'HMAC-SHA256 of the canonical query, hex (docs/api.md, "Signed links")' }),
  });
}

const SECURITY: Record<RouteDefinition['auth'], oas31.SecurityRequirementObject[]> = {
  apiKey: [{ apiKey: [] }],
  signature: [{ signedLink: [] }],
  session: [{ sessionToken: [] }],
  none: [],
};

function paths(): ZodOpenApiPathsObject {
  const result: ZodOpenApiPathsObject = {};
  for (const route of ROUTES) {
    const item = result[route.path] ?? {};
    item[route.method.toLowerCase() as Lowercase<RouteDefinition['method']>] = {
      operationId: operationOf(route),
      security: SECURITY[route.auth],
      ...OPERATIONS[operationOf(route)],
    };
    result[route.path] = item;
  }
  return result;
}

/** zod's `.int()` renders as bounded by ±(2^53 - 1); that says nothing to a reader, so it is left out. */
const dropSafeIntegerBounds: NonNullable<CreateDocumentOptions['override']> = ({ jsonSchema }) => {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
};

// zod-openapi types what it builds as OpenAPI 3.2, a superset of the 3.1.0 this document declares and keeps to.
let cached: oas32.OpenAPIObject | undefined;

/** The document; built once per process (it depends on code only, not on configuration). */
export function openApiDocument(): oas32.OpenAPIObject {
  cached ??= createDocument(
    {
      openapi: '3.1.0',
      info: {
        title: 'Screenshot API',
        version: '1.0.0',
        description:
          'Captures web pages as PNG, JPEG or WebP. Screenshots authenticate with an API key; key management, the ' +
          'credit balance, the usage history and the webhook secret with a session token from the identity provider. All timestamps are milliseconds since ' +
          'the epoch.',
      },
      // Relative to where this document is served (<base>/api/openapi.json), so it is right locally, on the API
      // Gateway stage URL and behind the dashboard's CloudFront alike.
      servers: [{ url: '..', description: 'The base URL this document was fetched from' }],
      tags: [
        { name: 'Screenshots' },
        { name: 'API keys' },
        { name: 'Credits' },
        { name: 'Usage' },
        { name: 'Webhooks', description: 'The secret that signs webhook deliveries; session token' },
        { name: 'Meta', description: 'Public, no authentication' },
      ],
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'sk_live_ followed by 40 hex characters',
            description: 'An API key from POST /api/keys: Authorization: Bearer sk_live_...',
          },
          signedLink: {
            type: 'apiKey',
            in: 'query',
            name: SIGNATURE_PARAM,
            description:
              'A signed link: keyId names the API key, signature is the HMAC-SHA256 of the other parameters under ' +
              "the key's signing secret (shown once, by POST /api/keys)",
          },
          sessionToken: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              'An access token of the identity provider (Cognito deployed, the local provider locally)',
          },
        },
      },
      paths: paths(),
    },
    { override: dropSafeIntegerBounds },
  );
  return cached;
}
