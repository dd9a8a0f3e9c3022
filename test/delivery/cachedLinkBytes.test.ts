import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureResult, CaptureSpec, Renderer } from '../../shared/capture/renderer';
import type { ImageStore } from '../../shared/delivery/imageStore';
import type { CaptureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { CACHE_TTL } from '../../shared/screenshot/schema';
import { createDeliveryPorts } from '../../shared/wiring/delivery';
import { FakeRenderer } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';
import { startTestDelivery } from '../helpers/store';

/**
 * docs/api.md 15.2: the `url` of a `response: "json"` answer "downloads exactly the bytes `etag` names" for its hour.
 * Red team: with the cache, that link was a pre-signed GET of the account's cache entry, which the next miss of the
 * same request overwrites, so an older link, still within its hour, downloaded the newer capture. A link now names an
 * object of its own (a miss stores one beside the entry, a hit copies the entry while it still has the etag). Real
 * local S3 API (s3rver behind the signature gate); in-memory keys and credits, a clock the test moves.
 */

let delivery: Awaited<ReturnType<typeof startTestDelivery>>;
let images: ImageStore;

beforeAll(async () => {
  delivery = await startTestDelivery();
  ({ images } = createDeliveryPorts({ ...process.env, ...delivery.env }));
});

afterAll(async () => {
  await delivery?.close();
});

/** A renderer whose every capture is a different image, as a page that changes between two captures gives. */
class ChangingPage implements Renderer {
  private readonly fake = new FakeRenderer();
  private count = 0;
  async capture(spec: CaptureSpec, limits: Parameters<Renderer['capture']>[1]): Promise<CaptureResult> {
    return this.fake.capture({ ...spec, url: `${spec.url}#capture-${++this.count}` }, limits);
  }
  async warmUp() {}
  async settle() {}
  async close() {}
}

const md5 = (bytes: Buffer) => `"${createHash('md5').update(bytes).digest('hex')}"`;

describe('a link to a cached image', () => {
  it('downloads the bytes its etag names for its whole hour, even after the entry was captured again', async () => {
    // The links are signed by the real clock; the service's clock starts there and is moved by the test.
    let now = Date.now();
    const service = memoryScreenshotService({ now: () => now, renderer: new ChangingPage(), images });
    const { key } = await service.addKey('alice', now);
    await service.credits.set('alice', 10);
    const capture: CaptureScreenshot = service.capture;
    const body = { url: 'https://a.test/dashboard', cache: true, cacheTtl: CACHE_TTL.min, response: 'json' };
    const shoot = async () => {
      const outcome = await capture({ apiKey: key, request: () => body, deadline: now + 60_000 });
      if (!outcome.ok || !('screenshot' in outcome)) throw new Error('not captured');
      const { link, etag, cache } = outcome.screenshot;
      if (!link) throw new Error('no link');
      return { url: link.url, expiresAt: link.expiresAt, etag, cache };
    };

    const first = await shoot();
    expect(first.cache).toBe('MISS');
    // A hit's link, of the same entry.
    const hit = await shoot();
    expect(hit).toMatchObject({ cache: 'HIT', etag: first.etag });
    // The entry's own cacheTtl has passed; the first links still have most of their hour.
    now += (CACHE_TTL.min + 1) * 1000;
    const second = await shoot();
    expect(second.cache).toBe('MISS');
    expect(second.etag).not.toBe(first.etag);
    expect(first.expiresAt).toBeGreaterThan(now);

    const download = async (url: string) => md5(Buffer.from(await (await fetch(url)).arrayBuffer()));
    // Before: the first link downloaded the second capture (second.etag).
    expect(await download(first.url)).toBe(first.etag);
    expect(await download(hit.url)).toBe(first.etag);
    expect(await download(second.url)).toBe(second.etag);
  });
});
