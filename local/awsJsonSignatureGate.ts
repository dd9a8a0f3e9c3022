import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { logger } from '../shared/logger';
import type { DiskRoom } from './diskSpace';
import { claimsCredential, type LocalCredentials, sigV4Verifier } from './sigV4Verifier';

/** What a signature gate checks requests against: the API's signing scope, and its largest request. */
export interface SignedApi {
  region: string;
  /** SigV4's service name: dynamodb, sqs. */
  service: string;
  /** A body larger than the API accepts is refused before it is read whole. */
  maxBodyBytes: number;
}

/**
 * Makes the server of a local AWS API that speaks AWS JSON 1.0 (dynalite, the local SQS API) answer only requests
 * signed (SigV4) with that API's credentials: neither checks a signature, and their ports, though loopback only, are
 * open to every process of the machine, another user's too (red team: one curl with a made-up signature set an
 * account's balance; another read the job queue). A request that names our access key id has its body read, its
 * signature checked, then is handed to the server as it came; any other gets the API's own refusal.
 */
export function requireAwsJsonSignature(
  server: Server,
  credentials: LocalCredentials,
  api: SignedApi,
  /** Given when the server writes to a disk: what it refuses when there is no room (DiskRoom). */
  writesNeedRoom?: DiskRoom,
): SignatureGate {
  const verify = sigV4Verifier(credentials, api.region, api.service);
  let draining = false;
  /** Requests handed to the server and not yet answered by it. */
  const handedOn = new Set<Promise<void>>();
  const serverListeners = server.listeners('request') as ((
    req: IncomingMessage,
    res: ServerResponse,
  ) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (draining) return refuseStopping(res);
    // Whoever does not name our (secret-derived) access key id is refused before a byte of the body is read.
    if (!claimsCredential(req.headers, req.url ?? '/', credentials.accessKeyId)) {
      // Its body is never read: the connection closes once the refusal is sent.
      return refuse(res, 400, 'The security token included in the request is invalid.', true);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > api.maxBodyBytes) {
        refuse(res, 413, 'Request body too large');
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', async () => {
      if (res.writableEnded || res.destroyed) return;
      const body = Buffer.concat(chunks);
      const verdict = await verify(
        { method: req.method ?? 'GET', target: req.url ?? '/', headers: req.headers, body },
        Date.now(),
      );
      if (!verdict.valid) {
        logger.warn('A local AWS API refused an unsigned request', {
          api: api.service,
          reason: verdict.reason,
        });
        return refuse(
          res,
          400,
          'The request signature we calculated does not match the signature you provided.',
        );
      }
      if (writesNeedRoom && !READS.has(operationOf(req))) {
        const room = await writesNeedRoom(body.length);
        if (!room) return refuseNoRoom(res);
        res.once('close', room);
      }
      // Still being checked when the drain began: refused too, never handed on.
      if (draining) return refuseStopping(res);
      handedOn.add(answeredBy(res, handedOn));
      for (const listener of serverListeners) listener(replayed(req, body), res);
    });
  });
  return {
    async drain(timeoutMs) {
      draining = true;
      await Promise.race([Promise.all(handedOn), sleep(timeoutMs, undefined, { ref: false })]);
    },
  };
}

/** A gate that can stop taking requests, so that the server behind it may close without work under way. */
export interface SignatureGate {
  /**
   * Refuses every request from now on (503), and waits, at most `timeoutMs`, until the server has answered each it
   * was handed: dynalite works on a request after its client has gone, and closed under that work, it threw
   * "Database is closed" out of its own callback (CI, session 26).
   */
  drain(timeoutMs: number): Promise<void>;
}

/** Settles once the server ends `res` (whether or not its client is still there), and leaves `pending`. */
function answeredBy(res: ServerResponse, pending: Set<Promise<void>>): Promise<void> {
  const answered = new Promise<void>((resolve) => {
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      resolve();
      return end(...args);
    }) as ServerResponse['end'];
  });
  void answered.then(() => pending.delete(answered));
  return answered;
}

/** DynamoDB's operations that write nothing. */
const READS = new Set([
  'GetItem',
  'BatchGetItem',
  'Query',
  'Scan',
  'DescribeTable',
  'ListTables',
  'DescribeTimeToLive',
  'ListTagsOfResource',
]);

/** The operation an AWS JSON request names: `X-Amz-Target: DynamoDB_20120810.PutItem`. */
function operationOf(req: IncomingMessage): string {
  return (
    String(req.headers['x-amz-target'] ?? '')
      .split('.')
      .pop() ?? ''
  );
}

/** DynamoDB's own failure, which its clients retry and then answer as the store being unavailable (503). */
function refuseNoRoom(res: ServerResponse): void {
  logger.error('The local table refused a write: its disk is full');
  refuse(res, 500, 'The disk is full', false, 'com.amazonaws.dynamodb.v20120810#InternalServerError');
}

/** A 503 the SDKs retry, and the connection closed: the API is stopping (SignatureGate.drain). */
function refuseStopping(res: ServerResponse): void {
  refuse(res, 503, 'The local API is stopping', true, 'ServiceUnavailableException');
}

/** `req` with its body to be read again (data and end events). */
function replayed(req: IncomingMessage, body: Buffer): IncomingMessage {
  return Object.assign(Readable.from(body.length > 0 ? [body] : []), {
    headers: req.headers,
    method: req.method,
    url: req.url,
    socket: req.socket,
  }) as unknown as IncomingMessage;
}

function refuse(
  res: ServerResponse,
  status: number,
  message: string,
  close = false,
  type = 'com.amazon.coral.service#InvalidSignatureException',
): void {
  if (res.headersSent) return void res.destroy();
  res
    .writeHead(status, {
      'Content-Type': 'application/x-amz-json-1.0',
      ...(close ? { Connection: 'close' } : {}),
    })
    .end(JSON.stringify({ __type: type, message }));
}
