import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TABLE_ACTIONS } from '../../infra/tableAccess';
import type { RouteDefinition } from '../../shared/routes';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { enforceTableGrant } from '../helpers/tableGrant';

/**
 * Red team (round 25, a review of the deployed stack): GET /api/keys and GET /api/usage read the account item for the
 * keys' lastUsed (GetItem), which their grants in infra/tableAccess.ts did not hold: deployed, IAM refused it, and
 * every key list and usage page answered 500. The stack test compared the template with that same list, which could
 * not see it.
 *
 * Here every route's request runs through the local service with its deployed grant enforced as IAM would: the table
 * refuses any command whose action the route's function may not call. Background work (the sweep's index query, the
 * job worker) runs outside these windows.
 */

let service: TestLocalService;
/** The grant of the route under test; undefined: nothing enforced. */
let grant: readonly string[] | undefined;
const refused: string[] = [];
/** When the table was last sent a command, enforced or not. */
let lastCommandAt = 0;

beforeAll(async () => {
  // No sweep while the test runs: its index query is the sweeper's, under a grant of its own.
  service = await startTestLocalService(
    { FREE_CREDITS: '20', POWERTOOLS_METRICS_DISABLED: 'true' },
    { sweepPeriodMs: 60 * 60_000 },
  );
  enforceTableGrant(service.dynamo.client, (action) => {
    lastCommandAt = Date.now();
    if (!grant || grant.includes(action)) return false;
    refused.push(action);
    return true;
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

/** Runs `send` under `route`'s grant: its status, and the actions the table refused. */
async function underGrant(route: RouteDefinition['handler'], send: () => Promise<Response>) {
  grant = TABLE_ACTIONS[route];
  try {
    const response = await send();
    await response.arrayBuffer();
    return { status: response.status, refused: [...refused] };
  } finally {
    grant = undefined;
    refused.length = 0;
  }
}

const HTML = { html: '<p style="font-size:40px">granted</p>', width: 320, height: 320 };

describe("every route under its function's deployed table grant", () => {
  it('answers the key, credit, usage and webhook-secret routes of the dashboard', async () => {
    const { token } = await service.newAccount();
    const session =
      (path: string, init: { method?: string; body?: unknown } = {}) =>
      () =>
        service.request(path, { ...init, bearer: token });
    expect(await underGrant('listKeys', session('/api/keys'))).toEqual({ status: 200, refused: [] });
    expect(await underGrant('getUsage', session('/api/usage'))).toEqual({ status: 200, refused: [] });
    expect(await underGrant('getCredits', session('/api/credits'))).toEqual({ status: 200, refused: [] });
    const created = await service.request('/api/keys', { bearer: token, body: { name: 'granted' } });
    const { id } = (await created.json()) as { id: string };
    expect(await underGrant('createKey', session('/api/keys', { body: { name: 'another' } }))).toEqual({
      status: 201,
      refused: [],
    });
    expect(
      await underGrant(
        'updateKey',
        session(`/api/keys/${id}`, { method: 'PATCH', body: { isActive: false } }),
      ),
    ).toEqual({ status: 200, refused: [] });
    expect(await underGrant('deleteKey', session(`/api/keys/${id}`, { method: 'DELETE' }))).toMatchObject({
      refused: [],
    });
    expect(await underGrant('webhookSecret', session('/api/webhook-secret'))).toEqual({
      status: 200,
      refused: [],
    });
    expect(
      await underGrant('webhookSecret', session('/api/webhook-secret/rotate', { method: 'POST', body: {} })),
    ).toEqual({ status: 200, refused: [] });
    expect(await underGrant('getOpenApi', () => service.request('/api/openapi.json'))).toEqual({
      status: 200,
      refused: [],
    });
  });

  it('captures through the screenshot and MCP routes, charging and recording as ever', async () => {
    const { apiKey, token } = await service.newAccount();
    expect(
      await underGrant('screenshot', () =>
        service.request('/api/screenshot', { bearer: apiKey, body: HTML }),
      ),
    ).toEqual({ status: 200, refused: [] });
    const mcp = await underGrant('mcp', () =>
      fetch(`${service.url}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'take_screenshot', arguments: HTML },
        }),
      }),
    );
    expect(mcp).toEqual({ status: 200, refused: [] });
    // Both charged, once each, and their reservations settled.
    await vi.waitFor(async () => expect(await service.balance(token)).toBe(18), { timeout: 10_000 });
  });

  it('accepts a batch and answers its jobs and itself once they ran', async () => {
    const { apiKey, token } = await service.newAccount();
    let batchId = '';
    const created = await underGrant('createBatch', async () => {
      const response = await service.request('/api/batches', { bearer: apiKey, body: { requests: [HTML] } });
      batchId = ((await response.clone().json()) as { id: string }).id;
      return response;
    });
    expect(created).toEqual({ status: 202, refused: [] });
    // The worker's own grant is not under test here: its work runs first.
    const batch = await vi.waitFor(
      async () => {
        const body = (await (
          await service.request(`/api/batches/${batchId}`, { bearer: apiKey })
        ).json()) as {
          status: string;
          jobs: { id: string }[];
        };
        expect(body.status).toBe('completed');
        return body;
      },
      { timeout: 60_000, interval: 250 },
    );
    const jobId = batch.jobs[0]?.id ?? '';
    // The worker's last writes (the job's usage record, its batch) land before the reads under test begin.
    await service.usageLastHour(token, 1);
    await vi.waitFor(() => expect(Date.now() - lastCommandAt).toBeGreaterThan(500), {
      timeout: 10_000,
      interval: 100,
    });
    expect(
      await underGrant('getBatch', () => service.request(`/api/batches/${batchId}`, { bearer: apiKey })),
    ).toEqual({ status: 200, refused: [] });
    expect(
      await underGrant('getJob', () => service.request(`/api/jobs/${jobId}`, { bearer: apiKey })),
    ).toEqual({
      status: 200,
      refused: [],
    });
    expect(await underGrant('listJobs', () => service.request('/api/jobs', { bearer: token }))).toEqual({
      status: 200,
      refused: [],
    });
  }, 90_000);
});
