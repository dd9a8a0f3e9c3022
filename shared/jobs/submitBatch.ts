import { z } from 'zod';
import type { AdmissionRound } from '../accounts/admissionRound';
import type { RateLimitDecision } from '../accounts/rateLimiter';
import { giveCreditsBack, type RefundDeps } from '../accounts/refund';
import { assertAllowedAt, type UrlPolicy } from '../egress/urlPolicy';
import { type ValidationDetail, ValidationError } from '../errors';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import { authenticateApiKey } from '../screenshot/apiKeyAuth';
import { screenshotBodyBound } from '../screenshot/bodySize';
import { captureSpecOf } from '../screenshot/captureSpec';
import { creditCost } from '../screenshot/cost';
import { givenBack } from '../screenshot/queuedCaptures';
import { queuedIssues, screenshotRequest, webhookUrlField } from '../screenshot/schema';
import { detailsFromZod } from '../validation';
import type { Batch, Job } from './job';
import { type AcceptJobs, BatchPartlyAccepted } from './jobIntake';

/** The most captures one batch holds (docs/api.md, "Batches"). */
export const MAX_BATCH_SIZE = 100;
/** Fields a batch's captures may not carry: each is a job of the batch, answered through it. */
export const FIELDS_REFUSED_IN_BATCH = ['async', 'webhookUrl', 'response'] as const;

const batchBody = z.strictObject({
  requests: z.array(z.unknown()).min(1).max(MAX_BATCH_SIZE),
  // The same rules as an async capture's (red team: a batch's took a user name and password, kept in clear).
  webhookUrl: webhookUrlField.optional(),
});

export interface SubmitBatchDeps extends RefundDeps {
  keys: KeyStore;
  admissions: AdmissionRound;
  urlPolicy: UrlPolicy;
  acceptJobs: AcceptJobs;
}

export type BatchOutcome =
  | { ok: true; batch: Batch; jobs: Job[]; rateLimit: RateLimitDecision }
  | { ok: false; error: unknown; rateLimit?: RateLimitDecision };

/**
 * POST /api/batches, all or nothing, in the order of checks of one capture: the API key (401), room in the rate
 * window for every capture (429), every body valid and every URL allowed (400, each problem named by its place,
 * `requests[3].width`), the balance covering the sum (402); then one job per capture, queued. No slot is taken (each
 * job takes one when it runs). The URLs' hosts are looked up once the window let the batch in, and the credits are
 * reserved after them: held while the hosts were looked up, they made the account's own captures meanwhile fail 402
 * with a balance that covered them, for a batch then refused 400 (red team, round 22).
 */
export function submitBatch(deps: SubmitBatchDeps) {
  return async (apiKey: string | undefined, body: () => unknown): Promise<BatchOutcome> => {
    let identity: KeyIdentity;
    try {
      identity = await authenticateApiKey(apiKey, deps.keys);
    } catch (error) {
      return { ok: false, error };
    }
    let rateLimit: RateLimitDecision | undefined;
    try {
      // The fields first, without a lookup: the window (step 2) comes before the URLs' hosts (step 3), so a batch the
      // window refuses has none of its 101 names looked up (red team).
      let parsed: ParsedBatch | undefined;
      let invalid: unknown;
      try {
        parsed = parseBatch(body());
      } catch (error) {
        invalid = error;
      }
      const verdict = await deps.admissions.admit({
        identity,
        budget: 'api',
        now: deps.now(),
        slot: 'none',
        // Every capture the body holds counts, whatever else is wrong with it.
        requests: parsed?.requestCount ?? requestCount(body),
      });
      const admittedRate = verdict.rateLimit;
      rateLimit = admittedRate;
      if (!verdict.admitted) throw verdict.refusal;
      if (!parsed) throw invalid;
      const details = [...parsed.details, ...(await urlProblems(parsed, deps.urlPolicy))];
      if (details.length > 0) throw invalidBatch(details);
      const total = parsed.captures.reduce((sum, capture) => sum + capture.cost, 0);
      const creditEpoch = await deps.credits.reserve(identity.accountId, total);
      try {
        const captures = parsed.captures.map((capture) => ({ ...capture, creditEpoch }));
        const accepted = await deps.acceptJobs(identity, captures, {
          webhookUrl: parsed.webhookUrl,
          batch: true,
        });
        return { ok: true, rateLimit: admittedRate, jobs: accepted.jobs, batch: accepted.batch as Batch };
      } catch (error) {
        const back = givenBack(error, total);
        if (back.credits > 0) await giveCreditsBack(deps, identity.accountId, back.credits, creditEpoch);
        if (error instanceof BatchPartlyAccepted)
          return { ok: true, rateLimit: admittedRate, jobs: error.jobs, batch: error.batch };
        throw back.error;
      }
    } catch (error) {
      return rateLimit ? { ok: false, rateLimit, error } : { ok: false, error };
    }
  };
}

/** How many captures a body that failed validation holds, for the window: 1 to MAX_BATCH_SIZE. */
function requestCount(body: () => unknown): number {
  try {
    const requests = (body() as { requests?: unknown } | null)?.requests;
    return Array.isArray(requests) ? Math.min(Math.max(requests.length, 1), MAX_BATCH_SIZE) : 1;
  } catch {
    return 1;
  }
}
/** The problems of a batch's fields, without a lookup: what its 400 would list (the URLs' addresses aside). */
export function batchFieldProblems(value: unknown): ValidationDetail[] {
  try {
    return parseBatch(value).details;
  } catch (error) {
    if (error instanceof ValidationError) return error.details;
    throw error;
  }
}

/** A batch's request as its job runs it, answered as JSON; one that names its own `response` is refused above. */
function asJsonAnswered(request: unknown): unknown {
  return request !== null &&
    typeof request === 'object' &&
    !Array.isArray(request) &&
    !Object.hasOwn(request, 'response')
    ? { ...request, response: 'json' }
    : request;
}

/** A batch read without a lookup: its captures, the problems of its fields, and the URLs still to be checked. */
interface ParsedBatch {
  requestCount: number;
  captures: { request: Record<string, unknown>; cost: number }[];
  webhookUrl?: string;
  details: ValidationDetail[];
  urls: { url: string; path: (string | number)[] }[];
}

/**
 * Every problem of the batch's fields at once, each named by its place in the body. Each request is held to the bound
 * of one capture's body (96 KiB, or with an `html` document 1 MiB + 96 KiB): within the batch's 1 MiB, one request
 * of every field at its bound sealed its headers and cookies into a job item over DynamoDB's 400 KB, a 500 (red team).
 */
function parseBatch(value: unknown): ParsedBatch {
  const parsed = batchBody.safeParse(value);
  if (!parsed.success) throw new ValidationError(detailsFromZod(parsed.error), 'Invalid request body');
  const details: ValidationDetail[] = [];
  const urls: ParsedBatch['urls'] = [];
  const captures = parsed.data.requests.map((request, index) => {
    const at = (path: (string | number)[]) => ['requests', index, ...path];
    if (request !== null && typeof request === 'object') {
      for (const name of FIELDS_REFUSED_IN_BATCH)
        if (Object.hasOwn(request, name))
          details.push({
            code: 'not_allowed_in_batch',
            path: at([name]),
            message: `${name} is not allowed in a batch's requests`,
          });
    }
    // Checked as it runs: a job's result is the `response: "json"` body, which `metadata` needs (red team, round 24:
    // a batch could never ask for it, since `response` is refused here).
    const fields = screenshotRequest.safeParse(asJsonAnswered(request));
    if (!fields.success) {
      details.push(...detailsFromZod(fields.error).map((detail) => ({ ...detail, path: at(detail.path) })));
      return undefined;
    }
    // Measured as sent (not with the defaults its fields filled in: red team), once they hold: a request nested deeper
    // than JSON.stringify recurses is refused above (red team).
    const bound = screenshotBodyBound(request);
    if (Buffer.byteLength(JSON.stringify(request)) > bound) {
      details.push({
        code: 'too_big',
        path: at([]),
        message: `Each request may be at most ${bound} bytes as JSON, as the body of one capture`,
      });
      return undefined;
    }
    for (const issue of queuedIssues(fields.data))
      details.push({ code: 'custom', path: at(issue.path), message: issue.message });
    if (fields.data.url !== undefined) urls.push({ url: fields.data.url, path: at(['url']) });
    return { request: fields.data, cost: creditCost(captureSpecOf(fields.data)) };
  });
  const { webhookUrl } = parsed.data;
  if (webhookUrl !== undefined) urls.push({ url: webhookUrl, path: ['webhookUrl'] });
  return {
    requestCount: parsed.data.requests.length,
    captures: captures.filter((capture) => capture !== undefined),
    ...(webhookUrl === undefined ? {} : { webhookUrl }),
    details,
    urls,
  };
}

/** The problems of the batch's URLs whose hosts may not be reached, each named by its place. */
async function urlProblems({ urls }: ParsedBatch, urlPolicy: UrlPolicy): Promise<ValidationDetail[]> {
  const details: ValidationDetail[] = [];
  await Promise.all(
    urls.map(({ url, path }) =>
      assertAllowedAt(urlPolicy, url, path).catch((error) => collect(error, details)),
    ),
  );
  return details;
}

function invalidBatch(details: ValidationDetail[]): ValidationError {
  return new ValidationError(
    details.map((detail) => ({ ...detail, field: fieldName(detail.path) })),
    'Invalid request body',
  );
}

/** A detail's path as one name: `["requests", 3, "width"]` is `requests[3].width`. */
export function fieldName(path: readonly (string | number)[]): string {
  return path
    .map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('');
}

function collect(error: unknown, details: ValidationDetail[]): void {
  if (!(error instanceof ValidationError)) throw error;
  details.push(...error.details);
}
