import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { InvokedRenderer } from '../capture/invokedRenderer';
import type { Renderer } from '../capture/renderer';
import { readServiceConfig } from '../config';
import { createUrlPolicy, type UrlPolicy } from '../egress/urlPolicy';
import { idempotencyRecordPrefix } from '../http/idempotentRoute';
import { jobIntake, queueOne } from '../jobs/jobIntake';
import type { JobQueue } from '../jobs/jobQueue';
import { PowertoolsServiceMetrics } from '../metrics/powertoolsMetrics';
import type { Admission } from '../screenshot/admission';
import { captureScreenshot, type ScreenshotDeps } from '../screenshot/captureScreenshot';
import { idempotencyRecords } from '../store/idempotencyRecords';
import { CAPTURE_BUDGETS, type CaptureBudgets, MAX_DELAY_MS } from '../timing';
import { DeferredUsageRecorder } from '../usage/usageRecorder';
import { createDeliveryPorts } from './delivery';
import { createStores } from './stores';

export interface ScreenshotServiceOptions {
  /** Who captures: the renderer function, invoked (deployed and locally, through the same client). */
  renderer: Renderer;
  /** Where authenticated captures wait for their turn (the local server's queue); none deployed. */
  admission?: Admission;
  /** Where authenticated requests wait to be validated and looked up in the cache (the local server's); none deployed. */
  lookups?: Admission;
  /** Shorter capture budgets, for tests (the renderer must be given the same); the specified ones otherwise. */
  budgets?: CaptureBudgets;
  /** The local server: a refused private address names ALLOW_PRIVATE_HOSTS. */
  mentionAllowPrivateHosts?: boolean;
  /** Where async captures are queued (JOB_QUEUE_URL deployed, the local SQS API locally); none for MCP. */
  queue?: JobQueue;
  /** The local server's slowest delivery after a capture's deadline (ScreenshotDeps.answeredWithinMs). */
  answeredWithinMs?: number;
}

/**
 * The screenshot front: the use case over the stores and the URL policy, asking `renderer` for each image. It holds
 * no browser; Chromium runs in the renderer function (or the local renderer process).
 */
export function createScreenshotService(
  client: DynamoDBClient,
  env: NodeJS.ProcessEnv,
  options: ScreenshotServiceOptions,
) {
  const config = readServiceConfig(env);
  const budgets = options.budgets ?? CAPTURE_BUDGETS;
  const policy = createUrlPolicy({
    allowPrivateHosts: config.allowPrivateHosts,
    mentionAllowPrivateHosts: options.mentionAllowPrivateHosts,
  });
  const stores = createStores(client, config);
  const service = screenshotUseCase(stores, options.renderer, policy, env, {
    captureBudgetMs: captureBudgetOf(budgets),
    ...(options.queue ? { queue: options.queue } : {}),
    ...(options.admission ? { admission: options.admission } : {}),
    ...(options.lookups ? { lookups: options.lookups } : {}),
    ...(options.answeredWithinMs === undefined ? {} : { answeredWithinMs: options.answeredWithinMs }),
  });
  const { usage } = service;
  return {
    ...service,
    ...(options.queue
      ? {
          idempotency: {
            keys: stores.keys,
            records: idempotencyRecords(client, config.tableName),
            recordPrefix: idempotencyRecordPrefix(env, 'screenshot'),
          },
        }
      : {}),
    async close() {
      await usage.flush();
      await options.renderer.close();
    },
  };
}

/** The time one capture has from admission, for budgets the renderer is given too. */
export function captureBudgetOf(budgets: CaptureBudgets): number {
  return budgets.navigationMs + budgets.afterLoadMs + MAX_DELAY_MS;
}

/**
 * The deployed renderer: the function RENDERER_FUNCTION_NAME names (its live alias), invoked with response streaming,
 * and for newcomers the headroom renderer RENDERER_HEADROOM_FUNCTION_NAME names when the first is at its reserved
 * concurrency (docs/api.md 6.5).
 * `client` is given an endpoint and placeholder credentials locally (local/renderer/localRenderer.ts).
 */
export function invokedRenderer(
  env: NodeJS.ProcessEnv,
  client: Pick<LambdaClient, 'send'> = new LambdaClient({ maxAttempts: 1 }),
): Renderer {
  const functionName = env.RENDERER_FUNCTION_NAME;
  if (!functionName) throw new Error('RENDERER_FUNCTION_NAME must be set');
  const headroomFunctionName = env.RENDERER_HEADROOM_FUNCTION_NAME;
  return headroomFunctionName
    ? new InvokedRenderer(client, functionName, headroomFunctionName)
    : new InvokedRenderer(client, functionName);
}

/**
 * The screenshot use case over the stores with the given renderer and URL policy, with the delivery ports, metrics
 * and usage recorder the environment calls for, and with `queue` the intake of async captures. The Lambda handler flushes the usage records and metrics after each
 * answer (shared/wiring/lambdaHandlers.ts).
 */
export function screenshotUseCase(
  stores: ReturnType<typeof createStores>,
  renderer: Renderer,
  urlPolicy: UrlPolicy,
  env: NodeJS.ProcessEnv,
  options: Pick<ScreenshotDeps, 'admission' | 'lookups' | 'captureBudgetMs' | 'answeredWithinMs'> & {
    queue?: JobQueue;
  } = {},
) {
  const usage = new DeferredUsageRecorder(stores.usageStore);
  const metrics = new PowertoolsServiceMetrics(env);
  const { queue, ...rest } = options;
  const ports = createDeliveryPorts(env);
  const capture = captureScreenshot({
    ...stores,
    ...ports,
    ...rest,
    // Async captures: queued with their credentials sealed by the same cipher as the signing secrets.
    ...(queue
      ? {
          queueCapture: queueOne(
            jobIntake({ jobs: stores.jobs, queue, cipher: ports.cipher, now: Date.now }),
          ),
        }
      : {}),
    usage,
    metrics,
    renderer,
    urlPolicy,
  });
  return { capture, renderer, usage, metrics, keys: stores.keys, cancelledCalls: stores.cancelledCalls };
}
