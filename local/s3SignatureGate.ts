import { once } from 'node:events';
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { ownPorts } from '../shared/egress/ownPorts';
import { logger } from '../shared/logger';
import type { DiskRoom } from './diskSpace';
import {
  bodyMatchesHash,
  claimsCredential,
  type LocalCredentials,
  PRESIGN_PARAMS,
  sigV4Verifier,
} from './sigV4Verifier';

/**
 * The front door of the local S3 API: a loopback server that checks each request's SigV4 signature (header-signed or
 * pre-signed, expiry included) with the local credentials and forwards only valid ones to s3rver, which checks none.
 * A forged PUT, or a link whose signature was removed, altered or has expired, gets 403 and never reaches the store.
 */
export interface S3SignatureGate {
  port: number;
  close(): Promise<void>;
}

type UpstreamRequest = (method: string, path: string, headers?: OutgoingHttpHeaders) => ClientRequest;

/** The header that tells s3rver a request came through this gate. */
export const GATE_HEADER = 'x-local-s3-gate';

/** Images are a few MB at most; a body past this is refused rather than held in memory. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export async function startS3SignatureGate(options: {
  /** s3rver's own address, on loopback. */
  upstreamPort: number;
  /** Sent with every request passed on (GATE_HEADER): s3rver answers nothing that lacks it (embeddedS3.ts). */
  upstreamToken: string;
  credentials: LocalCredentials;
  region: string;
  /** The port to listen on; 0 for any. */
  port: number;
  /** What the store is refused when there is no room for it (diskSpace.ts). */
  writesNeedRoom: DiskRoom;
}): Promise<S3SignatureGate> {
  const verify = sigV4Verifier(options.credentials, options.region);
  /** A request to s3rver, marked as come through this gate. */
  const toUpstream: UpstreamRequest = (method, path, headers = {}) =>
    httpRequest({
      host: '127.0.0.1',
      port: options.upstreamPort,
      method,
      path,
      headers: {
        ...headers,
        host: `127.0.0.1:${options.upstreamPort}`,
        [GATE_HEADER]: options.upstreamToken,
      },
    });
  let ownHost = '';
  const server: Server = createServer((req, res) => {
    // Whoever does not name our (secret-derived) access key id is refused before a byte of the body is read.
    if (!claimsCredential(req.headers, req.url ?? '/', options.credentials.accessKeyId))
      return deny(res, 403, 'InvalidAccessKeyId', 'The request does not name our access key id');
    // A request signed for another address is not ours, though the signature holds for the Host it names: a link
    // made for the port this gate had before a restart, which another user of the machine then took and received
    // the link on, would be replayed here (red team).
    if (req.headers.host !== ownHost)
      return deny(res, 403, 'AccessDenied', 'The request was signed for another address');
    const target = req.url ?? '/';
    const method = req.method ?? 'GET';
    // A pre-signed link only reads: the service signs no other (s3ImageStore.ts). Its access key id is in every link
    // handed out, so whoever saw one could otherwise make this gate hold 64 MiB bodies (red team).
    const presigned = req.headers.authorization === undefined;
    if (presigned && (!['GET', 'HEAD'].includes(method) || hasBody(req)))
      return deny(res, 403, 'AccessDenied', 'A pre-signed link only reads');
    // The signature is checked before a byte of the body is read: a header-signed request declares its body's hash.
    verify({ method, target, headers: req.headers, body: undefined }, Date.now())
      .then(async (verdict) => {
        if (!verdict.valid) return deny(res, 403, 'AccessDenied', verdict.reason);
        const body = presigned ? Buffer.alloc(0) : await readBody(req);
        if (body === undefined) return deny(res, 413, 'EntityTooLarge', 'The body is too large');
        if (!bodyMatchesHash(req.headers, body))
          return deny(res, 400, 'XAmzContentSHA256Mismatch', 'The body does not match x-amz-content-sha256');
        const source = await copySource(req.headers, toUpstream);
        // s3rver writes an object with no error handler: a full disk ended the server's process (red team). A copy
        // writes as much as its source holds.
        if (!['GET', 'HEAD'].includes(method)) {
          const room = await options.writesNeedRoom(source ? source.bytes : body.length);
          if (!room) {
            logger.error('The local S3 API refused a write: its disk is full');
            return deny(res, 503, 'ServiceUnavailable', 'The disk is full');
          }
          // Taken until s3rver has answered: the object is written by then.
          res.once('close', room);
        }
        if (source && !source.matches)
          return deny(
            res,
            412,
            'PreconditionFailed',
            'At least one of the pre-conditions you specified did not hold',
          );
        const { authorization: _, host: __, ...headers } = req.headers;
        const upstream = toUpstream(method, withoutSignature(target), headers);
        upstream.on('response', (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          // A client gone mid-answer takes the upstream answer with it: piped, s3rver's side stayed open for good
          // (a hit too large to read, whose reader lets go of it, shared/store/s3ImageStore.ts).
          pipeline(answer, res, () => undefined);
        });
        upstream.on('error', () => res.destroy());
        upstream.end(body);
      })
      .catch(() => res.destroy());
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  server.listen(options.port, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  ownHost = `127.0.0.1:${port}`;
  const leaveOwnPorts = ownPorts.add(port);
  return {
    port,
    async close() {
      leaveOwnPorts();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A copy's source, read once from s3rver just before the copy is passed on (undefined for any other request):
 * - `bytes`, what the copy writes (red team, round 28: a flat 64 MiB made every copy of a small image need 96 MB
 *   free); the largest object this gate takes when the source cannot be read.
 * - `matches`, whether its `x-amz-copy-source-if-match` holds, as S3 checks it: s3rver ignores it, and a cache hit's
 *   copy then took a newer capture over the copy that earlier links name (red team). A copy without the condition
 *   holds; one with it whose source cannot be read fails.
 */
async function copySource(
  headers: IncomingHttpHeaders,
  toUpstream: UpstreamRequest,
): Promise<{ bytes: number; matches: boolean } | undefined> {
  const source = headers['x-amz-copy-source'];
  if (typeof source !== 'string') return undefined;
  const expected = headers['x-amz-copy-source-if-match'];
  const head = headOf(source, toUpstream);
  const answer = await (typeof expected === 'string' ? head : head.catch(() => undefined));
  const size = Number(answer?.headers['content-length']);
  const found = answer?.statusCode === 200;
  return {
    bytes: found && Number.isSafeInteger(size) ? size : MAX_BODY_BYTES,
    matches: typeof expected !== 'string' || (found && answer?.headers.etag === expected),
  };
}

/** s3rver's HEAD answer for a copy source (`bucket/key`, maybe with `?versionId=`), its body left unread. */
async function headOf(source: string, toUpstream: UpstreamRequest): Promise<IncomingMessage> {
  const answer = await new Promise<IncomingMessage>((resolve, reject) => {
    const head = toUpstream('HEAD', `/${source.replace(/^\//, '').split('?')[0]}`);
    head.on('response', resolve);
    head.on('error', reject);
    head.end();
  });
  answer.resume();
  return answer;
}

/** The whole body, or undefined past MAX_BODY_BYTES. */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Whether a request says it has a body (a length above zero, or chunks). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** s3rver would check a signature against its built-in credentials: it gets the request without one. */
function withoutSignature(target: string): string {
  const mark = target.indexOf('?');
  if (mark === -1) return target;
  const kept = target
    .slice(mark + 1)
    .split('&')
    .filter((pair) => !PRESIGN_PARAMS.some((name) => pair.startsWith(`${name}=`)));
  return kept.length === 0 ? target.slice(0, mark) : `${target.slice(0, mark)}?${kept.join('&')}`;
}

function deny(res: ServerResponse, status: number, code: string, message: string): void {
  res
    .writeHead(status, { 'Content-Type': 'application/xml', Connection: 'close' })
    .end(
      `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`,
    );
}
