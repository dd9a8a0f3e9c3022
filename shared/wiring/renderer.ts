import { withAvifEncoding } from '../capture/avifEncoding';
import { ChromiumRenderer } from '../capture/chromiumRenderer';
import type { Renderer } from '../capture/renderer';
import { readServiceConfig } from '../config';
import { type EgressProxy, egressChromiumArgs, startEgressProxy } from '../egress/egressProxy';
import { rendererHandler } from '../http/adapter/rendererFunction';
import { logger } from '../logger';
import { CAPTURE_BUDGETS, type CaptureBudgets } from '../timing';

/**
 * Chromium, whose every connection goes through the egress proxy (started with the browser, kept for the life of
 * the process), behind the renderer function's handler. This is all the renderer function and the local renderer
 * process hold: no store, no key, no credential.
 */
export function createRendererFunction(env: NodeJS.ProcessEnv, budgets: CaptureBudgets = CAPTURE_BUDGETS) {
  const { allowPrivateHosts, pageMemoryLimitMb } = readServiceConfig(env);
  let egress: Promise<EgressProxy> | undefined;
  const startEgress = () => {
    // Refused destinations are logged (host and port only) so an operator can see SSRF attempts.
    egress ??= startEgressProxy({
      allowPrivateHosts,
      onBlocked: (blocked) => logger.warn('Egress refused', { ...blocked }),
    });
    return egress;
  };
  const renderer: Renderer = withAvifEncoding(
    new ChromiumRenderer({
      env,
      budgets,
      pageMemoryLimitMb,
      launchArgs: async () => egressChromiumArgs((await startEgress()).url),
      // Each capture's context gets a port of the proxy of its own, which ends with the capture.
      contextProxy: async () => (await startEgress()).openRoute(),
    }),
  );
  return {
    renderer,
    handler: rendererHandler(renderer),
    /** The egress proxy, started now if the browser has not started it yet (its port is one of the service's). */
    egress: startEgress,
    async close() {
      await renderer.close();
      await (await egress)?.close();
    },
  };
}
