import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { streamingRuntime } from '../shared/http/streaming';
import { logger } from '../shared/logger';
import { createScreenshotService } from '../shared/wiring/screenshot';

const service = createScreenshotService(new DynamoDBClient({}), process.env);
// Launch Chromium during the cold start (init gets a CPU boost), not on the first request.
service.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

export const handler = streamingRuntime().streamifyResponse(service.handler);
