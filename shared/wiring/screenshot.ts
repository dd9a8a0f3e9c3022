import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ChromiumRenderer } from '../capture/chromiumRenderer';
import { readServiceConfig } from '../config';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../egress/egressProxy';
import { createUrlPolicy } from '../egress/urlPolicy';
import { logger } from '../logger';
import { captureScreenshot } from '../screenshot/captureScreenshot';
import { createDeliveryPorts } from './delivery';
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
  const capture = captureScreenshot({
    ...createStores(client, config),
    renderer,
    urlPolicy: createUrlPolicy(policy),
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
