import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import { operationOf, ROUTES } from '../shared/routes';
import type { DeploymentSettings } from './settings';

export interface RouteThrottle {
  rateLimit: number;
  burstLimit: number;
}

/**
 * Each route's throttle: its own from `routeThrottles`, else the screenshot throttle for a streaming route (each
 * request holds a Chromium for seconds), else none (the stage's applies). Keyed by `<METHOD> <path>`.
 */
export function routeThrottles(settings: DeploymentSettings): Map<string, RouteThrottle> {
  const throttles = new Map<string, RouteThrottle>();
  for (const route of ROUTES) {
    const own = settings.routeThrottles[operationOf(route)];
    const throttle =
      own ??
      (route.streaming
        ? { rateLimit: settings.screenshotRateLimit, burstLimit: settings.screenshotBurstLimit }
        : undefined);
    if (throttle) throttles.set(`${route.method} ${route.path}`, throttle);
  }
  return throttles;
}

/** The stage's method settings for those throttles. */
export function methodThrottles(
  settings: DeploymentSettings,
): Record<string, apigateway.MethodDeploymentOptions> {
  return Object.fromEntries(
    [...routeThrottles(settings)].map(([key, throttle]) => {
      const [method, path] = key.split(' ');
      return [
        `${path}/${method}`,
        {
          throttlingRateLimit: throttle.rateLimit,
          throttlingBurstLimit: throttle.burstLimit,
          // A method override replaces the stage defaults, so logging is restated here.
          loggingLevel: apigateway.MethodLoggingLevel.ERROR,
          dataTraceEnabled: false,
        },
      ];
    }),
  );
}
