import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';
import { InvokeWithResponseStreamCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type InvokeServer,
  invokeCredentials,
  LOCAL_INVOKE_REGION,
  startInvokeServer,
} from '../../local/renderer/invokeServer';
import { encodeResult } from '../../shared/capture/rendererProtocol';

/**
 * Red team (round 11, trust boundaries): the front reads a renderer's answer with AnswerReader, which "copies the image,
 * as it arrives, into one buffer of exactly that size: the front holds an answer once, not its chunks and a copy of
 * them" (shared/capture/rendererProtocol.ts). Locally that is not so: the renderer process's Invoke API sends
 * whatever its handler writes as one event-stream message, and the renderer writes the whole image in one write, so a
 * 256 MiB image is one 256 MiB PayloadChunk event. The AWS SDK's decoder in the front gathers each event whole
 * before it hands it on (getChunkedStream: one buffer of the size the message announces), and AnswerReader then copies
 * it: measured, a 200 MiB answer took the front's array buffers up by 400 MiB (and the renderer process holds the image
 * and a copy of it in its event). Every account's capture shares that front (dynalite, the S3 API, the queue, the
 * handlers): a few accounts' pages of noise at once double what the front must hold, against the bound the design
 * gives.
 *
 * What should happen: the local Invoke API frames what a handler writes in bounded events (as Lambda streams a
 * response in pieces), so the front holds one answer and at most one small event beside it.
 *
 * Fixed: local/renderer/invokeServer.ts sends each write in events of 1 MiB at most.
 */
const EVENT_BOUND = 1024 * 1024;
const credentials = invokeCredentials(randomBytes(32));
let server: InvokeServer;
let client: LambdaClient;

beforeAll(async () => {
  const image = Buffer.alloc(32 * 1024 * 1024, 1);
  server = await startInvokeServer(
    {
      renderer: async (_event: unknown, stream: Writable) => {
        // As rendererFunction.ts answers: the header, then the image in one write.
        const [header, bytes] = encodeResult({ image, contentType: 'image/png', truncated: false });
        stream.write(header);
        stream.end(bytes);
      },
    },
    90_000,
    credentials,
  );
  client = new LambdaClient({
    endpoint: server.url,
    region: LOCAL_INVOKE_REGION,
    credentials,
    maxAttempts: 1,
  });
});

afterAll(async () => {
  client?.destroy();
  await server?.close();
});

describe('the local Invoke API', () => {
  it('streams a large answer in bounded events', async () => {
    const response = await client.send(
      new InvokeWithResponseStreamCommand({ FunctionName: 'renderer', Payload: Buffer.from('{}') }),
    );
    let largest = 0;
    let total = 0;
    for await (const event of response.EventStream ?? []) {
      const bytes = event.PayloadChunk?.Payload?.byteLength ?? 0;
      largest = Math.max(largest, bytes);
      total += bytes;
    }
    expect(total).toBeGreaterThan(32 * 1024 * 1024);
    expect(largest).toBeLessThanOrEqual(EVENT_BOUND);
  });
});
