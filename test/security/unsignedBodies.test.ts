import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { startEmbeddedS3 } from '../../local/embeddedS3';
import { linkTimes } from '../../shared/delivery/imageStore';
import { createS3Client, S3ImageStore } from '../../shared/store/s3ImageStore';
import { heldBytes } from '../helpers/heldBytes';
import { startTestStore } from '../helpers/store';

/**
 * Red team (round 3): the local DynamoDB's signature gate (local/awsJsonSignatureGate.ts) read each request's body
 * whole, up to 16 MiB, before it checked the signature, with no bound on how many it read at once. It now refuses a
 * request that does not name its access key id (derived from the secret) before reading any of its body. Any process of the
 * machine, another user's too (the port is loopback only, but open to all), sent unsigned bodies just short of
 * 16 MiB on many connections and never ends them: npm start's one process holds all of it, up to dynalite's server's
 * requestTimeout (Node's default, 300 s), and with enough connections runs out of memory. Here 8 such bodies. The
 * local S3 gate (local/s3SignatureGate.ts, up to 64 MiB a request) read them the same way, and is held to the same.
 */
const CONNECTIONS = 8;
const BODY_BYTES = 15 * 1024 * 1024;

let store: EmbeddedDynamo;
const sockets: Socket[] = [];

beforeAll(async () => {
  store = await startTestStore();
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await store?.close();
});

/** Unfinished bodies just short of BODY_BYTES on CONNECTIONS connections to `endpoint`, none signed; what is held. */
async function unsignedBodies(endpoint: string, requestHead: (port: string) => string): Promise<number> {
  const { port } = new URL(endpoint);
  const before = heldBytes();
  const chunk = Buffer.alloc(1024 * 1024, 0x7b);
  for (let i = 0; i < CONNECTIONS; i++) {
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    sockets.push(socket);
    socket.write(`${requestHead(port)}Content-Length: ${BODY_BYTES + 1}\r\n\r\n`);
    // All but the last byte; each write waits for the kernel to take it, so this process holds none of it.
    for (let sent = 0; sent < BODY_BYTES; sent += chunk.length) {
      await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return heldBytes() - before;
}

describe('the local signature gates', () => {
  it('of DynamoDB do not hold many unsigned, unfinished bodies in memory at once', async () => {
    const held = await unsignedBodies(
      store.endpoint,
      (port) =>
        `POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n` +
        'Content-Type: application/x-amz-json-1.0\r\n',
    );
    // The gate may hold a few bodies in flight, not every connection's.
    expect(held).toBeLessThan(4 * BODY_BYTES);
  }, 120_000);

  it('of S3 do not either', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'unsigned-bodies-'));
    const s3 = await startEmbeddedS3({ dataDir });
    try {
      const held = await unsignedBodies(
        s3.endpoint,
        (port) => `PUT /${s3.bucket}/images/cache/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`,
      );
      expect(held).toBeLessThan(4 * BODY_BYTES);
    } finally {
      await s3.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  // Red team (round 9): the access key id is in clear in every pre-signed link the service hands out (a JSON answer's
  // url, an MCP resource link, a webhook's job): whoever saw one named it in the query of an unsigned PUT, and the
  // gate held each body whole (up to 64 MiB) before checking a signature; 8 of 15 MiB were held at once.
  it('of S3 do not either for whoever read the access key id off a link', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'link-credential-bodies-'));
    const s3 = await startEmbeddedS3({ dataDir });
    try {
      const client = createS3Client({
        url: s3.endpoint,
        credentials: {
          accessKeyId: s3.env.LOCAL_S3_ACCESS_KEY_ID,
          secretAccessKey: s3.env.LOCAL_S3_SECRET_ACCESS_KEY,
        },
      });
      const link = new URL(
        await new S3ImageStore(client, s3.bucket).signedUrl('images/linked/a/b', linkTimes(Date.now(), 3600)),
      );
      const credential = encodeURIComponent(link.searchParams.get('X-Amz-Credential') ?? '');
      expect(credential).not.toBe('');
      const held = await unsignedBodies(
        s3.endpoint,
        (port) =>
          `PUT /${s3.bucket}/images/cache/x?X-Amz-Credential=${credential} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`,
      );
      expect(held).toBeLessThan(4 * BODY_BYTES);
    } finally {
      await s3.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
