import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ChromiumRenderer } from '../capture/chromiumRenderer';
import type { Renderer } from '../capture/renderer';
import { readServiceConfig } from '../config';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../egress/egressProxy';
import { createUrlPolicy, type UrlPolicy } from '../egress/urlPolicy';
import { logger } from '../logger';
import { PowertoolsServiceMetrics } from '../metrics/powertoolsMetrics';
import type { Admission } from '../screenshot/admission';
import { captureScreenshot, type ScreenshotDeps } from '../screenshot/captureScreenshot';
import { CAPTURE_BUDGETS, type CaptureBudgets, MAX_DELAY_MS } from '../timing';
import { DeferredUsageRecorder } from '../usage/usageRecorder';
import { createDeliveryPorts } from './delivery';
import { createStores } from './stores';

export interface ScreenshotServiceOptions {
  /** Where authenticated requests wait for their turn (the local server's queue); none deployed. */
  admission?: Admission;
  /** Shorter capture budgets, for tests; the specified ones otherwise. */
  budgets?: CaptureBudgets;
}

/**
 * The screenshot use case and its dependencies: stores, the URL policy, and Chromium whose every connection goes through
 * the egress proxy (started with the browser, kept for the life of the process).
 */
export function createScreenshotService(
  client: DynamoDBClient,
  env: NodeJS.ProcessEnv,
  options: ScreenshotServiceOptions = {},
) {
  const config = readServiceConfig(env);
  const budgets = options.budgets ?? CAPTURE_BUDGETS;
  const policy = { allowPrivateHosts: config.allowPrivateHosts };
  let egress: Promise<EgressProxy> | undefined;
  const startEgress = () => {
    // Refused destinations are logged (host and port only) so an operator can see SSRF attempts.
    egress ??= startEgressProxy({
      ...policy,
      onBlocked: (blocked) => logger.warn('Egress refused', { ...blocked }),
    });
    return egress;
  };
  const renderer = new ChromiumRenderer({
    env,
    budgets,
    launchArgs: async () => egressChromiumArgs((await startEgress()).url),
  });
  const service = screenshotUseCase(createStores(client, config), renderer, createUrlPolicy(policy), env, {
    captureBudgetMs: budgets.navigationMs + budgets.afterLoadMs + MAX_DELAY_MS,
    ...(options.admission ? { admission: options.admission } : {}),
  });
  const { usage } = service;
  return {
    ...service,
    async close() {
      await usage.flush();
      await renderer.close();
      await (await egress)?.close();
    },
  };
}

/**
 * The screenshot use case over the stores with the given renderer and URL policy, with the delivery ports, metrics
 * and usage recorder the environment calls for. The Lambda handler flushes the usage records and metrics after each
 * answer (shared/wiring/lambdaHandlers.ts).
 */
export function screenshotUseCase(
  stores: ReturnType<typeof createStores>,
  renderer: Renderer,
  urlPolicy: UrlPolicy,
  env: NodeJS.ProcessEnv,
  options: Pick<ScreenshotDeps, 'admission' | 'captureBudgetMs'> = {},
) {
  const usage = new DeferredUsageRecorder(stores.usageStore);
  const metrics = new PowertoolsServiceMetrics(env);
  const capture = captureScreenshot({
    ...stores,
    ...createDeliveryPorts(env),
    ...options,
    usage,
    metrics,
    renderer,
    urlPolicy,
  });
  return { capture, renderer, usage, metrics, keys: stores.keys };
}
