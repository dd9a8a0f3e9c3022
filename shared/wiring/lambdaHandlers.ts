import type { Renderer } from '../capture/renderer';
import { type BufferedLambdaHandler, bufferedHandler, streamingHandler } from '../http/adapter/apiGateway';
import type { StreamingLambdaHandler } from '../http/adapter/lambdaStreaming';
import { type KeyRouteName, keyRoutes } from '../http/keyRoutes';
import { screenshotRoute } from '../http/screenshotRoute';
import type { KeyManagement } from '../keys/keyManagement';
import { getOpenApi } from '../openapi/handler';
import type { RouteDefinition } from '../routes';
import type { CaptureScreenshot } from '../screenshot/captureScreenshot';

/**
 * The Lambda handler of every route, as the functions export them: each route through the one HTTP adapter. The
 * local server and the handler tests use these very handlers.
 */
export type LambdaHandlers = {
  [K in RouteDefinition['handler']]: K extends 'screenshot' ? StreamingLambdaHandler : BufferedLambdaHandler;
};

/** The screenshot route; the renderer prepares its next tab once the client has the image. */
export function screenshotLambda(service: {
  capture: CaptureScreenshot;
  renderer: Pick<Renderer, 'settle'>;
}): StreamingLambdaHandler {
  return streamingHandler(screenshotRoute(service.capture), {
    errors: 'screenshot',
    afterResponse: () => service.renderer.settle(),
  });
}

export function keyLambdas(keys: KeyManagement): Record<KeyRouteName, BufferedLambdaHandler> {
  const routes = Object.entries(keyRoutes(keys)).map(([name, route]) => [
    name,
    bufferedHandler(route, { errors: 'management' }),
  ]);
  return Object.fromEntries(routes) as Record<KeyRouteName, BufferedLambdaHandler>;
}

export const openApiLambda: BufferedLambdaHandler = bufferedHandler(getOpenApi, { errors: 'management' });
