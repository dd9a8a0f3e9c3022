import { streamingRuntime } from '../shared/http/streaming';
import { logger } from '../shared/logger';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { createScreenshotService } from '../shared/wiring/screenshot';

const service = createScreenshotService(createDynamoClient(), process.env);
// Launch Chromium during the cold start (init gets a CPU boost), not on the first request.
service.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

export const handler = streamingRuntime().streamifyResponse(service.handler);
