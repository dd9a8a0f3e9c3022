import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newJobId, STRANDED_AFTER_MS } from '../../shared/jobs/job';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { DynamoJobStore } from '../../shared/store/dynamoJobStore';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * `npm start` runs the sweep of stranded jobs on an interval: a job whose item was written and whose message never
 * was (the process was killed in between) runs to the end on the real worker and Chromium, charged once.
 */

const BALANCE = 5;
let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({ '/green': solidPage('#00ff00') });
  service = await startTestLocalService(
    {
      ALLOW_PRIVATE_HOSTS: pages.hostPort,
      FREE_CREDITS: String(BALANCE),
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    { sweepPeriodMs: 500 },
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

describe('the local service', () => {
  it('runs a job that was written and never queued, charged once', async () => {
    const { accountId, keyId, apiKey, token } = await service.newAccount();
    const db = DynamoDBDocumentClient.from(service.dynamo.client);
    const tableName = process.env.TABLE_NAME ?? 'screenshot-service';
    // What an accepting process killed between its two writes leaves: the credits reserved, the item written.
    await new DynamoCreditLedger(db, tableName).reserve(accountId, 1);
    const createdAt = Date.now() - STRANDED_AFTER_MS;
    const id = newJobId(createdAt);
    await new DynamoJobStore(db, tableName).create([
      {
        id,
        accountId,
        keyId,
        status: 'queued',
        createdAt,
        startedAt: null,
        finishedAt: null,
        request: { url: `${pages.origin}/green`, response: 'json' },
        cost: 1,
        result: null,
        error: null,
        webhook: null,
        runs: 0,
        sweepAt: createdAt + STRANDED_AFTER_MS,
      },
    ]);
    const until = Date.now() + 90_000;
    let job: { status?: string } = {};
    while (job.status !== 'succeeded' && job.status !== 'failed' && Date.now() < until) {
      await sleep(250);
      job = await (await service.request(`/api/jobs/${id}`, { bearer: apiKey })).json();
    }
    expect(job).toMatchObject({
      id,
      status: 'succeeded',
      result: { contentType: 'image/png', creditsCharged: 1 },
    });
    // A few more sweeps: none sends it again, and nothing more is charged.
    await sleep(1_500);
    expect((await (await service.request('/api/credits', { bearer: token })).json()).balance).toBe(
      BALANCE - 1,
    );
  }, 120_000);
});
