import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type EmbeddedDynamo, startEmbeddedDynamo } from '../local/embeddedDynamo';
import { localSigningKeyFile, startEmbeddedS3 } from '../local/embeddedS3';
import { ephemeralIdentityProvider } from '../local/ephemeralIdp';
import { startLocalQueue, startQueuePoller } from '../local/localQueue';
import { LocalRenderer } from '../local/renderer/localRenderer';
import type { CaptureResult, Renderer } from '../shared/capture/renderer';
import { readServiceConfig } from '../shared/config';
import { createUrlPolicy } from '../shared/egress/urlPolicy';
import { SqsJobQueue } from '../shared/store/sqsJobQueue';
import { createJobRoutes, createJobWorker } from '../shared/wiring/jobs';
import { createKeyManagement } from '../shared/wiring/keyManagement';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService, screenshotUseCase } from '../shared/wiring/screenshot';
import { createStores } from '../shared/wiring/stores';
import { type BenchResponse, invokeStreaming, screenshotEvent } from './invoke';

export const BENCH_TABLE = 'screenshot-bench';
const BENCH_ACCOUNT = 'bench-account';
/** Enough credits and rate-limit room that no scenario is ever refused. */
const PLENTY = 1_000_000_000;

/**
 * The embedded DynamoDB (dynalite on a loopback port, in memory), the local S3 API in a throwaway folder, and one
 * account with one API key.
 */
export interface BenchStore {
  dynamo: EmbeddedDynamo;
  env: Record<string, string>;
  apiKey: string;
  close(): Promise<void>;
}

export async function startBenchStore(allowPrivateHosts: string): Promise<BenchStore> {
  const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-bench-'));
  const [dynamo, s3] = await Promise.all([
    startEmbeddedDynamo({ tableName: BENCH_TABLE }),
    startEmbeddedS3({ dataDir }),
  ]);
  const idp = ephemeralIdentityProvider();
  const env: Record<string, string> = {
    ...s3.env,
    SIGNING_KEY_FILE: localSigningKeyFile(dataDir),
    TABLE_NAME: BENCH_TABLE,
    RATE_LIMIT_PER_HOUR: String(PLENTY),
    FREE_CREDITS: '0',
    ALLOW_PRIVATE_HOSTS: allowPrivateHosts,
    ...idp.env,
  };
  const management = createKeyManagement(dynamo.client, env, idp.jwks);
  const accountId = BENCH_ACCOUNT;
  const created = await management.createKey(idp.token(accountId), () => ({ name: 'bench' }));
  await createStores(dynamo.client, readServiceConfig(env)).credits.set(accountId, PLENTY);
  return {
    dynamo,
    env,
    apiKey: created.key,
    async close() {
      await Promise.all([dynamo.close(), s3.close()]);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real screenshot front as the Lambda entry builds it, and the renderer process it invokes. */
export interface BenchService {
  shoot(body: Record<string, unknown>): Promise<BenchResponse>;
  close(): Promise<void>;
}

export async function startOurService(store: BenchStore, env: NodeJS.ProcessEnv = {}): Promise<BenchService> {
  const fullEnv = { ...process.env, ...store.env, ...env };
  // Through the boundary: the renderer is a process of its own, invoked as the deployed front invokes it.
  const renderer = new LocalRenderer({ env: fullEnv });
  const service = createScreenshotService(store.dynamo.client, fullEnv, { renderer });
  await renderer.warmUp();
  return {
    shoot: (body) => invokeStreaming(screenshotLambda(service), screenshotEvent(store.apiKey, body)),
    close: () => service.close(),
  };
}

/** Stands in for Chromium so that only admission (and the answer) is timed. */
const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const instantRenderer: Renderer = {
  capture: async (): Promise<CaptureResult> => ({
    image: TINY_PNG,
    contentType: 'image/png',
    truncated: false,
  }),
  warmUp: async () => undefined,
  settle: async () => undefined,
  close: async () => undefined,
};

/**
 * The real handler with the renderer swapped for one that answers at once: authentication, rate limit, lastUsed,
 * validation, URL policy and the credit reservation against the embedded store, then the streamed answer (the usage
 * record is written after it, as deployed).
 */
export function admissionOnly(store: BenchStore): {
  shoot(body: Record<string, unknown>): Promise<BenchResponse>;
} {
  const config = readServiceConfig(store.env);
  const handler = screenshotLambda(
    screenshotUseCase(
      createStores(store.dynamo.client, config),
      instantRenderer,
      createUrlPolicy({ allowPrivateHosts: config.allowPrivateHosts }),
      store.env,
    ),
  );
  return { shoot: (body) => invokeStreaming(handler, screenshotEvent(store.apiKey, body)) };
}

/**
 * Async captures for the bench: the front with an instant renderer (what accepting costs), and the local SQS API
 * with the worker asking a renderer process of its own (what a batch of real captures takes from submission to its
 * last job). The worker consumes only after `startWorker()`: deployed, the captures an accepted job leads to run on
 * other machines than the front that accepted it, so they must not share these two cores with the accept row.
 */
export async function startBenchJobs(store: BenchStore) {
  const env = { ...process.env, ...store.env };
  const config = readServiceConfig(env);
  const stores = createStores(store.dynamo.client, config);
  const local = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
  const queue = new SqsJobQueue(local.client, local.queueUrl);
  const front = screenshotLambda(
    screenshotUseCase(
      stores,
      instantRenderer,
      createUrlPolicy({ allowPrivateHosts: config.allowPrivateHosts }),
      env,
      { queue },
    ),
  );
  const renderer = new LocalRenderer({ env });
  await renderer.warmUp();
  const worker = createJobWorker(store.dynamo.client, env, { renderer, queue });
  let poller: ReturnType<typeof startQueuePoller> | undefined;
  const routes = createJobRoutes(store.dynamo.client, env, { queue });
  return {
    startWorker() {
      poller ??= startQueuePoller({
        queue: local,
        queueUrl: local.queueUrl,
        handler: worker.handler,
        concurrency: 4,
        visibilityTimeoutSeconds: 30,
      });
    },
    /** POST /api/screenshot with `async: true`: the 202 answer. */
    accept: (body: Record<string, unknown>) =>
      invokeStreaming(front, screenshotEvent(store.apiKey, { ...body, async: true })),
    /** Resolves once every one of these jobs has ended; throws if one failed. */
    async drain(jobIds: string[]): Promise<void> {
      for (;;) {
        const jobs = await stores.jobs.getMany(BENCH_ACCOUNT, jobIds);
        if (jobs.some((job) => job.status === 'failed')) throw new Error('async: an accepted capture failed');
        if (jobs.length === jobIds.length && jobs.every((job) => job.status === 'succeeded')) return;
        await sleep(100);
      }
    },
    /** Submits a batch and waits for its last job: ms from submission to completion. */
    async batch(requests: Record<string, unknown>[]): Promise<number> {
      const started = performance.now();
      const answer = await routes.createBatch({
        method: 'POST',
        path: '/api/batches',
        headers: { authorization: `Bearer ${store.apiKey}`, 'content-type': 'application/json' },
        pathParameters: {},
        query: {},
        body: JSON.stringify({ requests }),
        requestId: 'bench',
        baseUrl: 'http://bench',
        deadline: Date.now() + 30_000,
        signal: new AbortController().signal,
      });
      if (answer.status !== 202) throw new Error(`batch: ${answer.status} ${answer.body.toString()}`);
      const { id } = JSON.parse(answer.body.toString()) as { id: string };
      for (;;) {
        const batch = await stores.jobs.getBatch(BENCH_ACCOUNT, id);
        if (batch?.status === 'completed') {
          const jobs = await stores.jobs.getMany(BENCH_ACCOUNT, batch.jobIds);
          if (jobs.some((job) => job.status !== 'succeeded')) throw new Error('batch: a capture failed');
          return performance.now() - started;
        }
        await sleep(20);
      }
    },
    async close() {
      await poller?.stop();
      await worker.close();
      await local.close();
      await renderer.close();
    },
  };
}
