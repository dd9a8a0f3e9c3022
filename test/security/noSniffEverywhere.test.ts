import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../shared/routes';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 31): the session routes' answers (the key list, a new key, the webhook secret) carried no
 * `X-Content-Type-Options: nosniff`, which the screenshot and job routes did: behind the dashboard's CDN it is added,
 * but the API Gateway URL is a base URL of its own (docs/api.md 1). Fixed: the one HTTP adapter adds it to every
 * answer. Checked for every route, answered and refused, through the adapter the local server and Lambda share.
 */

let service: TestLocalService;
let account: Awaited<ReturnType<TestLocalService['newAccount']>>;

beforeAll(async () => {
  service = await startTestLocalService();
  account = await service.newAccount();
});

afterAll(async () => {
  await service?.close();
});

const sniffingOf = (response: Response) => response.headers.get('x-content-type-options');

describe('every answer of the API is sent with nosniff', () => {
  it.each(['/api/credits', '/api/keys', '/api/usage', '/api/webhook-secret', '/api/jobs'])(
    'GET %s with a session token',
    async (path) => {
      const response = await service.request(path, { bearer: account.token });
      expect(response.status).toBe(200);
      expect(sniffingOf(response)).toBe('nosniff');
    },
  );

  it('a new key, a revoked one and a rotated secret', async () => {
    const created = await service.request('/api/keys', { bearer: account.token, body: { name: 'other' } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const revoked = await service.request(`/api/keys/${id}`, {
      method: 'PATCH',
      bearer: account.token,
      body: { isActive: false },
    });
    const rotated = await service.request('/api/webhook-secret/rotate', {
      method: 'POST',
      bearer: account.token,
    });
    for (const response of [created, revoked, rotated]) expect(sniffingOf(response)).toBe('nosniff');
    expect([revoked.status, rotated.status]).toEqual([200, 200]);
  });

  it('the OpenAPI document', async () => {
    const response = await service.request('/api/openapi.json');
    expect(response.status).toBe(200);
    expect(sniffingOf(response)).toBe('nosniff');
  });

  it.each(ROUTES.map((route) => [route.method, route.path] as const))(
    '%s %s refused without a credential',
    async (method, path) => {
      const response = await service.request(path.replace('{id}', 'none'), {
        method,
        ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }),
      });
      if (path !== '/api/openapi.json') expect(response.status).toBe(401);
      expect(sniffingOf(response)).toBe('nosniff');
    },
  );
});
