import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CaptureResult, CaptureSpec, Renderer } from '../../shared/capture/renderer';
import type { ImageStore } from '../../shared/delivery/imageStore';
import type { CaptureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { CACHE_TTL } from '../../shared/screenshot/schema';
import { S3ImageStore } from '../../shared/store/s3ImageStore';
import { createDeliveryPorts } from '../../shared/wiring/delivery';
import { FakeRenderer } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';
import { localS3Client, startTestDelivery } from '../helpers/store';

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
const download = async (url: string) => md5(Buffer.from(await (await fetch(url)).arrayBuffer()));

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

    // Before: the first link downloaded the second capture (second.etag).
    expect(await download(first.url)).toBe(first.etag);
    expect(await download(hit.url)).toBe(first.etag);
    expect(await download(second.url)).toBe(second.etag);
  });
  it('copies the entry once for all the hits that can link to that copy, and again once the copy could expire first', async () => {
    // Red team: a signed link's hits are free, and each `response: "json"` hit copied its entry inside S3 (up to
    // 190 MiB a time). The same S3 API, through a client that names each command it sends.
    const sent: string[] = [];
    const client = localS3Client(delivery.s3);
    client.middlewareStack.add(
      (next, context) => (args) => {
        sent.push(String(context.commandName));
        return next(args);
      },
      { step: 'initialize' },
    );
    let now = Date.now();
    const service = memoryScreenshotService({
      now: () => now,
      images: new S3ImageStore(client, delivery.s3.env.IMAGE_BUCKET),
    });
    const { key } = await service.addKey('alice', now);
    await service.credits.set('alice', 10);
    const body = { url: 'https://a.test/report', cache: true, cacheTtl: CACHE_TTL.max, response: 'json' };
    const hit = async () => {
      sent.length = 0;
      const outcome = await service.capture({ apiKey: key, request: () => body, deadline: now + 60_000 });
      if (!outcome.ok || !('screenshot' in outcome)) throw new Error('not captured');
      const { link, etag, cache } = outcome.screenshot;
      if (!link) throw new Error('no link');
      return {
        url: link.url,
        etag,
        cache,
        copies: sent.filter((name) => name === 'CopyObjectCommand').length,
      };
    };

    const miss = await hit();
    expect(miss.cache).toBe('MISS');
    const first = await hit();
    expect(first).toMatchObject({ cache: 'HIT', etag: miss.etag, copies: 1 });
    // Before: every hit was one more copy.
    const second = await hit();
    expect(second).toMatchObject({ cache: 'HIT', etag: miss.etag, copies: 0 });
    expect(second.url.split('?')[0]).toBe(first.url.split('?')[0]);
    // Three days on, the copy's lifecycle rule (two days) may remove it within the next link's hour: copied anew.
    now += 3 * 86_400_000;
    const later = await hit();
    expect(later).toMatchObject({ cache: 'HIT', etag: miss.etag, copies: 1 });

    expect(await download(second.url)).toBe(miss.etag);
    // Its link is signed as at the moved clock, three days ahead, which S3 does not take yet: the copy, made again under the same name, is read.
    const copied = decodeURIComponent(new URL(later.url).pathname).split('/').slice(2).join('/');
    expect(md5((await images.get(copied))?.image ?? Buffer.alloc(0))).toBe(miss.etag);
  });
});
