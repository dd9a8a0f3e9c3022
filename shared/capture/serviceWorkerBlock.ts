import type { Browser, Protocol } from 'puppeteer-core';
import { logger } from '../logger';

/**
 * Service workers are not allowed in captures: they outlive the page, fetch with the browser's own user agent and are
 * a path around per-page rules. Chromium has no switch to turn them off, so their script fetch (a request marked
 * `Service-Worker: script`, of resource type Other) is refused at the browser level, for every context and frame:
 * `navigator.serviceWorker.register()` then rejects, as when the script cannot be fetched. Requests of other
 * types are not intercepted at all; the few other ones of type Other pass straight on.
 */
export async function blockServiceWorkers(browser: Browser): Promise<void> {
  const session = await browser.target().createCDPSession();
  session.on('Fetch.requestPaused', (event: Protocol.Fetch.RequestPausedEvent) => {
    const isWorkerScript = Object.keys(event.request.headers).some(
      (name) => name.toLowerCase() === 'service-worker',
    );
    const answer = isWorkerScript
      ? session.send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'BlockedByClient' })
      : session.send('Fetch.continueRequest', { requestId: event.requestId });
    answer.catch((error) => logger.debug('Intercepted request already gone', { error }));
  });
  await session.send('Fetch.enable', { patterns: [{ resourceType: 'Other', requestStage: 'Request' }] });
}
