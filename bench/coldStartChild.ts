/**
 * One cold start of the renderer, as a fresh renderer function sandbox runs it: build the renderer and launch the
 * browser (the entry's init), then answer the first render request through the function's handler. Bundled by
 * coldStart.ts the way the stack bundles functions/renderer.ts, then run in a new node process. Prints one JSON line
 * when the image is in hand. (The front's own cold start holds no browser and is not timed here.)
 */
import './env';
// As functions/renderer.ts, first.
import '../shared/capture/earlyChromium';
import { PassThrough } from 'node:stream';
import chromium from '@sparticuz/chromium';
import { invocationContext } from '../local/invocationContext';
import { decodeAnswer } from '../shared/capture/rendererProtocol';
import { logger } from '../shared/logger';
import { captureSpecOf } from '../shared/screenshot/captureSpec';
import { screenshotRequest } from '../shared/screenshot/schema';
import { createRendererFunction } from '../shared/wiring/renderer';

/** Milliseconds since this process started (performance's time origin). */
const loadedMs = performance.now();
// The layout before the layer carried Chromium unpacked, for comparison: @sparticuz/chromium unpacks its
// brotli-packed browser into the (empty) temp folder before the first launch.
if (process.env.BENCH_UNPACK_INTO_TEMP) process.env.CHROMIUM_PATH = await chromium.executablePath();
const renderer = createRendererFunction(process.env);
// Exactly what functions/renderer.ts does at init.
await renderer.renderer.warmUp().catch((error) => logger.error('Browser warm-up failed', { error }));

const stream = new PassThrough();
const chunks: Buffer[] = [];
stream.on('data', (chunk: Buffer) => chunks.push(chunk));
// The image is in hand when the answer ends; the handler then settles (next tab) before it returns.
let imageMs = Number.NaN;
stream.once('finish', () => {
  imageMs = performance.now();
});
const spec = captureSpecOf(screenshotRequest.parse({ url: process.env.BENCH_URL }));
await renderer.handler({ spec, deadline: Date.now() + 60_000 }, stream, invocationContext());
const answer = decodeAnswer(Buffer.concat(chunks));
const status = answer.ok ? 200 : 500;
const bytes = answer.ok ? answer.result.image.length : 0;
process.stdout.write(`${JSON.stringify({ status, bytes, loadedMs, imageMs })}\n`);
await renderer.close();
process.exit(0);
