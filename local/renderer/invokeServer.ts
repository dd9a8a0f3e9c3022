import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { StreamingLambdaHandler } from '../../shared/http/adapter/lambdaStreaming';
import { logger } from '../../shared/logger';
import { invocationContext } from '../invocationContext';
import { fromOwnClient } from '../ownClients';
import { claimsCredential, type LocalCredentials, localCredentials, sigV4Verifier } from '../sigV4Verifier';
import { invokeComplete, payloadChunk } from './eventStream';

/** Lambda's limit on a synchronous invocation's request payload. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;
const STREAMING_INVOKE = /^\/2021-11-15\/functions\/([^/]+)\/response-streaming-invocations$/;

/**
 * The most a PayloadChunk event carries, as Lambda streams a response in pieces: the SDK gathers each event whole
 * before handing it on, so a renderer's image written at once, sent as one event, was held twice by the front (red
 * team).
 */
const EVENT_PAYLOAD_BYTES = 1024 * 1024;

/** The region the front's Lambda client signs for locally. */
export const LOCAL_INVOKE_REGION = 'local';

/**
 * The credentials the front signs its invocations with, from a secret it makes at each start of the renderer process
 * and hands it over the IPC channel (never its environment or arguments): only the front can invoke it.
 */
export function invokeCredentials(secret: Buffer): LocalCredentials {
  return localCredentials('LOCALRENDERER', secret);
}

export interface InvokeServer {
  /** The endpoint to give @aws-sdk/client-lambda. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Lambda's InvokeWithResponseStream API on a loopback port (as `sam local start-lambda` serves the Invoke API), so
 * the front calls the local renderer process with @aws-sdk/client-lambda exactly as it calls the deployed function.
 * Each invocation runs the named streaming handler; what it writes goes out as PayloadChunk events, and
 * InvokeComplete follows once the handler has returned. A caller that hangs up closes the handler's stream.
 */
export async function startInvokeServer(
  functions: Record<string, StreamingLambdaHandler<unknown>>,
  timeoutMs: number,
  credentials: LocalCredentials,
): Promise<InvokeServer> {
  const verify = sigV4Verifier(credentials, LOCAL_INVOKE_REGION, 'lambda');
  const server = createServer((req, res) => {
    void serve(req, res).catch((error) => {
      logger.error('Local invocation failed', { error: error as Error });
      if (!res.headersSent) apiError(res, 500, 'ServiceException', 'The invocation failed');
      else res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only the front: a page in the developer's own browser, or another user of the machine, must not hand the
    // renderer a spec the front never checked (red team: a file: URL read the identity provider's private key). The
    // front signs with credentials from a secret only it and this process hold; no other request's body is read.
    if (!fromOwnClient(req) || !claimsCredential(req.headers, req.url ?? '/', credentials.accessKeyId))
      return apiError(res, 403, 'AccessDeniedException', 'Only the front may invoke the renderer');
    const match = req.method === 'POST' ? STREAMING_INVOKE.exec(req.url?.split('?')[0] ?? '') : null;
    if (!match?.[1]) return apiError(res, 404, 'UnknownOperationException', 'Only InvokeWithResponseStream');
    const name = decodeURIComponent(match[1]);
    const handler = functions[name];
    if (!handler) return apiError(res, 404, 'ResourceNotFoundException', `Function not found: ${name}`);
    const body = await readBody(req);
    if (!body) return apiError(res, 413, 'RequestTooLargeException', 'Request payload is too large');
    const signed = await verify(
      { method: req.method ?? 'POST', target: req.url ?? '/', headers: req.headers, body },
      Date.now(),
    );
    if (!signed.valid) return apiError(res, 403, 'InvalidSignatureException', 'The signature does not match');
    let event: unknown;
    try {
      event = JSON.parse(body.toString('utf8'));
    } catch {
      return apiError(res, 400, 'InvalidRequestContentException', 'Could not parse request body into json');
    }
    res.writeHead(200, {
      'Content-Type': 'application/vnd.amazon.eventstream',
      'X-Amz-Executed-Version': '$LATEST',
    });
    const stream = new Writable({
      // Each write in events of EVENT_PAYLOAD_BYTES at most, one after the other.
      write(chunk: Buffer, _encoding, done) {
        const next = (at: number) => {
          if (at >= chunk.length || res.writableEnded || res.destroyed) return done();
          const end = at + EVENT_PAYLOAD_BYTES;
          res.write(payloadChunk(chunk.subarray(at, end)), () => next(end));
        };
        next(0);
      },
    });
    res.once('close', () => {
      if (!res.writableFinished) stream.destroy();
    });
    let errorCode: string | undefined;
    try {
      await handler(event, stream, invocationContext(timeoutMs));
    } catch (error) {
      logger.error('The function failed', { error: error as Error });
      errorCode = 'Unhandled';
    }
    // As the runtime does: a stream the handler left open is ended, and what it wrote goes out before the end.
    if (!stream.writableEnded) stream.end();
    await finished(stream).catch(() => undefined);
    if (!res.destroyed) res.end(invokeComplete(errorCode));
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_PAYLOAD_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** An error in the shape the SDK reads: the type in x-amzn-errortype, the message in the JSON body. */
function apiError(res: ServerResponse, status: number, type: string, message: string): void {
  res
    .writeHead(status, { 'Content-Type': 'application/json', 'x-amzn-errortype': type })
    .end(JSON.stringify({ Type: 'User', message }));
}
