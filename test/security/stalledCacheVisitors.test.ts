import { createHash } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { noisePage, type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 17), locally: visitors of a cached image who start reading its answer and then stop. A hit read
 * the entry whole, and each answer held its own copy until the client had taken all of it: the local server had no
 * send timeout, so eight stalled visitors of a 24 MiB entry held about 500 MiB for as long as they kept their
 * connections open (a signed link's hits are free). Now every answer of one entry version shares one copy of its
 * bytes while any of them still holds it (`shared/store/heldCopies.ts`), and a client that takes no slice of an
 * answer for SEND_STALL_MS is let go (`local/httpAdapter.ts`). Measured in this process, which runs the local front:
 * the bytes Node holds outside its heap, after a full garbage collection.
 */

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const SIDE = 2560;
const VISITORS = 8;
/** Long enough for the eight visitors to stall side by side, far longer than the slow reader's pauses. */
const SEND_STALL_MS = 12_000;

let pages: PageServer;
let service: TestLocalService;
let apiKey: string;
/** The cached image (about 20 MB). */
let image: Buffer;

beforeAll(async () => {
  pages = await startPageServer({ '/noise': noisePage(SIDE) });
  service = await startTestLocalService(
    { ALLOW_PRIVATE_HOSTS: pages.hostPort, FREE_CREDITS: '10', RATE_LIMIT_PER_HOUR: '1000' },
    { sendStallMs: SEND_STALL_MS },
  );
  ({ apiKey } = await service.newAccount());
  const miss = await service.request('/api/screenshot', { bearer: apiKey, body: captureBody() });
  expect(miss.status).toBe(200);
  expect(miss.headers.get('x-cache')).toBe('MISS');
  image = Buffer.from(await miss.arrayBuffer());
  expect(image.length).toBeGreaterThan(15_000_000);
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

function captureBody() {
  return { url: `${pages.origin}/noise`, width: SIDE, height: SIDE, cache: true };
}

/** A visitor that has read the answer's first bytes and reads nothing more until `readRest`. */
interface StalledVisitor {
  response: IncomingMessage;
  first: Buffer;
  /** The SHA-256 of the whole answer, the rest read with a pause of `pauseMs` after every `pauseEvery` bytes. */
  readRest(pauseEvery?: number, pauseMs?: number): Promise<string>;
}

function stalledVisitor(): Promise<StalledVisitor> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/api/screenshot', service.url), {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    });
    req.once('error', reject);
    req.once('response', (response) => {
      response.once('data', (first: Buffer) => {
        response.pause();
        resolve({
          response,
          first,
          readRest: (pauseEvery, pauseMs) => readRest(response, first, pauseEvery, pauseMs),
        });
      });
    });
    req.end(JSON.stringify(captureBody()));
  });
}

/** Reads on to the end; what was read is only hashed, so that the test itself holds none of it. */
function readRest(
  response: IncomingMessage,
  first: Buffer,
  pauseEvery = Infinity,
  pauseMs = 0,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256').update(first);
    let sincePause = 0;
    response.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      sincePause += chunk.length;
      if (sincePause < pauseEvery) return;
      sincePause = 0;
      response.pause();
      setTimeout(() => response.resume(), pauseMs);
    });
    response.once('end', () => resolve(hash.digest('hex')));
    response.once('error', reject);
    response.resume();
  });
}

/**
 * Bytes held outside the V8 heap (Buffers), once everything unreachable is gone: V8 frees the memory of dead buffers
 * after a collection, on a thread of its own, so twice with a pause.
 */
async function heldBytes(): Promise<number> {
  for (let i = 0; i < 2; i++) {
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return process.memoryUsage().arrayBuffers;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('visitors of a cached image who stop reading its answer', () => {
  it('share one copy of the entry, and each still gets all of it when it reads on', async () => {
    const before = await heldBytes();
    const visitors = await Promise.all(Array.from({ length: VISITORS }, () => stalledVisitor()));
    for (const { response } of visitors) {
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-cache']).toBe('HIT');
      expect(Number(response.headers['content-length'])).toBe(image.length);
    }
    // Each answer has handed the operating system what it takes and holds the rest: one copy between them (22 MB
    // measured; before, a copy each, and each read's chunks until its S3 connection closed: 160 to 199 MB).
    expect((await heldBytes()) - before).toBeLessThan(2 * image.length);

    const received = await Promise.all(visitors.map((visitor) => visitor.readRest()));
    expect(received).toEqual(Array(VISITORS).fill(sha256(image)));
  });

  it('are let go once they take nothing for a while, and what they held with them; a slow reader is not', async () => {
    const stalled = await stalledVisitor();
    const holding = await heldBytes();
    const slow = await stalledVisitor();
    // Stops after every 4 MB for half a second: slow, never stalled.
    expect(await slow.readRest(4 * 1024 * 1024, 500)).toBe(sha256(image));

    // The stalled answer is let go, and the copy it held with it.
    await vi.waitFor(async () => expect(holding - (await heldBytes())).toBeGreaterThan(image.length / 2), {
      timeout: SEND_STALL_MS + 10_000,
      interval: 500,
    });
    // Reading on, the visitor finds its answer cut short.
    await expect(stalled.readRest()).rejects.toThrow(/aborted/);
  });
});
