import { describe, expect, it } from 'vitest';
import { routeEvent } from '../../local/apiGatewayEvent';
import { invocationContext } from '../../local/invocationContext';
import { withinMetadataBudget } from '../../shared/capture/metadataBudget';
import { MAX_METADATA_PROPERTIES, MAX_METADATA_TEXT } from '../../shared/capture/renderer';
import { bufferedHandler } from '../../shared/http/adapter/apiGateway';
import { jobRoutes, LATEST_JOBS } from '../../shared/http/jobRoutes';
import { type Batch, type Job, newBatchId, newJobId } from '../../shared/jobs/job';
import type { JobStore } from '../../shared/jobs/jobStore';
import { MAX_BATCH_SIZE } from '../../shared/jobs/submitBatch';
import { fakeSessions } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * A view of many jobs (a batch of 100, the list of the latest 50) through the Lambda adapter, each job as heavy as a
 * hostile page and customer can make it: the buffered answer Lambda returns stays within its 6 MB.
 */

/** Lambda's limit for a synchronous invocation's answer (API Gateway's buffered routes). */
const LAMBDA_ANSWER_BYTES = 6 * 1024 * 1024;
/** The character that weighs most once the runtime escapes the JSON body again: `"` becomes `\\\"`. */
const heavy = (length: number) => '"'.repeat(length);
const heavyProperties = Object.fromEntries(
  Array.from({ length: MAX_METADATA_PROPERTIES }, (_, i) => [`p${i}${heavy(100)}`, heavy(MAX_METADATA_TEXT)]),
);
/** The heaviest metadata a page can leave after the budget. */
const heaviestMetadata = withinMetadataBudget({
  title: heavy(MAX_METADATA_TEXT),
  description: heavy(MAX_METADATA_TEXT),
  lang: heavy(MAX_METADATA_TEXT),
  canonicalUrl: heavy(MAX_METADATA_TEXT),
  finalUrl: `https://example.com/?${heavy(5000)}`,
  statusCode: 200,
  favicon: heavy(MAX_METADATA_TEXT),
  openGraph: heavyProperties,
  twitter: heavyProperties,
});

const NOW = Date.parse('2026-11-26T12:00:00Z');

function heaviestJob(accountId: string, index: number): Job {
  return {
    id: newJobId(NOW + index),
    accountId,
    keyId: 'key',
    status: 'succeeded',
    createdAt: NOW,
    startedAt: NOW,
    finishedAt: NOW,
    cost: 2,
    result: {
      key: `captures/${accountId}/${index}`,
      contentType: 'application/pdf',
      width: null,
      height: null,
      bytes: 1,
      etag: `"${'e'.repeat(32)}"`,
      creditsCharged: 2,
      metadataStored: true,
    },
    error: null,
    // A webhook URL at its 2,048-character bound.
    webhook: { url: `https://hooks.example/${heavy(2000)}`, status: 'failed', attempts: 99, lastStatus: 500 },
    runs: 1,
  };
}

async function views(accountId: string) {
  const jobs = Array.from({ length: MAX_BATCH_SIZE }, (_, i) => heaviestJob(accountId, i));
  const batch: Batch = {
    id: newBatchId(NOW),
    accountId,
    status: 'completed',
    createdAt: NOW,
    finishedAt: NOW,
    jobIds: jobs.map((job) => job.id),
    finished: jobs.length,
    webhook: { url: `https://hooks.example/${heavy(2000)}`, status: 'failed', attempts: 99, lastStatus: 500 },
  };
  // Only what the view routes read of the table.
  const store: Pick<JobStore, 'getBatch' | 'getMany' | 'latest'> = {
    getBatch: async () => batch,
    getMany: async () => jobs,
    latest: async (_, limit) => jobs.slice(0, limit),
  };
  const service = memoryScreenshotService({ now: () => NOW });
  const { key } = await service.addKey(accountId, NOW);
  const routes = jobRoutes({
    keys: service.keys,
    jobs: store as JobStore,
    sessions: fakeSessions,
    // A stored-object link as long as S3 signs one with a session token.
    images: {
      signedUrl: async (objectKey) => `https://bucket.s3.amazonaws.com/${objectKey}?${'x'.repeat(1800)}`,
      pageMetadata: async () => heaviestMetadata,
    },
    now: () => NOW,
  });
  return { key, batch, routes };
}

describe('views of many jobs, each at its heaviest', () => {
  it('fit what Lambda can answer: a batch of 100 and the list of the latest 50', async () => {
    const { key, batch, routes } = await views('heavy-account');
    const getBatch = await bufferedHandler(routes.getBatch, { errors: 'management' })(
      routeEvent('getBatch', { bearer: key, pathParameters: { id: batch.id } }),
      invocationContext(),
    );
    expect(getBatch.statusCode).toBe(200);
    const body = JSON.parse(getBatch.body);
    expect(body.jobs).toHaveLength(MAX_BATCH_SIZE);
    expect(body.jobs[0].result.metadata).toEqual(heaviestMetadata);
    expect(Buffer.byteLength(JSON.stringify(getBatch))).toBeLessThanOrEqual(LAMBDA_ANSWER_BYTES);

    const listJobs = await bufferedHandler(routes.listJobs, { errors: 'management' })(
      routeEvent('listJobs', { bearer: 'session:heavy-account' }),
      invocationContext(),
    );
    expect(JSON.parse(listJobs.body).jobs).toHaveLength(LATEST_JOBS);
    expect(Buffer.byteLength(JSON.stringify(listJobs))).toBeLessThanOrEqual(LAMBDA_ANSWER_BYTES);
  });
});
