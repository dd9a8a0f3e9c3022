import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import { type LocalService, type LocalServiceOptions, startLocalService } from '../../local/localService';

export interface TestLocalService extends LocalService {
  dataDir: string;
  /** fetch against the service with an optional Bearer credential and JSON body. */
  request(path: string, init?: { method?: string; bearer?: string; body?: unknown }): Promise<Response>;
  /** A session token and an API key for a new account. */
  newAccount(): Promise<{ accountId: string; token: string; apiKey: string; keyId: string }>;
  /** POST `body` as JSON with an API key and an Idempotency-Key: the answer's status and JSON body. */
  postKeyed(
    path: string,
    init: { apiKey: string; key: string; body: unknown },
  ): Promise<{ status: number; body: { id?: string } & Record<string, unknown> }>;
  /** The account's balance, read with its session token. */
  balance(token: string): Promise<number>;
  /** The account's usage of the last hour (days summed), once it counts `requests` (usage is written late). */
  usageLastHour(
    token: string,
    requests: number,
  ): Promise<{ captures: number; failed: number; credits: number }>;
}

/** The whole local service over HTTP, as `npm start` runs it, on a free port with a throwaway data dir. */
export async function startTestLocalService(
  env: Record<string, string> = {},
  options: Pick<
    LocalServiceOptions,
    | 'webhookRetryDelaySeconds'
    | 'sweepPeriodMs'
    | 'sendStallMs'
    | 'inMemoryStore'
    | 'maxConnections'
    | 'headersTimeoutMs'
  > = {},
): Promise<TestLocalService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-service-'));
  const service = await startLocalService({
    dataDir,
    // The table in memory unless a test needs its files, as `npm start` keeps them.
    inMemoryStore: true,
    env: { ...process.env, ...env },
    ...options,
  });
  let accounts = 0;
  const request: TestLocalService['request'] = (path, init = {}) =>
    fetch(`${service.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        ...(init.bearer ? { Authorization: `Bearer ${init.bearer}` } : {}),
        ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body:
        init.body === undefined
          ? undefined
          : typeof init.body === 'string'
            ? init.body
            : JSON.stringify(init.body),
    });
  return {
    ...service,
    dataDir,
    request,
    async newAccount() {
      const accountId = `acct-${++accounts}-${Math.random().toString(36).slice(2)}`;
      const token = service.idp.mintToken(accountId);
      const created = await (await request('/api/keys', { bearer: token, body: { name: 'test' } })).json();
      return { accountId, token, apiKey: created.key, keyId: created.id };
    },
    async postKeyed(path, { apiKey, key, body }) {
      const response = await fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'Content-Type': 'application/json',
          'Idempotency-Key': key,
        },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: await response.json() };
    },
    async balance(token) {
      return ((await (await request('/api/credits', { bearer: token })).json()) as { balance: number })
        .balance;
    },
    async usageLastHour(token, requests) {
      const total = { captures: 0, failed: 0, credits: 0 };
      await vi.waitFor(
        async () => {
          const from = Date.now() - 3_600_000;
          const { days } = (await (await request(`/api/usage?from=${from}`, { bearer: token })).json()) as {
            days: (typeof total)[];
          };
          for (const field of ['captures', 'failed', 'credits'] as const)
            total[field] = days.reduce((sum, day) => sum + day[field], 0);
          expect(total.captures + total.failed).toBe(requests);
        },
        { timeout: 10_000 },
      );
      return total;
    },
    async close() {
      await service.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
