import type { SessionVerifier } from '../auth/sessionVerifier';
import { NotFoundError } from '../errors';
import { BATCH_ID_PATTERN, JOB_ID_PATTERN } from '../jobs/job';
import type { JobStore } from '../jobs/jobStore';
import { batchView, type JobViewImages, jobView } from '../jobs/jobView';
import { batchFieldProblems, type submitBatch } from '../jobs/submitBatch';
import type { KeyStore } from '../keys/keyStore';
import { authenticateApiKey } from '../screenshot/apiKeyAuth';
import { errorResponse } from './errorAnswer';
import { withIdempotencyKeyChecked } from './idempotencyKey';
import { bearerCredential, jsonBody } from './request';
import { rateLimitHeaders } from './screenshotRoute';
import { type HttpRoute, jsonResponse } from './types';

/** The latest jobs GET /api/jobs lists. */
export const LATEST_JOBS = 50;
/** A batch body: up to 100 screenshot bodies, each held to one capture's body bound (shared/jobs/submitBatch.ts). */
export const MAX_BATCH_BODY_BYTES = 1024 * 1024;

export interface JobRouteDeps {
  keys: KeyStore;
  jobs: JobStore;
  images: JobViewImages;
  sessions: SessionVerifier;
  /** Only the function that accepts batches has the queue. */
  submitBatch?: ReturnType<typeof submitBatch>;
  now?: () => number;
}

export type JobRouteName = 'getJob' | 'listJobs' | 'createBatch' | 'getBatch';

/**
 * The job routes (docs/api.md, "Async captures" and "Batches"). A job or batch of another account is answered
 * exactly as one that does not exist: 404.
 */
export function jobRoutes(deps: JobRouteDeps): Record<JobRouteName, HttpRoute> {
  const now = deps.now ?? Date.now;
  const accountOf = async (request: Parameters<HttpRoute>[0]) =>
    (await authenticateApiKey(bearerCredential(request), deps.keys)).accountId;
  return {
    async getJob(request) {
      const accountId = await accountOf(request);
      const id = request.pathParameters.id ?? '';
      const job = JOB_ID_PATTERN.test(id) ? await deps.jobs.get(accountId, id) : undefined;
      if (!job) throw new NotFoundError('Job not found');
      return jsonResponse(200, await jobView(job, deps.images, now()));
    },

    async listJobs(request) {
      const accountId = await deps.sessions.accountIdOf(bearerCredential(request));
      const jobs = await deps.jobs.latest(accountId, LATEST_JOBS);
      return jsonResponse(200, {
        jobs: await Promise.all(jobs.map((job) => jobView(job, deps.images, now()))),
      });
    },

    async createBatch(request) {
      if (!deps.submitBatch) throw new Error('Batches are not wired here: no job queue');
      const outcome = await deps.submitBatch(
        bearerCredential(request),
        withIdempotencyKeyChecked(request, jsonBody(request, MAX_BATCH_BODY_BYTES), batchFieldProblems),
      );
      const headers = outcome.rateLimit ? rateLimitHeaders(outcome.rateLimit) : {};
      if (!outcome.ok) return errorResponse(outcome.error, 'screenshot', headers);
      const { batch, jobs } = outcome;
      const statusUrl = `${request.baseUrl}/api/batches/${batch.id}`;
      return jsonResponse(
        202,
        {
          id: batch.id,
          status: batch.status,
          createdAt: batch.createdAt,
          statusUrl,
          jobs: jobs.map((job) => ({ id: job.id, status: job.status })),
        },
        { ...headers, Location: statusUrl },
      );
    },

    async getBatch(request) {
      const accountId = await accountOf(request);
      const id = request.pathParameters.id ?? '';
      const batch = BATCH_ID_PATTERN.test(id) ? await deps.jobs.getBatch(accountId, id) : undefined;
      if (!batch) throw new NotFoundError('Batch not found');
      const jobs = await deps.jobs.getMany(accountId, batch.jobIds);
      return jsonResponse(200, await batchView(batch, jobs, deps.images, now()));
    },
  };
}
