import { z } from 'zod';
import type { CreditLedger } from '../accounts/creditLedger';
import type { RateLimitDecision, RateLimiter } from '../accounts/rateLimiter';
import { giveCreditsBack, type RefundDeps } from '../accounts/refund';
import { assertAllowedAt, type UrlPolicy } from '../egress/urlPolicy';
import { RateLimitedError, type ValidationDetail, ValidationError } from '../errors';
import { detailsFromZod } from '../http/request';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import { authenticateApiKey } from '../screenshot/apiKeyAuth';
import { captureSpecOf } from '../screenshot/captureSpec';
import { creditCost } from '../screenshot/cost';
import { MAX_URL_LENGTH, screenshotRequest } from '../screenshot/schema';
import type { Batch, Job } from './job';
import type { AcceptJobs } from './jobIntake';

/** The most captures one batch holds (docs/api.md, "Batches"). */
export const MAX_BATCH_SIZE = 100;
/** Fields a batch's captures may not carry: each is a job of the batch, answered through it. */
const FIELDS_REFUSED_IN_BATCH = ['async', 'webhookUrl', 'response'] as const;

const batchBody = z.strictObject({
  requests: z.array(z.unknown()).min(1).max(MAX_BATCH_SIZE),
  webhookUrl: z
    .string()
    .max(MAX_URL_LENGTH, `webhookUrl must be at most ${MAX_URL_LENGTH} characters`)
    .pipe(z.url({ protocol: /^https?$/, message: 'webhookUrl must be a valid http:// or https:// URL' }))
    .optional(),
});

export interface SubmitBatchDeps extends RefundDeps {
  keys: KeyStore;
  rateLimiter: RateLimiter;
  credits: CreditLedger;
  urlPolicy: UrlPolicy;
  acceptJobs: AcceptJobs;
}

export type BatchOutcome =
  | { ok: true; batch: Batch; jobs: Job[]; rateLimit: RateLimitDecision }
  | { ok: false; error: unknown; rateLimit?: RateLimitDecision };

/**
 * POST /api/batches, all or nothing, in the order of checks of one capture: the API key (401), room in the rate
 * window for every capture (429), every body valid and every URL allowed (400, each problem named by its place,
 * `requests[3].width`), the balance covering the sum (402); then one job per capture, queued.
 */
export function submitBatch(deps: SubmitBatchDeps) {
  return async (apiKey: string | undefined, body: () => unknown): Promise<BatchOutcome> => {
    let identity: KeyIdentity;
    try {
      identity = await authenticateApiKey(apiKey, deps.keys);
    } catch (error) {
      return { ok: false, error };
    }
    const { accountId } = identity;
    // How many captures the window is asked for: as many as the body holds, whatever else is wrong with it.
    const read = (() => {
      try {
        return { value: body() };
      } catch (error) {
        return { error };
      }
    })();
    const requests = 'value' in read ? (read.value as { requests?: unknown } | null)?.requests : undefined;
    const count = Array.isArray(requests) ? Math.min(Math.max(requests.length, 1), MAX_BATCH_SIZE) : 1;
    const rateLimit = await deps.rateLimiter.hit(accountId, deps.now(), count);
    if (!rateLimit.allowed)
      return { ok: false, rateLimit, error: new RateLimitedError(rateLimit.limit, rateLimit.reset) };
    try {
      if ('error' in read) throw read.error;
      const { captures, webhookUrl } = await validBatch(read.value, deps.urlPolicy);
      const total = captures.reduce((sum, capture) => sum + capture.cost, 0);
      await deps.credits.reserve(accountId, total);
      try {
        const accepted = await deps.acceptJobs(identity, captures, { webhookUrl, batch: true });
        await deps.keys
          .touchLastUsed(identity, deps.now())
          .catch((error) => logger.warn('lastUsed not recorded', { error }));
        return { ok: true, rateLimit, jobs: accepted.jobs, batch: accepted.batch as Batch };
      } catch (error) {
        await giveCreditsBack(deps, accountId, total);
        throw error;
      }
    } catch (error) {
      return { ok: false, rateLimit, error };
    }
  };
}

/** Every problem of the batch at once, each named by its place in the body. */
async function validBatch(value: unknown, urlPolicy: UrlPolicy) {
  const parsed = batchBody.safeParse(value);
  if (!parsed.success) throw new ValidationError(detailsFromZod(parsed.error), 'Invalid request body');
  const details: ValidationDetail[] = [];
  const checks: Promise<void>[] = [];
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
    const fields = screenshotRequest.safeParse(request);
    if (!fields.success) {
      details.push(...detailsFromZod(fields.error).map((detail) => ({ ...detail, path: at(detail.path) })));
      return undefined;
    }
    const { url } = fields.data;
    if (url !== undefined)
      checks.push(assertAllowedAt(urlPolicy, url, at(['url'])).catch((error) => collect(error, details)));
    return { request: { ...fields.data, response: 'json' }, cost: creditCost(captureSpecOf(fields.data)) };
  });
  const { webhookUrl } = parsed.data;
  if (webhookUrl !== undefined)
    checks.push(
      assertAllowedAt(urlPolicy, webhookUrl, ['webhookUrl']).catch((error) => collect(error, details)),
    );
  await Promise.all(checks);
  if (details.length > 0) throw new ValidationError(details, 'Invalid request body');
  return { captures: captures.filter((capture) => capture !== undefined), webhookUrl };
}

function collect(error: unknown, details: ValidationDetail[]): void {
  if (!(error instanceof ValidationError)) throw error;
  details.push(...error.details);
}
