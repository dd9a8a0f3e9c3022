import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Delivery through the local server: a client that hangs up while a large image is still streaming did not receive
 * it, and is not charged (docs/api.md, "Credits"). The image is far larger than what the operating system buffers on
 * a loopback connection, so the server can tell the body was not handed over.
 */

const SIDE = 2560;
// Random pixels: a PNG of them does not compress, so the image is about SIDE × SIDE × 3 bytes (~20 MB).
const NOISE_PAGE = `<!doctype html><html><body style="margin:0"><canvas id="c" width="${SIDE}" height="${SIDE}"></canvas>
<script>
  const c = document.getElementById('c').getContext('2d');
  const img = c.createImageData(${SIDE}, ${SIDE});
  const words = new Uint32Array(img.data.buffer);
  let x = 2463534242;
  for (let i = 0; i < words.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; words[i] = x | 0xff000000; }
  c.putImageData(img, 0, 0);
</script></body></html>`;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({ '/noise': NOISE_PAGE });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort, FREE_CREDITS: '10' });
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

const body = () => JSON.stringify({ url: `${pages.origin}/noise`, width: SIDE, height: SIDE });

/** POSTs the capture, reads the headers and the first part of the body, then stops reading and hangs up. */
function hangUpMidBody(apiKey: string): Promise<{ status: number; length: number; received: number }> {
  const url = new URL('/api/screenshot', service.url);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    });
    req.on('error', () => undefined); // our own hang-up
    req.on('response', (res) => {
      let received = 0;
      res.once('data', (chunk: Buffer) => {
        received += chunk.length;
        res.pause();
        // Let the buffers between us fill, so the server is still sending when we go.
        setTimeout(() => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, length: Number(res.headers['content-length']), received });
        }, 500);
      });
      res.once('error', () => undefined);
    });
    req.once('error', reject);
    req.end(body());
  });
}

describe('a client that hangs up while the image streams', () => {
  it('is not charged, while one that reads the whole image is', async () => {
    const account = await service.newAccount();
    const balance = async () =>
      (await (await service.request('/api/credits', { bearer: account.token })).json()).balance as number;
    expect(await balance()).toBe(10);

    const full = await service.request('/api/screenshot', {
      bearer: account.apiKey,
      body: JSON.parse(body()),
    });
    const image = Buffer.from(await full.arrayBuffer());
    expect(full.status).toBe(200);
    expect(image.length).toBeGreaterThan(15_000_000);
    expect(await balance()).toBe(9);

    const partial = await hangUpMidBody(account.apiKey);
    expect(partial.status).toBe(200);
    expect(partial.received).toBeGreaterThan(0);
    expect(partial.received).toBeLessThan(partial.length);
    // The refund is written once the server saw the connection go.
    await vi.waitFor(async () => expect(await balance()).toBe(9), { timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await balance()).toBe(9);
  });
});
