import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { noisePage, type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Delivery through the local server: a client that hangs up while a large image is still streaming did not receive
 * it, and is not charged (docs/api.md, "Credits"), unless the image was kept in its cache. The image is far larger
 * than what the operating system buffers on a loopback connection, so the server can tell the body was not handed
 * over. Usage records say what each request cost, whatever else the server answers meanwhile (red team).
 */

const SIDE = 2560;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({ '/noise': noisePage(SIDE), '/small': '<!doctype html><p>small</p>' });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort, FREE_CREDITS: '10' });
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ url: `${pages.origin}/noise`, width: SIDE, height: SIDE, ...extra });

/**
 * POSTs the capture, reads the headers and the first part of the body, then stops reading and hangs up `pauseMs`
 * later.
 */
function hangUpMidBody(
  apiKey: string,
  requestBody = body(),
  pauseMs = 500,
): Promise<{ status: number; length: number; received: number }> {
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
        }, pauseMs);
      });
      res.once('error', () => undefined);
    });
    req.once('error', reject);
    req.end(requestBody);
  });
}

describe('a client that hangs up while the image streams', () => {
  it('is not charged, while one that reads the whole image is', async () => {
    const account = await service.newAccount();
    expect(await service.balance(account.token)).toBe(10);

    const full = await service.request('/api/screenshot', {
      bearer: account.apiKey,
      body: JSON.parse(body()),
    });
    const image = Buffer.from(await full.arrayBuffer());
    expect(full.status).toBe(200);
    expect(image.length).toBeGreaterThan(15_000_000);
    expect(await service.balance(account.token)).toBe(9);

    const partial = await hangUpMidBody(account.apiKey);
    expect(partial.status).toBe(200);
    expect(partial.received).toBeGreaterThan(0);
    expect(partial.received).toBeLessThan(partial.length);
    // The refund is written once the server saw the connection go.
    await vi.waitFor(async () => expect(await service.balance(account.token)).toBe(9), { timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await service.balance(account.token)).toBe(9);
    // The hang-up is no capture (red team, round 22: it was counted as one).
    expect(await service.usageLastHour(account.token, 2)).toEqual({ captures: 1, failed: 1, credits: 1 });
  });

  it('is charged when the image was kept in its cache, and its usage says so (red team: recorded as 0)', async () => {
    const account = await service.newAccount();
    const partial = await hangUpMidBody(account.apiKey, body({ cache: true }));
    expect(partial.received).toBeLessThan(partial.length);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await service.balance(account.token)).toBe(9);
    expect(await service.usageLastHour(account.token, 1)).toEqual({ captures: 1, failed: 0, credits: 1 });
  });

  it("is recorded as free while another account's requests end meanwhile (red team: recorded as charged)", async () => {
    const account = await service.newAccount();
    const other = await service.newAccount();
    let hungUp = false;
    // Another account's captures end, and write their records, all the while this one's image is held back.
    const others = async () => {
      while (!hungUp) {
        const small = { url: `${pages.origin}/small`, width: 200, height: 200 };
        await (await service.request('/api/screenshot', { bearer: other.apiKey, body: small })).arrayBuffer();
      }
    };
    const running = [others(), others()];
    const partial = await hangUpMidBody(account.apiKey, body(), 2_000);
    hungUp = true;
    await Promise.all(running);
    expect(partial.received).toBeLessThan(partial.length);
    await vi.waitFor(async () => expect(await service.balance(account.token)).toBe(10), { timeout: 10_000 });
    expect(await service.usageLastHour(account.token, 1)).toEqual({ captures: 0, failed: 1, credits: 0 });
  });
});
