import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNED_LINK_INLINE_HIT_BYTES } from '../../shared/delivery/imageDelivery';
import { REDIRECT_MAX_AGE_SECONDS } from '../../shared/http/screenshotRoute';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { noisePage, type PageServer, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Red team (round 13 deployed, round 17 locally): a signed link's cache hits are free to whoever holds the link, and
 * a hit of a large image held a screenshot function for as long as its visitor took (Lambda streams past the first
 * 6 MB at about 2 MB/s), or locally the front's memory. A hit over SIGNED_LINK_INLINE_HIT_BYTES is now a 302 to a
 * pre-signed address of the stored file (one copy per version of the entry), which the front never reads. Through
 * the handler Lambda runs, against the real local S3 API.
 */

const LARGE_SIDE = 1600;
const SMALL_SIDE = 400;

let pages: PageServer;
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  pages = await startPageServer({ '/noise': noisePage(LARGE_SIDE) });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  account = await harness.newAccount();
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

function link(side: number) {
  const query = {
    url: `${pages.origin}/noise`,
    width: String(side),
    height: String(side),
    keyId: account.keyId,
  };
  return { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe("a signed link's cache hit of a large image", () => {
  let image: Buffer;
  let etag: string;

  it('is captured, charged and answered with its bytes on the miss', async () => {
    const miss = await harness.open(link(LARGE_SIDE));
    expect(miss.status).toBe(200);
    expect(miss.headers['X-Cache']).toBe('MISS');
    image = miss.body;
    etag = String(miss.headers.ETag);
    expect(image.length).toBeGreaterThan(SIGNED_LINK_INLINE_HIT_BYTES);
    expect(await harness.credits.balance(account.accountId)).toBe(99);
  }, 120_000);

  it('is a free redirect to the stored file, which holds the same bytes', async () => {
    const hit = await harness.open(link(LARGE_SIDE));
    expect(hit.status).toBe(302);
    expect(hit.headers['X-Cache']).toBe('HIT');
    expect(hit.headers['X-Credits-Charged']).toBe('0');
    expect(hit.body.length).toBe(0);
    // Revalidating a redirect by an ETag would keep an address that may have died: it has none.
    expect(hit.headers.ETag).toBeUndefined();
    const cacheControl = String(hit.headers['Cache-Control']);
    const maxAge = Number(/max-age=(\d+)/.exec(cacheControl)?.[1]);
    expect(maxAge).toBeGreaterThan(0);
    expect(maxAge).toBeLessThanOrEqual(REDIRECT_MAX_AGE_SECONDS);
    expect(cacheControl).toBe(`public, max-age=${maxAge}, s-maxage=${maxAge}`);

    const location = String(hit.headers.Location);
    expect(location.startsWith(`${harness.delivery.s3.endpoint}/`)).toBe(true);
    const stored = await fetch(location);
    expect(stored.status).toBe(200);
    expect(stored.headers.get('content-type')).toBe('image/png');
    expect(stored.headers.get('etag')).toBe(etag);
    expect(sha256(Buffer.from(await stored.arrayBuffer()))).toBe(sha256(image));
    expect(await harness.credits.balance(account.accountId)).toBe(99);

    // Every hit on this version links to the same copy.
    const again = await harness.open(link(LARGE_SIDE));
    expect(again.status).toBe(302);
    expect(new URL(String(again.headers.Location)).pathname).toBe(new URL(location).pathname);
  }, 120_000);

  it('is still a 304 for a visitor that holds it', async () => {
    const revalidated = await harness.open(link(LARGE_SIDE), { 'if-none-match': etag });
    expect(revalidated.status).toBe(304);
  }, 120_000);

  it("is answered with its bytes to the account's own API key", async () => {
    const body = { url: `${pages.origin}/noise`, width: LARGE_SIDE, height: LARGE_SIDE, cache: true };
    const hit = await harness.shoot(account.apiKey, body);
    expect(hit.status).toBe(200);
    expect(hit.headers['X-Cache']).toBe('HIT');
    expect(sha256(hit.body)).toBe(sha256(image));
  }, 120_000);
});

describe("a signed link's cache hit of an image within the bound", () => {
  it('is answered with its bytes', async () => {
    const miss = await harness.open(link(SMALL_SIDE));
    expect(miss.status).toBe(200);
    const hit = await harness.open(link(SMALL_SIDE));
    expect(hit.status).toBe(200);
    expect(hit.headers['X-Cache']).toBe('HIT');
    expect(hit.headers.ETag).toBe(miss.headers.ETag);
    expect(sha256(hit.body)).toBe(sha256(miss.body));
  }, 120_000);
});
