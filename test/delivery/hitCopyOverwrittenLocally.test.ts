import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageDelivery } from '../../shared/delivery/imageDelivery';
import type { ImageStore } from '../../shared/delivery/imageStore';
import { S3ImageStore } from '../../shared/store/s3ImageStore';
import { fakePng } from '../helpers/memoryPorts';
import { localS3Client, startTestDelivery } from '../helpers/store';

/**
 * Red team 12b (delivery): a cache hit's `response: "json"` link now names a copy at a key fixed by the entry and
 * its etag (`hit-<sha256(entry, etag)>`), which every hit of that version writes again. The copy is made with
 * `CopySourceIfMatch: etag`, but "the local S3 API ignores CopySourceIfMatch" (shared/store/s3ImageStore.ts): it copies
 * whatever the entry holds at that moment, and only afterwards is the copy's ETag compared and the hit turned into a
 * miss. When the entry is captured again between a hit's HEAD and its copy (a miss of the same request, or one with a
 * shorter cacheTtl), the newer image is written over the copy that earlier links to the old version name: a link
 * answered with etag A, its width, height and bytes, downloads image B within its hour. With one copy per hit (a
 * random key) the stray copy landed where no link pointed.
 *
 * What should hold (docs/api.md 15.2): a link downloads exactly the bytes its answer describes, for its hour.
 *
 * Fixed: local/s3SignatureGate.ts checks the copy's `x-amz-copy-source-if-match` as S3 does.
 */

let delivery: Awaited<ReturnType<typeof startTestDelivery>>;

beforeAll(async () => {
  delivery = await startTestDelivery();
}, 120_000);

afterAll(async () => {
  await delivery?.close();
});

const etagOf = (image: Buffer) => `"${createHash('md5').update(image).digest('hex')}"`;

function captured(image: Buffer) {
  return { image, contentType: 'image/png', etag: etagOf(image), creditsCharged: 1, truncated: false };
}

describe("a cache hit's link to the copy of its entry's version", () => {
  it('keeps downloading that version when the entry is captured again during a later hit', async () => {
    const s3 = new S3ImageStore(localS3Client(delivery.s3), delivery.s3.bucket);
    let between: (() => Promise<void>) | undefined;
    // The image store as is, with a hook between a hit's HEAD of the entry and what it does next.
    const images: ImageStore = Object.assign(Object.create(s3) as S3ImageStore, {
      async head(key: string) {
        const info = await s3.head(key);
        const hook = between;
        between = undefined;
        if (hook) await hook();
        return info;
      },
    });
    const now = Date.now();
    const deliveries = imageDelivery({ images, now: () => now });
    const request = { cacheKey: 'entry-1', cacheTtl: 3600, response: 'json' as const };
    const first = fakePng(200, 100, 'version A');
    const second = fakePng(200, 100, 'version B');

    // A miss stores version A in the cache; a hit answers a link to its copy.
    await deliveries.deliver('acct', { ...request, response: 'image' }, captured(first));
    const hit = await deliveries.fromCache('acct', request, undefined);
    expect(hit?.etag).toBe(etagOf(first));
    const link = hit?.link?.url ?? '';
    expect(Buffer.from(await (await fetch(link)).arrayBuffer())).toEqual(first);

    // Another hit reads the entry (version A); before it copies, a miss of the same request stores version B.
    between = async () => {
      await deliveries.deliver('acct', { ...request, response: 'image' }, captured(second));
    };
    await deliveries.fromCache('acct', request, undefined);

    // The first link, still within its hour, answered as version A.
    const downloaded = Buffer.from(await (await fetch(link)).arrayBuffer());
    expect(etagOf(downloaded)).toBe(hit?.etag);
  }, 60_000);
});
