import { once } from 'node:events';
import { rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readServiceConfig } from '../shared/config';
import { ownPorts } from '../shared/egress/ownPorts';
import { WEBHOOK_BATCH_SIZE, WEBHOOK_BATCHING_WINDOW_MS } from '../shared/jobs/sendWebhook';
import { SWEEP_PERIOD_MS } from '../shared/jobs/sweepStrandedJobs';
import { logger } from '../shared/logger';
import { SqsJobQueue } from '../shared/store/sqsJobQueue';
import { createJobRoutes, createJobSweeper, createJobWorker } from '../shared/wiring/jobs';
import { createKeyManagement } from '../shared/wiring/keyManagement';
import {
  jobLambdas,
  keyLambdas,
  mcpLambda,
  openApiLambda,
  screenshotLambda,
  usageLambda,
  webhookSecretLambda,
} from '../shared/wiring/lambdaHandlers';
import { createScreenshotService } from '../shared/wiring/screenshot';
import { createUsageHistory } from '../shared/wiring/usage';
import { createWebhookSecretManagement } from '../shared/wiring/webhooks';
import { AdmissionQueue } from './admissionQueue';
import { dashboardRoutes } from './dashboardRoutes';
import { claimDataFormat } from './dataFormat';
import { assertFreeSpace } from './diskSpace';
import { type EmbeddedDynamo, localDynamoSecretFile, startEmbeddedDynamo } from './embeddedDynamo';
import { type EmbeddedS3, localSigningKeyFile, startEmbeddedS3 } from './embeddedS3';
import {
  answerClientErrors,
  answerUnmetExpectation,
  type ExtraRoute,
  HTTP_SERVER_OPTIONS,
  lambdaHttpAdapter,
  slowestDeliveryMs,
  startingListener,
} from './httpAdapter';
import { LOCAL_CLIENT_ID, LOCAL_ISSUER, type LocalIdp, loadLocalIdp } from './idp';
import { holdIpv6Loopback } from './ipv6Loopback';
import { type LocalQueue, startLocalQueue, startQueuePoller } from './localQueue';
import { ownerOnlyDir } from './ownerOnlyDir';
import { LocalRenderer } from './renderer/localRenderer';
import { newSignInKey, signInLink } from './signInKey';
import { STATE_FILE } from './stateFile';

/** How long closing waits for the requests still running before it closes the store under them. */
const CLOSE_GRACE_MS = 15_000;
/**
 * Worker invocations that deliver webhooks at once locally, each of up to WEBHOOK_BATCH_SIZE attempts side by side
 * (deployed: 20, behind SQS's fair ordering). The local SQS API has no fair ordering, and an invocation here costs
 * only a promise: these places (16 attempts that come one by one, up to 160 that come together) are what keeps one
 * account's hanging receivers from delaying everyone's deliveries.
 */
const LOCAL_WEBHOOK_INVOCATIONS = 16;

/**
 * Connections each listening address (127.0.0.1, [::1]) holds at once; past that, new ones are closed at once. Any
 * process of the machine can open connections: unbounded, 20,000 silent ones took every file descriptor, and the
 * table's and the local S3 API's own sockets failed (a charged capture's usage record was lost: red team, round 20).
 * Two addresses hold 512 at most, half of a typical 1,024 descriptor limit.
 */
export const MAX_CONNECTIONS = 256;
/** How long a connection may take to send a request's headers (Node's default, 60 s, held silent ones a minute). */
export const HEADERS_TIMEOUT_MS = 10_000;

export interface LocalServiceOptions {
  /** Where the store and the identity provider's key live. */
  dataDir: string;
  port?: number;
  /** Keep the store in memory instead of under dataDir (tests). */
  inMemoryStore?: boolean;
  /** Settings (RATE_LIMIT_PER_HOUR, FREE_CREDITS, ALLOW_PRIVATE_HOSTS, ...); defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** The webhook backoff, shortened by tests only. */
  webhookRetryDelaySeconds?: (attempt: number) => number | undefined;
  /** How often the sweep of stranded jobs runs; shortened by tests only. */
  sweepPeriodMs?: number;
  /** How long a client may take to take a slice of an answer (SEND_STALL_MS); shortened by tests only. */
  sendStallMs?: number;
  /** Connections held at once on each address (MAX_CONNECTIONS); made small by tests only. */
  maxConnections?: number;
  /** How long a connection may take to send a request's headers (HEADERS_TIMEOUT_MS); shortened by tests only. */
  headersTimeoutMs?: number;
  /** The free space asked for under dataDir (MIN_FREE_BYTES); raised by tests only. */
  minFreeBytes?: number;
}

/**
 * How long a received message stays hidden locally: the poller keeps it hidden while its job runs, so this is how
 * soon a job whose process was killed runs again after a restart (LOCAL_QUEUE_VISIBILITY_SECONDS).
 */
function visibilityTimeoutSeconds(env: NodeJS.ProcessEnv): number {
  return countSetting(env, 'LOCAL_QUEUE_VISIBILITY_SECONDS', 10);
}

/**
 * A local setting that counts something: unset or empty, its default; else a whole number of at least 1, or the
 * start fails saying so (a negative LOCAL_MAX_CAPTURES left every capture waiting for ever: red team, round 16).
 */
function countSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1) throw new Error(`${name} must be a whole number of at least 1`);
  return count;
}

/**
 * Captures run at once locally (LOCAL_MAX_CAPTURES, plus CAPTURE_HEADROOM for accounts with nothing running), and
 * how many more may wait (LOCAL_MAX_QUEUED) before 503.
 */
function captureQueue(env: NodeJS.ProcessEnv, headroom: number): AdmissionQueue {
  return new AdmissionQueue(
    { shared: countSetting(env, 'LOCAL_MAX_CAPTURES', 4), headroom },
    countSetting(env, 'LOCAL_MAX_QUEUED', 64),
  );
}

export interface LocalService {
  url: string;
  /** The dashboard with this start's sign-in key (signInKey.ts): what `npm start` prints for the developer. */
  signInLink: string;
  idp: LocalIdp;
  dynamo: EmbeddedDynamo;
  s3: EmbeddedS3;
  /** The local SQS API the jobs are queued on. */
  queue: LocalQueue;
  /** The renderer process the front invokes. */
  renderer: LocalRenderer;
  close(): Promise<void>;
}

/**
 * The whole API on one port: the same handlers the Lambdas run, the embedded DynamoDB, the local S3 API (images,
 * on a port of its own so pre-signed links work), real Chromium and the local identity provider (its JWKS served at
 * /.well-known/jwks.json).
 */
export async function startLocalService(options: LocalServiceOptions): Promise<LocalService> {
  await ownerOnlyDir(options.dataDir);
  await assertFreeSpace(options.dataDir, options.minFreeBytes);
  const baseEnv = options.env ?? process.env;
  // An invalid setting stops the start before anything listens.
  const config = readServiceConfig(baseEnv);
  const visibility = visibilityTimeoutSeconds(baseEnv);
  // The front's requests and the worker's jobs share the local Chromium fairly, as Lambda's concurrency would.
  const admission = captureQueue(baseEnv, config.captureHeadroom);
  // Marked once the settings are known good: a start that stops on them leaves the folder as it was.
  await claimDataFormat(options.dataDir);
  // The port must be known before the rest starts (the identity provider's JWKS address names it), so the server
  // listens at once and answers 503 until the API is ready: a request is never left without an answer.
  const headersTimeoutMs = options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const bound = (listening: Server): Server => {
    listening.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
    listening.headersTimeout = headersTimeoutMs;
    answerClientErrors(listening);
    listening.on('checkExpectation', answerUnmetExpectation);
    return listening;
  };
  // The timeouts are checked this often (Node's default, 30 s, would keep a silent connection up to 40 s).
  const serverOptions = {
    ...HTTP_SERVER_OPTIONS,
    connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs / 2),
  };
  const server = bound(createServer(serverOptions, startingListener));
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening').catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE') throw error;
    throw new Error(`Another program holds 127.0.0.1:${options.port}: stop it, or choose another PORT`);
  });
  const { port } = server.address() as AddressInfo;
  const leaveOwnPorts = ownPorts.add(port);
  const url = `http://127.0.0.1:${port}`;
  const servers = [server];
  /** A start that failed must not leave the port answering 503 for ever. */
  const stopListening = (error: unknown): never => {
    leaveOwnPorts();
    for (const listening of servers) listening.close();
    throw error;
  };
  const ipv6 = await holdIpv6Loopback(port, startingListener, serverOptions).catch(stopListening);
  if (ipv6) servers.push(bound(ipv6));

  const s3 = await startEmbeddedS3({ dataDir: options.dataDir }).catch(stopListening);
  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    SESSION_ISSUER: LOCAL_ISSUER,
    SESSION_CLIENT_ID: LOCAL_CLIENT_ID,
    SESSION_JWKS_URI: `${url}/.well-known/jwks.json`,
    ...s3.env,
    SIGNING_KEY_FILE: localSigningKeyFile(options.dataDir),
  };
  const idp = await loadLocalIdp(options.dataDir).catch(stopListening);
  const signInKey = newSignInKey();
  const dynamo = await startEmbeddedDynamo({
    tableName: config.tableName,
    ...(options.inMemoryStore ? {} : { dataDir: options.dataDir }),
    // `npm run credits` signs with it to reach the running service's table, in memory too.
    secretFile: localDynamoSecretFile(options.dataDir),
  }).catch(stopListening);
  const keys = createKeyManagement(dynamo.client, env, idp.jwks);
  // Chromium runs in a process of its own, which gets none of this environment but an allow-list of it.
  const renderer = new LocalRenderer({ env });
  const localQueue = await startLocalQueue({
    visibilityTimeoutSeconds: visibility,
    ...(options.inMemoryStore ? {} : { dataDir: join(options.dataDir, 'queue') }),
  }).catch(stopListening);
  const queue = new SqsJobQueue(localQueue.client, localQueue.queueUrl, localQueue.webhookQueueUrl);
  const screenshot = createScreenshotService(dynamo.client, env, {
    renderer,
    admission,
    // Validation and cache lookups in a queue of their own, as many places: what needs no capture waits behind none.
    lookups: captureQueue(baseEnv, config.captureHeadroom),
    queue,
    mentionAllowPrivateHosts: true,
    answeredWithinMs: slowestDeliveryMs(options.sendStallMs),
  });
  const worker = createJobWorker(dynamo.client, env, {
    renderer,
    queue,
    // Few jobs wait for the capture queue at once, the others a little later in the job queue: each waiting here
    // holds one of the poller's places, and a few accounts' jobs could then hold them all.
    admission: { run: (accountId, task) => admission.runJob(accountId, task) },
    ...(options.webhookRetryDelaySeconds
      ? { webhookRetryDelaySeconds: options.webhookRetryDelaySeconds }
      : {}),
  });
  const pollers = [
    // Whatever runs and waits in the capture queue, one place is left to read another account's message, which
    // starts in the headroom kept for accounts with nothing running.
    startQueuePoller({
      queue: localQueue,
      queueUrl: localQueue.queueUrl,
      handler: worker.handler,
      concurrency: admission.pollerPlaces,
      visibilityTimeoutSeconds: visibility,
    }),
    // Webhook attempts apart, as deployed: a receiver that never answers holds these places for 10 s an attempt,
    // never those that run captures.
    startQueuePoller({
      queue: localQueue,
      queueUrl: localQueue.webhookQueueUrl,
      handler: worker.handler,
      concurrency: LOCAL_WEBHOOK_INVOCATIONS,
      batchSize: WEBHOOK_BATCH_SIZE,
      batchingWindowMs: WEBHOOK_BATCHING_WINDOW_MS,
      visibilityTimeoutSeconds: visibility,
    }),
  ];
  // The deployed schedule's sweep, on an interval: jobs a killed `npm start` wrote but never queued run after a restart.
  const sweeper = repeat(
    createJobSweeper(dynamo.client, env, queue),
    options.sweepPeriodMs ?? SWEEP_PERIOD_MS,
  );
  // Start the renderer process (which launches Chromium) now, as the renderer function does in its cold start.
  renderer.warmUp().catch((error) => logger.error('Renderer warm-up failed', { error }));
  const serveJwks: ExtraRoute = (req, res) => {
    if (req.method !== 'GET' || req.url !== '/.well-known/jwks.json') return false;
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(idp.jwks));
    return true;
  };
  const listener = lambdaHttpAdapter(
    {
      screenshot: screenshotLambda(screenshot),
      ...keyLambdas(keys),
      getUsage: usageLambda(createUsageHistory(dynamo.client, env, idp.jwks)),
      webhookSecret: webhookSecretLambda(createWebhookSecretManagement(dynamo.client, env, idp.jwks)),
      getOpenApi: openApiLambda,
      mcp: mcpLambda(screenshot),
      ...jobLambdas(
        createJobRoutes(dynamo.client, env, { queue, jwks: idp.jwks, mentionAllowPrivateHosts: true }),
      ),
    },
    {
      extra: [serveJwks, ...dashboardRoutes({ idp, baseUrl: url, signInKey, imageFilesUrl: s3.endpoint })],
      sendStallMs: options.sendStallMs,
    },
  );
  for (const listening of servers) {
    listening.off('request', startingListener);
    listening.on('request', listener);
  }
  const stateFile = join(options.dataDir, STATE_FILE);
  await writeFile(stateFile, JSON.stringify({ url, dynamoEndpoint: dynamo.endpoint, pid: process.pid }));

  return {
    url,
    signInLink: signInLink(url, signInKey),
    idp,
    dynamo,
    s3,
    queue: localQueue,
    renderer,
    async close() {
      await Promise.all(
        servers.map((listening) => {
          listening.closeAllConnections();
          return new Promise<void>((resolve) => listening.close(() => resolve()));
        }),
      );
      // Requests still running (captures whose clients just went) write their refunds and usage to the store:
      // they end before the store does. Their clients are gone, so they stop at once; the bound is for a stuck one.
      await Promise.race([listener.idle(), sleep(CLOSE_GRACE_MS, undefined, { ref: false })]);
      // Jobs being run finish; those not yet received stay in the queue (on disk) for the next start.
      await Promise.race([
        Promise.all(pollers.map((poller) => poller.stop())),
        sleep(CLOSE_GRACE_MS, undefined, { ref: false }),
      ]);
      await sweeper.stop();
      await worker.close();
      await localQueue.close();
      await screenshot.close();
      await dynamo.close();
      await s3.close();
      await rm(stateFile, { force: true });
      leaveOwnPorts();
    },
  };
}

/** Runs `task` every `periodMs`, skipping a turn while the last run goes on; stop() waits for the run under way. */
function repeat(task: () => Promise<unknown>, periodMs: number) {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= task()
      .then(
        () => undefined,
        (error) => logger.error('Sweep failed', { error: error as Error }),
      )
      .finally(() => {
        running = undefined;
      });
  }, periodMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
