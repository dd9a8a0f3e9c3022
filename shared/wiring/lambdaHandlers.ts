import type { Renderer } from '../capture/renderer';
import { type BufferedLambdaHandler, bufferedHandler, streamingHandler } from '../http/adapter/apiGateway';
import type { StreamingLambdaHandler } from '../http/adapter/lambdaStreaming';
import type { ErrorStyle } from '../http/errorAnswer';
import { asksForAsync, type IdempotencyDeps, idempotentRoute } from '../http/idempotentRoute';
import type { JobRouteName } from '../http/jobRoutes';
import { type KeyRouteName, keyRoutes } from '../http/keyRoutes';
import { screenshotRoute } from '../http/screenshotRoute';
import type { HttpRoute } from '../http/types';
import { usageRoute } from '../http/usageRoute';
import { webhookSecretRoute } from '../http/webhookSecretRoutes';
import type { KeyManagement } from '../keys/keyManagement';
import type { KeyStore } from '../keys/keyStore';
import type { CancelledCalls } from '../mcp/cancelledCalls';
import { mcpRoute } from '../mcp/mcpRoute';
import type { ServiceMetrics } from '../metrics/serviceMetrics';
import { getOpenApi } from '../openapi/handler';
import type { RouteDefinition } from '../routes';
import type { CaptureScreenshot } from '../screenshot/captureScreenshot';
import type { GetUsage } from '../usage/usageHistory';
import type { DeferredUsageRecorder } from '../usage/usageRecorder';
import type { WebhookSecretManagement } from '../webhooks/webhookSecretManagement';

/**
 * The Lambda handler of every route, as the functions export them: each route through the one HTTP adapter. The
 * local server and the handler tests use these very handlers.
 */
export type LambdaHandlers = {
  [K in RouteDefinition['handler']]: K extends 'screenshot' | 'mcp'
    ? StreamingLambdaHandler
    : BufferedLambdaHandler;
};

/**
 * How each function answers errors (docs/api.md, "Errors"): the capture routes as `{ error }`, the others as
 * `{ message }`. The local server answers its own refusals on a route's path (405, 413, 503) in the same style.
 */
export const ERROR_STYLES: Readonly<Record<RouteDefinition['handler'], ErrorStyle>> = {
  screenshot: 'screenshot',
  mcp: 'screenshot',
  createBatch: 'screenshot',
  listKeys: 'management',
  createKey: 'management',
  updateKey: 'management',
  deleteKey: 'management',
  getCredits: 'management',
  getUsage: 'management',
  webhookSecret: 'management',
  getOpenApi: 'management',
  getJob: 'management',
  listJobs: 'management',
  getBatch: 'management',
};

/** What captures leave behind once the client has its answer. */
interface CaptureAftermath {
  renderer: Pick<Renderer, 'settle'>;
  usage: Pick<DeferredUsageRecorder, 'flush' | 'inScope'>;
  metrics: Pick<ServiceMetrics, 'flush'>;
}

/**
 * A route that captures, streamed. Once the client has its answer (or is known not to have it), the renderer
 * prepares its next tab, the request's own usage records are written and its metrics are published, all before the
 * handler returns.
 */
function capturingHandler(
  route: HttpRoute,
  errors: ErrorStyle,
  service: CaptureAftermath,
): StreamingLambdaHandler {
  const handler = streamingHandler(route, {
    errors,
    afterResponse: async () => {
      // The usage records first: metrics that cannot be published must not lose them.
      const written = service.usage.flush();
      try {
        service.metrics.flush();
      } finally {
        await Promise.all([service.renderer.settle(), written]);
      }
    },
  });
  return (event, responseStream, context) =>
    service.usage.inScope(() => handler(event, responseStream, context));
}

/** The screenshot route. */
export function screenshotLambda(
  service: CaptureAftermath & {
    capture: CaptureScreenshot;
    /** Idempotency-Key on async captures; absent where async captures are not wired. */
    idempotency?: IdempotencyDeps;
  },
): StreamingLambdaHandler {
  const route = screenshotRoute(service.capture);
  return capturingHandler(
    service.idempotency ? idempotentRoute(route, service.idempotency, asksForAsync) : route,
    ERROR_STYLES.screenshot,
    service,
  );
}

/**
 * POST /mcp: the tools are screenshot requests, so what a capture leaves behind is settled as for the screenshot
 * route, after the answer: a streaming handler, as that one is, since a buffered one's answer leaves only when it
 * returns.
 */
export function mcpLambda(
  service: CaptureAftermath & { capture: CaptureScreenshot; keys: KeyStore; cancelledCalls: CancelledCalls },
): StreamingLambdaHandler {
  return capturingHandler(mcpRoute(service), ERROR_STYLES.mcp, service);
}

export function keyLambdas(keys: KeyManagement): Record<KeyRouteName, BufferedLambdaHandler> {
  const routes = Object.entries(keyRoutes(keys)).map(([name, route]) => [
    name,
    bufferedHandler(route, { errors: ERROR_STYLES[name as KeyRouteName] }),
  ]);
  return Object.fromEntries(routes) as Record<KeyRouteName, BufferedLambdaHandler>;
}

export function webhookSecretLambda(management: WebhookSecretManagement): BufferedLambdaHandler {
  return bufferedHandler(webhookSecretRoute(management), { errors: ERROR_STYLES.webhookSecret });
}

export function usageLambda(getUsage: GetUsage): BufferedLambdaHandler {
  return bufferedHandler(usageRoute(getUsage), { errors: ERROR_STYLES.getUsage });
}

export function jobLambdas(
  routes: Record<JobRouteName, HttpRoute>,
): Record<JobRouteName, BufferedLambdaHandler> {
  const handlers = (Object.keys(routes) as JobRouteName[]).map((name) => [
    name,
    bufferedHandler(routes[name], { errors: ERROR_STYLES[name] }),
  ]);
  return Object.fromEntries(handlers) as Record<JobRouteName, BufferedLambdaHandler>;
}

export const openApiLambda: BufferedLambdaHandler = bufferedHandler(getOpenApi, {
  errors: ERROR_STYLES.getOpenApi,
});
