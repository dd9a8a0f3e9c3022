// First, before the rest of the code loads: a new sandbox starts inflating Chromium (shared/capture/earlyChromium.ts).
import '../shared/capture/earlyChromium';
import { streamingRuntime } from '../shared/http/adapter/lambdaStreaming';
import { logger } from '../shared/logger';
import { createRendererFunction } from '../shared/wiring/renderer';

// The renderer function: Chromium and the egress proxy, invoked by the screenshot front only. Its role may write its
// own logs and nothing else; its environment holds no table, bucket, key or secret (docs/architecture.md).
const renderer = createRendererFunction(process.env);
// Launch Chromium and open the first tab during the cold start (Lambda's init phase, which gets a CPU boost and
// waits for this top-level await), not on the first request. A failure here is retried by the first capture.
await renderer.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

export const handler = streamingRuntime().streamifyResponse(renderer.handler);
