import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../shared/openapi/document';
import { ROUTES } from '../../shared/routes';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { signedQuery } from '../helpers/memoryScreenshot';
import { type PageServer, solidPage, startPageServer, unusedPort } from '../helpers/pageServer';
import { awayFromWindowEdge, SUITE_MARGIN_MS, SUITE_WAIT_HOOK_TIMEOUT_MS } from '../helpers/rateWindow';
import { type DescribedApi, describedApi, expectDescribed as expectDescribedIn } from './documentSchemas';

/**
 * Real answers of the local service, checked against the document: each status must be described for its
 * operation, each body must match the described schema, each required header must be there. This is what keeps
 * the response schemas in shared/openapi/schemas.ts honest, since the handlers build their bodies themselves.
 *
 * The account starts with 2 credits and may make 5 screenshot requests this hour, so one visit runs through
 * 200, 400, 402, 415, 500 and then 429 (the 401 before them is not counted: nobody was authenticated).
 */

let api: DescribedApi;
let pages: PageServer;
let service: TestLocalService;
let closedPort: number;
let token: string;
let apiKey: string;

beforeAll(async () => {
  await awayFromWindowEdge(SUITE_MARGIN_MS);
  [api, pages, closedPort] = await Promise.all([
    describedApi(),
    startPageServer({ '/page': solidPage('#ff8800') }),
    unusedPort(),
  ]);
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: `${pages.hostPort},127.0.0.1:${closedPort}`,
    FREE_CREDITS: '2',
    RATE_LIMIT_PER_HOUR: '5',
  });
  token = service.idp.mintToken('contract-account');
}, SUITE_WAIT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

const expectDescribed = (method: string, path: string, response: Response) =>
  expectDescribedIn(api, method, path, response);

const shoot = (body: unknown, key: string | undefined = apiKey, contentType = 'application/json') =>
  fetch(`${service.url}/api/screenshot`, {
    method: 'POST',
    headers: { 'Content-Type': contentType, ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('every route the local server answers', () => {
  it.each(ROUTES.map((route) => [route.method, route.path, route] as const))(
    'answers %s %s without credentials as described',
    async (method, path, route) => {
      const url = path.replace('{id}', 'key_000000000000000000000');
      const response = await fetch(`${service.url}${url}`, {
        method,
        ...(method === 'GET' || method === 'DELETE'
          ? {}
          : { headers: { 'Content-Type': 'application/json' }, body: '{}' }),
      });
      expect(response.status).toBe(route.auth === 'none' ? 200 : 401);
      await expectDescribed(method, path, response);
    },
  );
});

describe('GET /api/openapi.json', () => {
  it('serves this very document, publicly cacheable', async () => {
    const response = await service.request('/api/openapi.json');
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });
});

describe('the key-management answers', () => {
  let keyId: string;

  it('creates a key (201) as described', async () => {
    const response = await service.request('/api/keys', { bearer: token, body: { name: 'contract' } });
    const body = (await expectDescribed('POST', '/api/keys', response)) as { key: string; id: string };
    expect(response.status).toBe(201);
    apiKey = body.key;
    keyId = body.id;
  });

  it('refuses an invalid name (400) with details as described', async () => {
    const response = await service.request('/api/keys', { bearer: token, body: { name: '' } });
    expect(response.status).toBe(400);
    expect(await expectDescribed('POST', '/api/keys', response)).toMatchObject({
      details: [{ path: ['name'] }],
    });
  });

  it('lists keys (200) as described', async () => {
    const response = await service.request('/api/keys', { bearer: token });
    expect(response.status).toBe(200);
    await expectDescribed('GET', '/api/keys', response);
  });

  it('reports the credit balance (200) as described', async () => {
    const response = await service.request('/api/credits', { bearer: token });
    expect(await expectDescribed('GET', '/api/credits', response)).toEqual({ balance: 2 });
  });

  it('revokes (200), refuses reactivation (409) and unknown keys (404) as described', async () => {
    const other = (await (
      await service.request('/api/keys', { bearer: token, body: { name: 'other' } })
    ).json()) as {
      id: string;
    };
    const patch = (id: string, isActive: boolean) =>
      service.request(`/api/keys/${id}`, { method: 'PATCH', bearer: token, body: { isActive } });
    const statuses: number[] = [];
    for (const response of [
      await patch(other.id, false),
      await patch(other.id, true),
      await patch('key_000000000000000000000', false),
    ]) {
      statuses.push(response.status);
      await expectDescribed('PATCH', '/api/keys/{id}', response);
    }
    expect(statuses).toEqual([200, 409, 404]);
    const deleted = await service.request(`/api/keys/${other.id}`, { method: 'DELETE', bearer: token });
    expect(deleted.status).toBe(200);
    await expectDescribed('DELETE', '/api/keys/{id}', deleted);
    expect(keyId).toBeDefined();
  });
});

describe('the screenshot answers', () => {
  it('refuses a missing key (401) as described', async () => {
    const response = await shoot({ url: `${pages.origin}/page` }, '');
    expect(response.status).toBe(401);
    await expectDescribed('POST', '/api/screenshot', response);
  });

  it('returns the image (200) with the described headers', async () => {
    const response = await shoot({ url: `${pages.origin}/page`, width: 320, height: 320, format: 'jpeg' });
    expect(response.status).toBe(200);
    await expectDescribed('POST', '/api/screenshot', response);
    expect(response.headers.get('content-type')).toBe('image/jpeg');
    expect(Number(response.headers.get('content-length'))).toBe((await response.arrayBuffer()).byteLength);
  });

  it('refuses an invalid body (400) as described', async () => {
    const response = await shoot({ url: `${pages.origin}/page`, width: 10 });
    expect(response.status).toBe(400);
    await expectDescribed('POST', '/api/screenshot', response);
  });

  it('refuses a capture the balance cannot pay for (402) as described', async () => {
    const response = await shoot({ url: `${pages.origin}/page`, fullPage: true });
    expect(response.status).toBe(402);
    expect(await expectDescribed('POST', '/api/screenshot', response)).toMatchObject({
      required: 2,
      available: 1,
    });
  });

  it('refuses a body that is not JSON (415) as described', async () => {
    const response = await shoot('url=x', apiKey, 'text/plain');
    expect(response.status).toBe(415);
    await expectDescribed('POST', '/api/screenshot', response);
  });

  it('reports a capture that failed (500) with url and message as described', async () => {
    const url = `http://127.0.0.1:${closedPort}/`;
    const response = await shoot({ url });
    expect(response.status).toBe(500);
    expect(await expectDescribed('POST', '/api/screenshot', response)).toMatchObject({
      url,
      message: expect.any(String),
    });
  });

  it('refuses the request over the hourly limit (429) with Retry-After as described', async () => {
    const response = await shoot({ url: `${pages.origin}/page` });
    expect(response.status).toBe(429);
    await expectDescribed('POST', '/api/screenshot', response);
  });
});

describe('the usage answers', () => {
  it('reports the visit above (200) as described: one capture, every refusal after authentication failed', async () => {
    // Records are written just after each answer is sent, so the last one may land a moment after its answer.
    await expect
      .poll(async () => {
        const response = await service.request('/api/usage', { bearer: token });
        expect(response.status).toBe(200);
        const { days } = (await expectDescribed('GET', '/api/usage', response)) as {
          days: { captures: number; failed: number; credits: number }[];
        };
        const total = (field: 'captures' | 'failed' | 'credits') =>
          days.reduce((sum, day) => sum + day[field], 0);
        return [total('captures'), total('failed'), total('credits')];
      })
      .toEqual([1, 5, 1]);
  });

  it('refuses a window longer than allowed (400) with details as described', async () => {
    const response = await service.request(`/api/usage?from=0&to=${Date.now()}`, { bearer: token });
    expect(response.status).toBe(400);
    expect(await expectDescribed('GET', '/api/usage', response)).toMatchObject({
      details: [{ path: ['to'] }],
    });
  });
});

describe('the webhook secret answers', () => {
  it('answers GET /api/webhook-secret and its rotation (200) as described', async () => {
    const read = await service.request('/api/webhook-secret', { bearer: token });
    expect(read.status).toBe(200);
    const { secret } = (await expectDescribed('GET', '/api/webhook-secret', read)) as { secret: string };
    const rotated = await service.request('/api/webhook-secret/rotate', { method: 'POST', bearer: token });
    expect(rotated.status).toBe(200);
    expect(await expectDescribed('POST', '/api/webhook-secret/rotate', rotated)).not.toEqual({ secret });
  });
});

/**
 * Red team (round 23): a signed link's answers from the cache carry no rate-limit headers (they cost no budget), yet
 * the document required them; and no 304 declared the Cache-Control it carries.
 */
describe('the signed-link answers', () => {
  it('answer a capture, a cache hit and a 304 as described', async () => {
    const owner = service.idp.mintToken('contract-links');
    const key = await (await service.request('/api/keys', { bearer: owner, body: { name: 'links' } })).json();
    const query = signedQuery(key, { url: `${pages.origin}/page`, width: '320', height: '320' });
    const link = `${service.url}/api/screenshot?${new URLSearchParams(query)}`;
    const captured = await fetch(link);
    expect(captured.headers.get('x-cache')).toBe('MISS');
    await expectDescribed('GET', '/api/screenshot', captured);
    const hit = await fetch(link);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(hit.headers.get('x-ratelimit-limit')).toBeNull();
    await expectDescribed('GET', '/api/screenshot', hit);
    const notModified = await fetch(link, { headers: { 'If-None-Match': String(hit.headers.get('etag')) } });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('cache-control')).toBe(hit.headers.get('cache-control'));
    await expectDescribed('GET', '/api/screenshot', notModified);
    for (const method of ['GET', 'POST'])
      expect(Object.keys(api.operation(method, '/api/screenshot').responses['304'].headers)).toContain(
        'Cache-Control',
      );
  });
});
