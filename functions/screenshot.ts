import { streamingRuntime } from '../shared/http/adapter/lambdaStreaming';
import { withSelfTest } from '../shared/rollout/selfTest';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { createJobQueue } from '../shared/wiring/jobs';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService, invokedRenderer } from '../shared/wiring/screenshot';

// The front: every rule (keys, rate limit, credits, slots, cache, usage) and no browser. Captures are asked of the
// renderer function, which holds no credentials (docs/architecture.md).
const service = createScreenshotService(createDynamoClient(), process.env, {
  renderer: invokedRenderer(process.env),
  queue: createJobQueue(process.env),
});

// A new version captures a known page for the pre-traffic hook before CodeDeploy shifts traffic to it.
export const handler = streamingRuntime().streamifyResponse(
  withSelfTest(screenshotLambda(service), service.renderer),
);
