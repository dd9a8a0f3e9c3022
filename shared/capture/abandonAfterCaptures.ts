import type { Renderer } from './renderer';

/** What abandonAfterCaptures needs of the egress proxy (shared/egress/egressProxy.ts). */
export interface PendingConnections {
  abandonPending(): void;
}

/**
 * `renderer`, after which the egress proxy gives up the connections still being opened whenever no capture is running
 * any more: once a capture's leftovers are settled (its browser context closed), what its page asked for serves no
 * one. Deployed, a renderer instance runs one capture at a time, so that is after every capture; locally, once the
 * captures running together are all done.
 */
export function abandonAfterCaptures(
  renderer: Renderer,
  egress: () => Promise<PendingConnections | undefined>,
): Renderer {
  let running = 0;
  return {
    async capture(spec, limits) {
      running++;
      try {
        return await renderer.capture(spec, limits);
      } finally {
        running--;
      }
    },
    warmUp: () => renderer.warmUp(),
    async settle() {
      await renderer.settle();
      if (running === 0) (await egress())?.abandonPending();
    },
    close: () => renderer.close(),
  };
}
