import { streamingRuntime } from '../shared/http/adapter/lambdaStreaming';
import { logger } from '../shared/logger';
import { withSelfTest } from '../shared/rollout/selfTest';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService } from '../shared/wiring/screenshot';

const service = createScreenshotService(createDynamoClient(), process.env);
// Launch Chromium and open the first tab during the cold start (Lambda's init phase, which gets a CPU boost and
// waits for this top-level await), not on the first request. A failure here is retried by the first capture.
await service.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

// A new version captures a known page for the pre-traffic hook before CodeDeploy shifts traffic to it.
export const handler = streamingRuntime().streamifyResponse(
  withSelfTest(screenshotLambda(service), service.renderer),
);
