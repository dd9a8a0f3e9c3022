import { streamingRuntime } from '../shared/http/adapter/lambdaStreaming';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService, invokedRenderer } from '../shared/wiring/screenshot';

// The front: every rule (keys, rate limit, credits, slots, cache, usage) and no browser. Captures are asked of the
// renderer function, which holds no credentials (docs/architecture.md).
const service = createScreenshotService(createDynamoClient(), process.env, {
  renderer: invokedRenderer(process.env),
});

export const handler = streamingRuntime().streamifyResponse(screenshotLambda(service));
