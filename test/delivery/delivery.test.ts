import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import {
  decodeImage,
  near,
  RED,
  type ScreenshotHarness,
  type StreamedResponse,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';
import { dumpTable } from '../helpers/store';

/**
 * Delivery through the real handler, real Chromium, the embedded DynamoDB and the local S3 API (s3rver): the cache,
 * stored images with links, signed links and 304s, as a customer meets them. The rules behind each are in
 * test/rules/deliveryRules.test.ts.
 */

let pages: PageServer;
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  pages = await startPageServer({ '/red': solidPage('#ff0000'), '/other': solidPage('#0000ff') });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  account = await harness.newAccount();
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

afterEach(() => vi.restoreAllMocks());

const url = (path: string) => `${pages.origin}${path}`;
const md5 = (bytes: Buffer) => `"${createHash('md5').update(bytes).digest('hex')}"`;
const balance = (accountId = account.accountId) => harness.credits.balance(accountId);
/** Counts the captures Chromium is asked for from here on. */
const captures = () => vi.spyOn(harness.renderer, 'capture');

/** The answer with header names in lower case, as HTTP clients see them. */
function lowerCased(response: StreamedResponse): StreamedResponse {
  const headers = Object.fromEntries(
    Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), value]),
  );
  return { ...response, headers };
}
const shoot = async (...args: Parameters<ScreenshotHarness['shoot']>) =>
  lowerCased(await harness.shoot(...args));
const open = async (...args: Parameters<ScreenshotHarness['open']>) =>
  lowerCased(await harness.open(...args));

/** A signed link's query for the account's key. */
function signed(options: Record<string, string>, keyId = account.keyId, secret = account.signingSecret) {
  const query = { ...options, keyId };
  return { ...query, signature: signQuery(secret, canonicalQuery(query)) };
}

describe('the cache', () => {
  it('captures a miss, then answers the same request from storage: free, same bytes, Chromium not called', async () => {
    const body = { url: url('/red'), width: 640, height: 480, cache: true };
    const before = await balance();
    const miss = await shoot(account.apiKey, body);
    expect(miss.status).toBe(200);
    expect(miss.headers['x-cache']).toBe('MISS');
    expect(miss.headers['x-credits-charged']).toBe('1');

    const spy = captures();
    const hit = await shoot(account.apiKey, body);
    expect(hit.status).toBe(200);
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.headers['x-credits-charged']).toBe('0');
    expect(hit.headers.etag).toBe(miss.headers.etag);
    expect(hit.headers['content-type']).toBe('image/png');
    expect(hit.body.equals(miss.body)).toBe(true);
    expect(Number(hit.headers['x-ratelimit-remaining'])).toBe(
      Number(miss.headers['x-ratelimit-remaining']) - 1,
    );
    expect(spy).not.toHaveBeenCalled();
    expect(await balance()).toBe(before - 1);
  });

  it('hits whatever the order of fields and with defaults written out; misses on any other option', async () => {
    const body = { url: url('/red'), width: 700, format: 'jpeg', cache: true };
    expect((await shoot(account.apiKey, body)).headers['x-cache']).toBe('MISS');
    const reordered = {
      cache: true,
      quality: 90,
      format: 'jpeg',
      height: 1080,
      width: 700,
      url: url('/red'),
    };
    expect((await shoot(account.apiKey, reordered)).headers['x-cache']).toBe('HIT');
    for (const change of [{ width: 701 }, { format: 'png' }, { quality: 89 }, { url: url('/other') }]) {
      const response = await shoot(account.apiKey, { ...body, ...change });
      expect(response.headers['x-cache'], JSON.stringify(change)).toBe('MISS');
    }
  });

  it("never answers another account from this account's entry", async () => {
    const body = { url: url('/red'), width: 720, cache: true };
    await shoot(account.apiKey, body);
    const other = await harness.newAccount();
    const response = await shoot(other.apiKey, body);
    expect(response.headers['x-cache']).toBe('MISS');
    expect(await balance(other.accountId)).toBe(99);
  });

  it('expires an entry once its TTL has passed', async () => {
    const body = { url: url('/red'), width: 760, cache: true, cacheTtl: 60 };
    await shoot(account.apiKey, body);
    expect((await shoot(account.apiKey, body)).headers['x-cache']).toBe('HIT');
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 60_000);
    expect((await shoot(account.apiKey, body)).headers['x-cache']).toBe('MISS');
  });

  it('keeps the charge and the stored entry consistent when two identical misses race', async () => {
    const body = { url: url('/red'), width: 780, cache: true };
    const before = await balance();
    const answers = await Promise.all([shoot(account.apiKey, body), shoot(account.apiKey, body)]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const charged = answers.reduce((sum, answer) => sum + Number(answer.headers['x-credits-charged']), 0);
    expect(await balance()).toBe(before - charged);
    const hit = await shoot(account.apiKey, body);
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.headers.etag).toBe(md5(hit.body));
    expect(answers.map((answer) => answer.headers.etag)).toContain(hit.headers.etag);
  });
});

describe('response: json', () => {
  it('answers a pre-signed link to the local S3 API that downloads the very bytes the ETag names', async () => {
    const before = await balance();
    const response = await shoot(account.apiKey, {
      url: url('/red'),
      width: 500,
      height: 400,
      response: 'json',
    });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = response.json() as Record<string, unknown>;
    expect(body).toMatchObject({
      contentType: 'image/png',
      width: 500,
      height: 400,
      creditsCharged: 1,
      cache: 'BYPASS',
      etag: response.headers.etag,
    });
    expect(Math.abs(Number(body.expiresAt) - (Date.now() + 3_600_000))).toBeLessThan(60_000);
    expect(String(body.url)).toMatch(new RegExp(`^${harness.delivery.s3.endpoint}/`));
    expect(String(body.url)).toContain('X-Amz-Signature=');

    const download = await fetch(String(body.url));
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/png');
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.length).toBe(body.bytes);
    expect(md5(bytes)).toBe(body.etag);
    const image = await decodeImage(bytes);
    expect([image.width, image.height]).toEqual([500, 400]);
    expect(near(image.pixel(250, 200), RED)).toBe(true);
    expect(await balance()).toBe(before - 1);
  });

  it('answers a cached link without capturing again', async () => {
    const body = { url: url('/red'), width: 520, response: 'json', cache: true };
    const miss = (await shoot(account.apiKey, body)).json();
    const spy = captures();
    const hit = await shoot(account.apiKey, body);
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.json()).toMatchObject({ cache: 'HIT', creditsCharged: 0, etag: miss.etag, bytes: miss.bytes });
    expect(spy).not.toHaveBeenCalled();
    const bytes = Buffer.from(await (await fetch(String(hit.json().url))).arrayBuffer());
    expect(md5(bytes)).toBe(miss.etag);
  });
});

describe('If-None-Match', () => {
  it('answers 304 without a body or a charge when it names the cached image', async () => {
    const body = { url: url('/red'), width: 540, cache: true };
    const first = await shoot(account.apiKey, body);
    const before = await balance();
    const spy = captures();
    const conditional = await shoot(account.apiKey, body, {
      headers: { 'if-none-match': String(first.headers.etag) },
    });
    expect(conditional.status).toBe(304);
    expect(conditional.body.length).toBe(0);
    expect(conditional.headers.etag).toBe(first.headers.etag);
    expect(conditional.headers['x-credits-charged']).toBe('0');
    expect(conditional.headers['x-ratelimit-remaining']).toBeDefined();
    expect(spy).not.toHaveBeenCalled();
    expect(await balance()).toBe(before);
  });

  /**
   * Red team (round 22): a `response: "json"` request naming its answer's ETag got `304` with the image's public
   * Cache-Control, telling its client to keep a JSON whose link dies within the hour (the 200 is `no-store`).
   */
  it('answers a JSON request its JSON with a new link, not 304', async () => {
    const body = { url: url('/red'), width: 550, cache: true, response: 'json' };
    const first = await shoot(account.apiKey, body);
    const conditional = await shoot(account.apiKey, body, {
      headers: { 'if-none-match': String(first.headers.etag) },
    });
    expect(conditional.status).toBe(200);
    expect(conditional.headers['cache-control']).toBe('no-store');
    expect(conditional.headers['x-cache']).toBe('HIT');
    expect(conditional.json().etag).toBe(first.headers.etag);
  });

  it('answers the image when the ETag is another', async () => {
    const body = { url: url('/red'), width: 560, cache: true };
    await shoot(account.apiKey, body);
    const response = await shoot(account.apiKey, body, { headers: { 'if-none-match': '"stale"' } });
    expect(response.status).toBe(200);
    expect(response.headers['x-cache']).toBe('HIT');
  });
});

describe('signed links', () => {
  it('capture with the query options, cached by default, and answer 304 to the browser revalidating', async () => {
    const query = signed({ url: url('/red'), width: '600', height: '450' });
    const first = await open(query);
    expect(first.status).toBe(200);
    expect(first.headers['x-cache']).toBe('MISS');
    const image = await decodeImage(first.body);
    expect([image.width, image.height]).toEqual([600, 450]);

    const again = await open(query);
    expect(again.headers['x-cache']).toBe('HIT');
    const revalidated = await open(query, { 'if-none-match': String(first.headers.etag) });
    expect(revalidated.status).toBe(304);
  });

  it('refuse a tampered query or signature with 401', async () => {
    const query = signed({ url: url('/red'), width: '600' });
    const spy = captures();
    for (const tampered of [
      { ...query, width: '601' },
      { ...query, url: url('/other') },
      {
        ...query,
        signature:
          `${query.signature.slice(0, -2)}00` === query.signature
            ? `${query.signature.slice(0, -2)}11`
            : `${query.signature.slice(0, -2)}00`,
      },
      { ...query, signature: '' },
    ]) {
      const response = await open(tampered);
      expect(response.status).toBe(401);
      expect(response.json().error).toMatch(/signature/i);
      expect(response.headers['x-ratelimit-limit']).toBeUndefined();
    }
    expect(spy).not.toHaveBeenCalled();
  });

  it('refuse a link with any parameter appended with 401, one named __proto__ too', async () => {
    const query = signed({ url: url('/red'), width: '600' });
    const spy = captures();
    for (const name of ['__proto__', 'extra']) {
      const response = await open([...Object.entries(query), [name, '1']]);
      expect(response.status).toBe(401);
      expect(response.json().error).toBe('Invalid signature');
    }
    expect(spy).not.toHaveBeenCalled();
  });

  it('refuse a query that repeats a name with 400 naming it, even when the signature covers the last value', async () => {
    const query = signed({ url: url('/red'), width: '600' });
    const spy = captures();
    const before = await balance();
    const response = await open([['width', '900'], ...Object.entries(query)]);
    expect(response.status).toBe(400);
    expect(response.json().details).toEqual([
      { code: 'duplicate_parameter', path: ['width'], message: expect.stringContaining('more than once') },
    ]);
    expect(spy).not.toHaveBeenCalled();
    expect(await balance()).toBe(before);
  });

  it('refuse a parameter named like a built-in of JavaScript objects with 400 naming it, not a 500', async () => {
    const spy = captures();
    const before = await balance();
    for (const name of ['constructor', 'toString', 'hasOwnProperty', '__defineGetter__', '__proto__']) {
      const response = await open(signed({ url: url('/red'), [name]: '1' }));
      expect(response.status).toBe(400);
      expect(response.json()).toEqual({
        error: 'Invalid request body',
        details: [
          expect.objectContaining({ code: 'unrecognized_keys', message: expect.stringContaining(name) }),
        ],
      });
    }
    expect(spy).not.toHaveBeenCalled();
    expect(await balance()).toBe(before);
  });

  it('stop working once the key is revoked', async () => {
    const owner = await harness.newAccount();
    const keyQuery = signed({ url: url('/red'), width: '620' }, owner.keyId, owner.signingSecret);
    expect((await open(keyQuery)).status).toBe(200);
    await harness.manage('updateKey', {
      bearer: owner.token,
      pathParameters: { id: owner.keyId },
      body: { isActive: false },
    });
    const response = await open(keyQuery);
    expect(response.status).toBe(401);
    expect(response.json().error).toBe('API key has been revoked');
  });

  it('keep the signing secret out of the table: only its sealed form is stored', async () => {
    const table = await dumpTable(harness.store);
    expect(table).toContain(`SIGNKEY#${account.keyId}`);
    expect(table).not.toContain(account.signingSecret);
    expect(table).not.toContain(account.signingSecret.slice(8));
  });
});

describe('origin credentials', () => {
  it('are refused on a signed link with 400 naming the field, and nothing is charged or captured', async () => {
    const spy = captures();
    const before = await balance();
    for (const [field, value] of [
      ['headers', JSON.stringify({ Authorization: 'Bearer origin-secret' })],
      ['cookies', JSON.stringify([{ name: 'session', value: 'origin-secret' }])],
    ] as const) {
      const answer = await open(signed({ url: url('/red'), [field]: value }));
      expect(answer.status).toBe(400);
      expect(answer.json().details).toEqual([
        expect.objectContaining({ code: 'not_allowed_on_signed_link', path: [field] }),
      ]);
    }
    expect(spy).not.toHaveBeenCalled();
    expect(await balance()).toBe(before);
  });

  it('make the answer Cache-Control: private, also from the cache and in a 304', async () => {
    for (const credentials of [
      { headers: { 'X-Origin-Token': 'origin-secret' } },
      { cookies: [{ name: 'session', value: 'origin-secret' }] },
    ]) {
      const body = { url: url('/red'), width: 400, height: 320, cache: true, ...credentials };
      const miss = await shoot(account.apiKey, body);
      expect(miss.status).toBe(200);
      expect(miss.headers['cache-control']).toBe('private, max-age=3600');
      const hit = await shoot(account.apiKey, body);
      expect(hit.headers['x-cache']).toBe('HIT');
      expect(hit.headers['cache-control']).toBe('private, max-age=3600');
      const revalidated = await shoot(account.apiKey, body, {
        headers: { 'if-none-match': String(miss.headers.etag) },
      });
      expect(revalidated.status).toBe(304);
      expect(revalidated.headers['cache-control']).toBe('private, max-age=3600');
    }
  });

  it('absent, leave the answer public', async () => {
    const answer = await shoot(account.apiKey, { url: url('/red'), width: 400, height: 320 });
    expect(answer.headers['cache-control']).toMatch(/^public, /);
  });
});
