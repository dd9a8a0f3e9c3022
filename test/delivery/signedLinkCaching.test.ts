import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CACHE_CONTROL, UNCACHED_LINK_CACHE_CONTROL } from '../../shared/http/screenshotRoute';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * How long a shared cache (the signed-link CDN) may keep a signed link's answer: what is left of the link's own
 * `cacheTtl`, told by `s-maxage`, through the same handler Lambda runs.
 */

let pages: PageServer;
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  pages = await startPageServer({ '/red': solidPage('#ff0000') });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  account = await harness.newAccount();
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

function link(options: Record<string, string>) {
  const query = { url: `${pages.origin}/red`, keyId: account.keyId, ...options };
  return { ...query, signature: signQuery(account.signingSecret, canonicalQuery(query)) };
}

/** The `max-age` and `s-maxage` of an answer's Cache-Control, and the rest of it. */
function lifetimes(header: unknown) {
  const text = String(header);
  const seconds = (name: string) =>
    Number(new RegExp(`(?:^|, )${name}=(\\d+)`).exec(text)?.[1] ?? Number.NaN);
  return { text, maxAge: seconds('max-age'), sMaxAge: seconds('s-maxage') };
}

describe("a signed link's Cache-Control", () => {
  it("tells shared caches what is left of the link's cacheTtl, the miss and the hits after it", async () => {
    const query = link({ width: '400', cacheTtl: '120' });
    const miss = await harness.open(query);
    expect(miss.status).toBe(200);
    expect(miss.headers['X-Cache']).toBe('MISS');
    const first = lifetimes(miss.headers['Cache-Control']);
    expect(first.text).toMatch(/^public, /);
    expect(first.sMaxAge).toBeGreaterThan(100);
    expect(first.sMaxAge).toBeLessThanOrEqual(120);
    // A browser keeps it no longer than the edge may, and no stale copy is served past it.
    expect(first.maxAge).toBe(first.sMaxAge);
    expect(first.text).not.toContain('stale-while-revalidate');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const hit = await harness.open(query);
    expect(hit.headers['X-Cache']).toBe('HIT');
    const later = lifetimes(hit.headers['Cache-Control']);
    expect(later.sMaxAge).toBeLessThan(first.sMaxAge);
    expect(later.sMaxAge).toBeGreaterThan(100);
    const revalidated = await harness.open(query, { 'if-none-match': String(hit.headers.ETag) });
    expect(revalidated.status).toBe(304);
    expect(lifetimes(revalidated.headers['Cache-Control']).sMaxAge).toBeLessThanOrEqual(later.sMaxAge);
  });

  it('keeps a browser at an hour at most, the edge at the whole cacheTtl', async () => {
    const answer = await harness.open(link({ width: '410', cacheTtl: '86400' }));
    expect(answer.status).toBe(200);
    const { maxAge, sMaxAge } = lifetimes(answer.headers['Cache-Control']);
    expect(maxAge).toBe(3600);
    expect(sMaxAge).toBeGreaterThan(86_000);
    expect(sMaxAge).toBeLessThanOrEqual(86_400);
  });

  it('keeps a link without the cache an hour at most, with no stale copy after it; POST answers have the fixed lifetime', async () => {
    const uncached = await harness.open(link({ width: '420', cache: 'false' }));
    expect(uncached.status).toBe(200);
    expect(uncached.headers['Cache-Control']).toBe(UNCACHED_LINK_CACHE_CONTROL);
    expect(lifetimes(uncached.headers['Cache-Control']).maxAge).toBe(3600);
    expect(uncached.headers['Cache-Control']).not.toContain('stale');
    const body = { url: `${pages.origin}/red`, width: 430, cache: true, cacheTtl: 120 };
    expect((await harness.shoot(account.apiKey, body)).headers['Cache-Control']).toBe(CACHE_CONTROL);
    expect((await harness.shoot(account.apiKey, body)).headers['Cache-Control']).toBe(CACHE_CONTROL);
  });
});
