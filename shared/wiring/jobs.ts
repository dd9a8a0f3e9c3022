import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Jwks } from 'aws-jwt-verify/jwk';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createSessionVerifier } from '../auth/sessionVerifier';
import type { Renderer } from '../capture/renderer';
import { readServiceConfig, readSessionConfig } from '../config';
import { createUrlPolicy } from '../egress/urlPolicy';
import { idempotencyRecordPrefix, idempotentRoute } from '../http/idempotentRoute';
import { jobRoutes } from '../http/jobRoutes';
import { jobEnded } from '../jobs/jobEvents';
import { jobIntake } from '../jobs/jobIntake';
import type { JobQueue } from '../jobs/jobQueue';
import { jobWorker } from '../jobs/jobWorker';
import { runJob } from '../jobs/runJob';
import { sendWebhook } from '../jobs/sendWebhook';
import { submitBatch } from '../jobs/submitBatch';
import { sweepStrandedJobs } from '../jobs/sweepStrandedJobs';
import { PowertoolsServiceMetrics } from '../metrics/powertoolsMetrics';
import { type Admission, IMMEDIATE_ADMISSION } from '../screenshot/admission';
import { idempotencyRecords } from '../store/idempotencyRecords';
import { createSqsClient, SqsJobQueue } from '../store/sqsJobQueue';
import { CAPTURE_BUDGETS, type CaptureBudgets } from '../timing';
import { DeferredUsageRecorder } from '../usage/usageRecorder';
import { createDeliveryPorts } from './delivery';
import { captureBudgetOf } from './screenshot';
import { createStores } from './stores';
import { createWebhookDeliveryDeps, createWebhookSecrets } from './webhooks';

/**
 * The job queue JOB_QUEUE_URL names, with webhook attempts on WEBHOOK_QUEUE_URL where it is set (the worker, which
 * alone sends them); `client` is given the local SQS API's endpoint locally.
 */
export function createJobQueue(env: NodeJS.ProcessEnv, client = createSqsClient()): JobQueue {
  const url = env.JOB_QUEUE_URL;
  if (!url) throw new Error('JOB_QUEUE_URL must be set');
  return new SqsJobQueue(client, url, env.WEBHOOK_QUEUE_URL || url);
}

export interface JobWorkerOptions {
  /** Who captures: the renderer function, invoked as the screenshot front invokes it. */
  renderer: Renderer;
  queue: JobQueue;
  /** The local capture queue; none deployed. */
  admission?: Admission;
  budgets?: CaptureBudgets;
  /** The webhook backoff; shortened only by tests. */
  webhookRetryDelaySeconds?: (attempt: number) => number | undefined;
}

export type JobWorkerHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/**
 * The queue worker: SQS batches in, each record through the use case it names, failures reported per record
 * (partial batch responses) so only they come back. It holds no browser: captures are asked of the renderer.
 */
export function createJobWorker(client: DynamoDBClient, env: NodeJS.ProcessEnv, options: JobWorkerOptions) {
  const config = readServiceConfig(env);
  const stores = createStores(client, config);
  const { images, cipher } = createDeliveryPorts(env);
  const usage = new DeferredUsageRecorder(stores.usageStore);
  const metrics = new PowertoolsServiceMetrics(env);
  const now = () => Date.now();
  const record = jobWorker({
    runJob: runJob({
      ...stores,
      // The authentication item decides, as for a Bearer key or a signed link (not the listing's copy of the state).
      keyActive: async (accountId, keyId) =>
        (await stores.keys.findById(accountId, keyId))?.isActive === true,
      queue: options.queue,
      renderer: options.renderer,
      urlPolicy: createUrlPolicy({ allowPrivateHosts: config.allowPrivateHosts }),
      images,
      usage,
      metrics,
      admission: options.admission ?? IMMEDIATE_ADMISSION,
      captureBudgetMs: captureBudgetOf(options.budgets ?? CAPTURE_BUDGETS),
      cipher,
      ended: jobEnded({ jobs: stores.jobs, queue: options.queue, now }),
      now,
    }),
    sendWebhook: sendWebhook({
      jobs: stores.jobs,
      queue: options.queue,
      images,
      secrets: createWebhookSecrets(client, env),
      delivery: createWebhookDeliveryDeps(env),
      now,
      ...(options.webhookRetryDelaySeconds ? { retryDelaySeconds: options.webhookRetryDelaySeconds } : {}),
    }),
  });
  const handler: JobWorkerHandler = async (event, context) => {
    try {
      return await processPartialResponse(event, record, new BatchProcessor(EventType.SQS), {
        ...(context ? { context } : {}),
      });
    } finally {
      metrics.flush();
      await Promise.all([usage.flush(), options.renderer.settle()]);
    }
  };
  return {
    handler,
    async close() {
      await usage.flush();
    },
  };
}

/**
 * The sweep of stranded jobs (sweepStrandedJobs.ts): the scheduled function deployed, an interval under `npm start`.
 * It reads the queued-jobs index, moves sweep times and sends messages; nothing else.
 */
export function createJobSweeper(client: DynamoDBClient, env: NodeJS.ProcessEnv, queue: JobQueue) {
  const { jobs } = createStores(client, readServiceConfig(env));
  return sweepStrandedJobs({ jobs, queue, now: () => Date.now() });
}

/** The job routes over the stores: GET /api/jobs/{id}, GET /api/jobs, POST /api/batches, GET /api/batches/{id}. */
export function createJobRoutes(
  client: DynamoDBClient,
  env: NodeJS.ProcessEnv,
  options: { queue?: JobQueue; jwks?: Jwks; mentionAllowPrivateHosts?: boolean } = {},
) {
  const config = readServiceConfig(env);
  const stores = createStores(client, config);
  const now = () => Date.now();
  const { images, cipher } = createDeliveryPorts(env);
  const routes = jobRoutes({
    ...stores,
    images,
    sessions: createSessionVerifier(readSessionConfig(env), options.jwks),
    ...(options.queue
      ? {
          submitBatch: submitBatch({
            ...stores,
            urlPolicy: createUrlPolicy({
              allowPrivateHosts: config.allowPrivateHosts,
              mentionAllowPrivateHosts: options.mentionAllowPrivateHosts,
            }),
            acceptJobs: jobIntake({ jobs: stores.jobs, queue: options.queue, cipher, now }),
            metrics: new PowertoolsServiceMetrics(env),
            now,
          }),
        }
      : {}),
  });
  return {
    ...routes,
    createBatch: idempotentRoute(routes.createBatch, {
      keys: stores.keys,
      records: idempotencyRecords(client, config.tableName),
      recordPrefix: idempotencyRecordPrefix(env, 'createBatch'),
    }),
  };
}
