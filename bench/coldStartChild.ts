/**
 * One cold start, as a fresh Lambda sandbox runs it: build the service and launch the browser (the entry's init),
 * then answer the first request. Bundled by coldStart.ts the way the stack bundles functions/screenshot.ts, then
 * run in a new node process. Prints one JSON line when the image is in hand.
 */
import './env';
import chromium from '@sparticuz/chromium';
import { logger } from '../shared/logger';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { screenshotLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService } from '../shared/wiring/screenshot';
import { invokeStreaming, screenshotEvent } from './invoke';

/** Milliseconds since this process started (performance's time origin). */
const loadedMs = performance.now();
// The layout before the layer carried Chromium unpacked, for comparison: @sparticuz/chromium unpacks its
// brotli-packed browser into the (empty) temp folder before the first launch.
if (process.env.BENCH_UNPACK_INTO_TEMP) process.env.CHROMIUM_PATH = await chromium.executablePath();
const endpoint = process.env.BENCH_DYNAMO_ENDPOINT ?? '';
const service = createScreenshotService(
  // The entry's client (bounded timeouts, no replayed writes), pointed at the bench's embedded store.
  createDynamoClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  }),
  process.env,
);
// Exactly what functions/screenshot.ts does at init: launch now, do not wait for it.
service.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

const response = await invokeStreaming(
  screenshotLambda(service),
  screenshotEvent(process.env.BENCH_API_KEY ?? '', { url: process.env.BENCH_URL }),
);
const imageMs = performance.now();
process.stdout.write(
  `${JSON.stringify({ status: response.status, bytes: response.body.length, loadedMs, imageMs })}\n`,
);
await service.close();
process.exit(0);
