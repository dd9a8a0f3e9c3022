import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_GONE_BEFORE_RUN } from '../../shared/jobs/runJob';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, slowPage, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 22): a revoked key fails from its next request, and a synchronous request that waited for a place
 * fails with it (round 17), but the jobs it had queued still ran and were charged: a leaked key's batches kept
 * spending the account's credits after its owner revoked it. Now a job whose key is revoked or deleted before it runs
 * ends failed (401), its credits given back. Through the local service: its worker, its queue, its table.
 */

const SLOW_MS = 6_000;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    ...slowPage(SLOW_MS),
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    FREE_CREDITS: '10',
    // One slot: the job waits for it while the account's synchronous capture runs.
    MAX_CONCURRENT_CAPTURES: '1',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

describe('a job whose key is revoked before it runs', () => {
  it('ends failed 401 without a capture, and its credits go back', async () => {
    const account = await service.newAccount();
    const leaked = await (
      await service.request('/api/keys', { bearer: account.token, body: { name: 'leaked' } })
    ).json();
    const holding = service.request('/api/screenshot', {
      bearer: account.apiKey,
      body: { url: `${pages.origin}/slow` },
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const accepted = await service.request('/api/screenshot', {
      bearer: leaked.key,
      body: { url: `${pages.origin}/red?job`, async: true },
    });
    expect(accepted.status).toBe(202);
    const { id } = await accepted.json();
    const revoked = await service.request(`/api/keys/${leaked.id}`, {
      method: 'PATCH',
      bearer: account.token,
      body: { isActive: false },
    });
    expect(revoked.status).toBe(200);
    expect((await holding).status).toBe(200);

    const job = async () =>
      (
        (await (await service.request('/api/jobs', { bearer: account.token })).json()) as {
          jobs: { id: string; status: string; error?: unknown }[];
        }
      ).jobs.find((each) => each.id === id);
    await expect.poll(async () => (await job())?.status, { timeout: 30_000 }).toBe('failed');
    expect((await job())?.error).toEqual({ status: 401, message: KEY_GONE_BEFORE_RUN });
    // The synchronous capture's credit only: the job's went back.
    expect(await service.balance(account.token)).toBe(9);
    expect(pages.hits.filter((hit) => hit.startsWith('/red'))).toEqual([]);
  }, 60_000);
});
