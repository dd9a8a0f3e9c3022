import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type EmbeddedS3, startEmbeddedS3 } from '../../local/embeddedS3';
import { linkTimes } from '../../shared/delivery/imageStore';
import { createS3Client, S3ImageStore } from '../../shared/store/s3ImageStore';

/**
 * Red team (round 6): the local S3 API keeps its port across restarts (DATA_DIR/s3-port) "so links handed out
 * before a restart still work after it", yet when that port is taken at start it moves to any free one without a
 * word (local/embeddedS3.ts). Another user of the machine who binds the remembered port while `npm start` is down
 * (`ss -ltn` showed it) then receives every link handed out before the restart that anyone follows (the developer's
 * browser, a webhook receiver fetching a job's result): the signed URL itself. The gate checks the signature against
 * the Host the request names, not against its own address, so the squatter replays the link on the gate's new port
 * with the old Host and downloads the image (an account's private, cookie-authenticated capture), or answers the
 * link's follower with an image of their own.
 *
 * Passes once the gate accepts only requests naming its own address (a link signed for another port is dead), and,
 * better, once `npm start` refuses to start when the remembered port is taken (saying so) instead of moving.
 */

const PRIVATE = 'private capture of the account';
const KEY = 'images/linked/victim/payroll';
const INFO = {
  contentType: 'image/png',
  etag: '"payroll"',
  bytes: PRIVATE.length,
  width: 1,
  height: 1,
  truncated: false,
  storedAt: 1,
  expiresAt: 4_102_444_800_000,
};

let dataDir: string | undefined;
let s3: EmbeddedS3 | undefined;
let squatter: Server | undefined;

afterAll(async () => {
  await s3?.close();
  squatter?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function storeOf(running: EmbeddedS3): S3ImageStore {
  const client = createS3Client({
    url: running.endpoint,
    credentials: {
      accessKeyId: running.env.LOCAL_S3_ACCESS_KEY_ID,
      secretAccessKey: running.env.LOCAL_S3_SECRET_ACCESS_KEY,
    },
  });
  return new S3ImageStore(client, running.bucket);
}

/** A raw GET naming `host`, as any local process can send. */
function get(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe("the local S3 API's remembered port against another user of the machine", () => {
  it('does not let a link handed out before a restart be replayed by whoever took its port meanwhile', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 's3-squat-'));
    s3 = await startEmbeddedS3({ dataDir });
    const store = storeOf(s3);
    await store.put(KEY, Buffer.from(PRIVATE), INFO);
    // A job's result link, or a `response: json` link, handed out before the restart.
    const link = new URL(await store.signedUrl(KEY, linkTimes(Date.now(), 3600)));
    const oldPort = Number(link.port);
    await s3.close();
    s3 = undefined;

    // Another user binds the remembered port while npm start is down, and keeps what arrives.
    let receive: (path: string) => void = () => undefined;
    const received = new Promise<string>((resolve) => {
      receive = resolve;
    });
    const server = createServer((req, res) => {
      receive(req.url ?? '');
      res.writeHead(404).end();
    });
    squatter = server;
    server.listen(oldPort, '127.0.0.1');
    await once(server, 'listening');

    // npm start runs again: it moves to another port, silently.
    s3 = await startEmbeddedS3({ dataDir });
    const newPort = Number(new URL(s3.endpoint).port);
    expect(newPort).not.toBe(oldPort);

    // Someone follows the old link (the developer's browser, a webhook receiver): the squatter has it.
    await fetch(link).catch(() => undefined);
    const stolenPath = await received;
    expect(stolenPath).toContain('X-Amz-Signature=');

    // Replayed on the gate's new port, naming the Host it was signed for.
    const replayed = await get(newPort, stolenPath, `127.0.0.1:${oldPort}`);
    expect(replayed.body).not.toContain(PRIVATE);
    expect(replayed.status).toBe(403);
  }, 60_000);
});
