import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ChromiumRenderer } from '../capture/chromiumRenderer';
import type { Renderer } from '../capture/renderer';
import { readServiceConfig } from '../config';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../egress/egressProxy';
import { createUrlPolicy, type UrlPolicy } from '../egress/urlPolicy';
import { logger } from '../logger';
import { captureScreenshot } from '../screenshot/captureScreenshot';
import { DeferredUsageRecorder } from '../usage/usageRecorder';
import { createStores } from './stores';

/**
 * The screenshot use case and its dependencies: stores, the URL policy, and Chromium whose every connection goes through
 * the egress proxy (started with the browser, kept for the life of the process).
 */
export function createScreenshotService(client: DynamoDBClient, env: NodeJS.ProcessEnv) {
  const config = readServiceConfig(env);
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
    launchArgs: async () => egressChromiumArgs((await startEgress()).url),
  });
  const { capture, usage } = screenshotUseCase(
    createStores(client, config),
    renderer,
    createUrlPolicy(policy),
  );
  return {
    capture,
    renderer,
    usage,
    async close() {
      await usage.flush();
      await renderer.close();
      await (await egress)?.close();
    },
  };
}

/**
 * The screenshot use case over the stores with the given renderer and URL policy, and its usage recorder, which
 * the Lambda handler flushes after each answer (shared/wiring/lambdaHandlers.ts).
 */
export function screenshotUseCase(
  stores: ReturnType<typeof createStores>,
  renderer: Renderer,
  urlPolicy: UrlPolicy,
) {
  const usage = new DeferredUsageRecorder(stores.usageStore);
  return { capture: captureScreenshot({ ...stores, usage, renderer, urlPolicy }), renderer, usage };
}
