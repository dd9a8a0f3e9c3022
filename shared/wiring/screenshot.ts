import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ChromiumRenderer } from '../capture/chromiumRenderer';
import { readServiceConfig } from '../config';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../egress/egressProxy';
import { createUrlPolicy } from '../egress/urlPolicy';
import { logger } from '../logger';
import type { Admission } from '../screenshot/admission';
import { captureScreenshot } from '../screenshot/captureScreenshot';
import { CAPTURE_BUDGETS, type CaptureBudgets } from '../timing';
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
  const capture = captureScreenshot({
    ...createStores(client, config),
    renderer,
    urlPolicy: createUrlPolicy(policy),
    captureBudgetMs: budgets.navigationMs + budgets.afterLoadMs,
    ...(options.admission ? { admission: options.admission } : {}),
    ...createDeliveryPorts(env),
  });
  return {
    capture,
    renderer,
    async close() {
      await renderer.close();
      await (await egress)?.close();
    },
  };
}
