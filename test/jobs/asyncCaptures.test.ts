import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListTablesCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { DeleteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSigningKeyFile } from '../../local/embeddedS3';
import { withinMetadataBudget } from '../../shared/capture/metadataBudget';
import { MAX_METADATA_PROPERTIES, MAX_METADATA_TEXT } from '../../shared/capture/renderer';
import { MAX_QUEUED_HTML_BYTES } from '../../shared/screenshot/schema';
import { PAGE_METADATA_SUFFIX } from '../../shared/store/s3ImageStore';
import { itemKey } from '../../shared/store/table';
import { createWebhookSecrets } from '../../shared/wiring/webhooks';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { localS3Client } from '../helpers/store';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

const BALANCE = 20;

/** Where the page of the largest metadata moves itself: a URL far past the metadata's budget. */
const LONG_PATH = `/moved?${'a'.repeat(500_000)}`;
/** As many properties, as long, as metadata keeps: 64 og: and 64 twitter: of 2,048 characters each. */
const fullProperties = (prefix: string) =>
  Object.fromEntries(
    Array.from({ length: MAX_METADATA_PROPERTIES }, (_, index) => [
      `p${index}`,
      `${prefix}${index}`.padEnd(MAX_METADATA_TEXT, 'v'),
    ]),
  );
const largestMetadataPage = () => {
  const meta = ['og', 'twitter']
    .flatMap((prefix) =>
      Object.entries(fullProperties(prefix)).map(
        ([key, value]) => `<meta property="${prefix}:${key}" content="${value}">`,
      ),
    )
    .join('');
  return solidPage('#00ff00', `${meta}<script>history.replaceState(null, '', '${LONG_PATH}')</script>`);
};

let pages: PageServer;
let receiver: WebhookReceiver;
/** Fails the first three attempts at /flaky, answers 204 otherwise. */
let flakyAttempts = 0;
let service: TestLocalService;
/** What /credentialed was sent. */
const credentialed: { token: unknown; cookie: unknown }[] = [];

beforeAll(async () => {
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    '/credentialed': (req, res) => {
      credentialed.push({ token: req.headers['x-api-token'], cookie: req.headers.cookie });
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>signed in</p>');
    },
    '/largest-metadata': largestMetadataPage(),
    '/broken': (_, res) => {
      res.writeHead(500, { 'Content-Type': 'text/html' }).end('<p>broken</p>');
    },
  });
  receiver = await startWebhookReceiver((request, response) => {
    if (request.path === '/flaky' && ++flakyAttempts <= 3) response.writeHead(503).end();
    else response.writeHead(204).end();
  });
  service = await startTestLocalService(
    {
      ALLOW_PRIVATE_HOSTS: `${pages.hostPort},${receiver.hostPort}`,
      FREE_CREDITS: String(BALANCE),
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    // Seconds instead of minutes: the schedule's shape is the webhook module's own test.
    { webhookRetryDelaySeconds: (attempt) => (attempt < 8 ? 1 : undefined) },
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await receiver?.close();
  await pages?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON answers, read field by field
type Json = Record<string, any>;

async function post(
  path: string,
  apiKey: string,
  body: unknown,
  idempotencyKey?: string,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const response = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${apiKey}`,
      'Content-Type': 'application/json',
      ...(idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

async function get(path: string, bearer: string): Promise<{ status: number; body: Json }> {
  const response = await service.request(path, { bearer });
  return { status: response.status, body: (await response.json()) as Json };
}

async function balanceOf(token: string): Promise<number> {
  return (await get('/api/credits', token)).body.balance;
}

/** Polls GET `path` until `done` says so (jobs run from the queue, on real Chromium). */
async function waitFor(path: string, apiKey: string, done: (body: Json) => boolean): Promise<Json> {
  const until = Date.now() + 90_000;
  for (;;) {
    const { body } = await get(path, apiKey);
    if (done(body)) return body;
    if (Date.now() > until) throw new Error(`Still not done: ${JSON.stringify(body)}`);
    await sleep(200);
  }
}

const finished = (job: Json) => job.status === 'succeeded' || job.status === 'failed';

async function webhooksFor(subjectId: string, count = 1) {
  const until = Date.now() + 60_000;
  for (;;) {
    const got = receiver.received.filter((request) => JSON.parse(request.body).data?.id === subjectId);
    if (got.length >= count) return got;
    if (Date.now() > until) throw new Error(`${got.length} webhooks for ${subjectId}`);
    await sleep(200);
  }
}

async function secretOf(accountId: string): Promise<string> {
  const env = { ...process.env, SIGNING_KEY_FILE: localSigningKeyFile(service.dataDir) };
  return createWebhookSecrets(service.dynamo.client, env).reveal(accountId, Date.now());
}

describe('an async capture', () => {
  it('answers 202 with the job and Location, runs from the queue, and charges its credits once', async () => {
    const account = await service.newAccount();
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/red`,
      async: true,
      webhookUrl: `${receiver.origin}/hook`,
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({
      id: expect.stringMatching(/^job_/),
      status: 'queued',
      createdAt: expect.any(Number),
      statusUrl: `${service.url}/api/jobs/${accepted.body.id}`,
    });
    expect(accepted.headers.get('location')).toBe(accepted.body.statusUrl);
    // Reserved at once.
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);

    const job = await waitFor(`/api/jobs/${accepted.body.id}`, account.apiKey, finished);
    expect(job).toMatchObject({
      id: accepted.body.id,
      status: 'succeeded',
      createdAt: accepted.body.createdAt,
      error: null,
      result: { contentType: 'image/png', width: 1920, height: 1080, creditsCharged: 1, cache: 'BYPASS' },
    });
    expect(job.startedAt).toBeGreaterThanOrEqual(job.createdAt);
    expect(job.finishedAt).toBeGreaterThanOrEqual(job.startedAt);
    expect(job.result.expiresAt).toBeGreaterThan(Date.now() + 59 * 60_000);
    const image = await fetch(job.result.url);
    expect(image.status).toBe(200);
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
  });

  it('runs the job of a key made before signed links, which has no signing item (red team, round 28)', async () => {
    const account = await service.newAccount();
    // Keys of that time had a listing and an authentication item only.
    const { TableNames: [table] = [] } = await service.dynamo.client.send(new ListTablesCommand({}));
    await DynamoDBDocumentClient.from(service.dynamo.client).send(
      new DeleteCommand({ TableName: table, Key: itemKey.signingKey(account.keyId) }),
    );
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/red`,
      async: true,
    });
    expect(accepted.status).toBe(202);
    const job = await waitFor(`/api/jobs/${accepted.body.id}`, account.apiKey, finished);
    expect(job).toMatchObject({ status: 'succeeded', error: null });
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
  });

  it("keeps the request's URL, script, headers and cookies sealed in the table while it waits, and captures with them", async () => {
    const account = await service.newAccount();
    const token = `tok-${randomUUID()}`;
    const session = `ses-${randomUUID()}`;
    // Red team (round 30): a URL's query and a script that signs in lay in clear in the job's item for 7 days.
    const magic = `magic-${randomUUID()}`;
    const script = `script-${randomUUID()}`;
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/credentialed?link=${magic}`,
      js: `localStorage.setItem('token', '${script}')`,
      async: true,
      headers: { 'X-Api-Token': token },
      cookies: [{ name: 'session', value: session }],
    });
    expect(accepted.status).toBe(202);
    const job = await waitFor(`/api/jobs/${accepted.body.id}`, account.apiKey, finished);
    expect(job.status).toBe('succeeded');
    expect(credentialed).toContainEqual({ token, cookie: `session=${session}` });
    // Nowhere in the table, in clear or in the JSON of any item.
    const { TableNames = [] } = await service.dynamo.client.send(new ListTablesCommand({}));
    const items = await Promise.all(
      TableNames.map((TableName) => service.dynamo.client.send(new ScanCommand({ TableName }))),
    );
    const table = JSON.stringify(items.flatMap((page) => page.Items ?? []));
    expect(table).toContain(accepted.body.id);
    expect(table).toContain('sealedCredentials');
    expect(table).not.toContain(token);
    expect(table).not.toContain(session);
    expect(table).not.toContain(magic);
    expect(table).not.toContain(script);
    expect(table).not.toContain('/credentialed');
  });

  it('sends a screenshot.succeeded webhook that standardwebhooks verifies, and records it delivered', async () => {
    const account = await service.newAccount();
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/red`,
      async: true,
      webhookUrl: `${receiver.origin}/hook`,
    });
    const [delivery] = await webhooksFor(accepted.body.id);
    if (!delivery) throw new Error('no delivery');
    const verifier = new Webhook(await secretOf(account.accountId));
    const event = verifier.verify(delivery.body, delivery.headers) as Json;
    expect(event).toMatchObject({
      type: 'screenshot.succeeded',
      data: { id: accepted.body.id, status: 'succeeded' },
    });
    expect(delivery.headers['webhook-id']).toBe(`msg_${accepted.body.id}`);
    // A body changed on the way is refused.
    expect(() => verifier.verify(delivery.body.replace('succeeded', 'failed'), delivery.headers)).toThrow();
    const job = await waitFor(
      `/api/jobs/${accepted.body.id}`,
      account.apiKey,
      (body) => body.webhook?.status !== 'pending',
    );
    expect(job.webhook).toEqual({
      url: `${receiver.origin}/hook`,
      status: 'delivered',
      attempts: 1,
      lastStatus: 204,
    });
  });

  it('ends failed with the answer a synchronous capture would give, and gives the credits back', async () => {
    const account = await service.newAccount();
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/broken`,
      failOnHttpError: true,
      async: true,
    });
    expect(accepted.status).toBe(202);
    const job = await waitFor(`/api/jobs/${accepted.body.id}`, account.apiKey, finished);
    expect(job).toMatchObject({
      status: 'failed',
      result: null,
      error: { status: 500, message: expect.any(String) },
    });
    expect(job.webhook).toBeNull();
    expect(await balanceOf(account.token)).toBe(BALANCE);
  });

  it("answers another account's batch, and ids that are not ours in shape, with 404 as ones that do not exist", async () => {
    const owner = await service.newAccount();
    const other = await service.newAccount();
    const accepted = await post('/api/batches', owner.apiKey, { requests: [{ url: `${pages.origin}/red` }] });
    expect(accepted.status).toBe(202);
    const foreign = await get(`/api/batches/${accepted.body.id}`, other.apiKey);
    expect(foreign).toEqual({ status: 404, body: { message: 'Batch not found' } });
    for (const id of ['bat_%2E%2E%2Fjob', `bat_${'a'.repeat(4096)}`, accepted.body.jobs[0].id])
      expect(await get(`/api/batches/${id}`, owner.apiKey), id.slice(0, 40)).toEqual(foreign);
    for (const id of ['job_%2E%2E%2Fbat', `job_${'a'.repeat(4096)}`, accepted.body.id])
      expect((await get(`/api/jobs/${id}`, owner.apiKey)).status, id.slice(0, 40)).toBe(404);
  });

  it("answers another account's job with 404, as one that does not exist", async () => {
    const owner = await service.newAccount();
    const other = await service.newAccount();
    const accepted = await post('/api/screenshot', owner.apiKey, { url: `${pages.origin}/red`, async: true });
    const foreign = await get(`/api/jobs/${accepted.body.id}`, other.apiKey);
    const missing = await get('/api/jobs/job_000000000aaaaaaaaaaaaaaaa', other.apiKey);
    expect(foreign).toEqual({ status: 404, body: { message: 'Job not found' } });
    expect(missing).toEqual(foreign);
    expect((await get(`/api/jobs/${accepted.body.id}`, 'not-a-key')).status).toBe(401);
    // The list is the session's account's own: an API key is not a session token.
    expect((await get('/api/jobs', owner.apiKey)).status).toBe(401);
    const owned = await get('/api/jobs', owner.token);
    expect(owned.body.jobs.map((job: Json) => job.id)).toEqual([accepted.body.id]);
    expect((await get('/api/jobs', other.token)).body).toEqual({ jobs: [] });
  });

  it('refuses a webhook URL on a private address at submission, naming webhookUrl, and charges nothing', async () => {
    const account = await service.newAccount();
    for (const webhookUrl of ['http://10.0.0.1/hook', `http://127.0.0.1:1/hook`, `${service.url}/api/keys`]) {
      const refused = await post('/api/screenshot', account.apiKey, {
        url: `${pages.origin}/red`,
        async: true,
        webhookUrl,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.details).toEqual([
        expect.objectContaining({ code: 'url_not_allowed', path: ['webhookUrl'] }),
      ]);
    }
    expect(await balanceOf(account.token)).toBe(BALANCE);
  });

  it('refuses an html document too large to keep with its job, async or in a batch, with 400 naming html', async () => {
    const account = await service.newAccount();
    const html = `<p>${'x'.repeat(MAX_QUEUED_HTML_BYTES)}</p>`;
    const single = await post('/api/screenshot', account.apiKey, { html, async: true });
    expect(single.status).toBe(400);
    expect(single.body.details).toEqual([expect.objectContaining({ path: ['html'] })]);
    const batch = await post('/api/batches', account.apiKey, {
      requests: [{ url: `${pages.origin}/red` }, { html }],
    });
    expect(batch.status).toBe(400);
    expect(batch.body.details).toEqual([expect.objectContaining({ field: 'requests[1].html' })]);
    expect(await balanceOf(account.token)).toBe(BALANCE);
  });

  it('keeps the result of an html document near the bound with its metadata, whose finalUrl is null', async () => {
    const account = await service.newAccount();
    const html = `<title>Near the bound</title><p>${'x'.repeat(MAX_QUEUED_HTML_BYTES - 100)}</p>`;
    const accepted = await post('/api/screenshot', account.apiKey, {
      html,
      async: true,
      response: 'json',
      metadata: true,
    });
    expect(accepted.status).toBe(202);
    const job = await waitFor(`/api/jobs/${accepted.body.id}`, account.apiKey, finished);
    expect(job).toMatchObject({
      status: 'succeeded',
      error: null,
      result: { metadata: { title: 'Near the bound', finalUrl: null } },
    });
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
  });

  it('delivers the largest metadata a page makes within its budget, read from beside its image', async () => {
    const account = await service.newAccount();
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/largest-metadata`,
      async: true,
      response: 'json',
      metadata: true,
    });
    expect(accepted.status).toBe(202);
    const job = await waitFor(`/api/jobs/${accepted.body.id}`, account.apiKey, finished);
    expect(job).toMatchObject({ status: 'succeeded', error: null });
    // The first Open Graph properties, in the page's order, as many as 16 KiB hold; the URL of 500,000 characters
    // cannot fit, and is null rather than cut.
    expect(job.result.metadata).toEqual(
      withinMetadataBudget({
        title: null,
        description: null,
        lang: null,
        canonicalUrl: null,
        finalUrl: `${pages.origin}${LONG_PATH}`,
        statusCode: 200,
        favicon: null,
        openGraph: fullProperties('og'),
        twitter: fullProperties('twitter'),
      }),
    );
    expect(job.result.metadata).toMatchObject({ finalUrl: null, twitter: {} });
    expect(Object.keys(job.result.metadata.openGraph).length).toBeGreaterThan(4);
    // The dashboard's list shows it the same way.
    const listed = await get('/api/jobs', account.token);
    expect(listed.body.jobs.map((listedJob: Json) => listedJob.result.metadata)).toEqual([
      job.result.metadata,
    ]);
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);

    // Gone from the bucket (as it expires with the image): the job still answers its result, without metadata.
    const s3 = service.s3;
    const key = decodeURIComponent(new URL(job.result.url).pathname).slice(`/${s3.bucket}/`.length);
    await localS3Client(s3).send(
      new DeleteObjectCommand({ Bucket: s3.bucket, Key: `${key}${PAGE_METADATA_SUFFIX}` }),
    );
    const without = await get(`/api/jobs/${accepted.body.id}`, account.apiKey);
    expect(without.status).toBe(200);
    expect(without.body).toMatchObject({ status: 'succeeded', result: { etag: job.result.etag } });
    expect(without.body.result).not.toHaveProperty('metadata');
  });

  it('refuses webhookUrl without async, and async on a signed link', async () => {
    const account = await service.newAccount();
    const refused = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/red`,
      webhookUrl: `${receiver.origin}/hook`,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.details).toEqual([expect.objectContaining({ path: ['webhookUrl'] })]);
    const link = await service.request(
      `/api/screenshot?url=${encodeURIComponent(`${pages.origin}/red`)}&async=true&keyId=${account.keyId}&signature=${'0'.repeat(64)}`,
    );
    expect([400, 401]).toContain(link.status);
  });

  it('retries a webhook that fails three times with the same webhook-id, then records it delivered', async () => {
    const account = await service.newAccount();
    const accepted = await post('/api/screenshot', account.apiKey, {
      url: `${pages.origin}/red`,
      async: true,
      webhookUrl: `${receiver.origin}/flaky`,
    });
    const deliveries = await webhooksFor(accepted.body.id, 4);
    expect(new Set(deliveries.map((delivery) => delivery.headers['webhook-id']))).toEqual(
      new Set([`msg_${accepted.body.id}`]),
    );
    const job = await waitFor(
      `/api/jobs/${accepted.body.id}`,
      account.apiKey,
      (body) => body.webhook?.status === 'delivered',
    );
    expect(job.webhook).toEqual({
      url: `${receiver.origin}/flaky`,
      status: 'delivered',
      attempts: 4,
      lastStatus: 204,
    });
  });
});

describe('a batch', () => {
  it('runs every capture, counts them, charges exactly the successes, and sends batch.completed last', async () => {
    const account = await service.newAccount();
    const accepted = await post('/api/batches', account.apiKey, {
      requests: [
        { url: `${pages.origin}/red` },
        { url: `${pages.origin}/broken`, failOnHttpError: true },
        { url: `${pages.origin}/red`, fullPage: true },
      ],
      webhookUrl: `${receiver.origin}/batch`,
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ id: expect.stringMatching(/^bat_/), status: 'running' });
    expect(accepted.body.statusUrl).toBe(`${service.url}/api/batches/${accepted.body.id}`);
    expect(accepted.body.jobs).toEqual(
      [1, 2, 3].map(() => ({ id: expect.stringMatching(/^job_/), status: 'queued' })),
    );
    // 1 + 1 + 2 reserved at once.
    expect(await balanceOf(account.token)).toBe(BALANCE - 4);

    const batch = await waitFor(
      `/api/batches/${accepted.body.id}`,
      account.apiKey,
      (body) => body.status === 'completed',
    );
    expect(batch.counts).toEqual({ queued: 0, running: 0, succeeded: 2, failed: 1 });
    expect(batch.jobs.map((job: Json) => job.status)).toEqual(['succeeded', 'failed', 'succeeded']);
    expect(batch.finishedAt).toBeGreaterThanOrEqual(
      Math.max(...batch.jobs.map((job: Json) => job.finishedAt)),
    );
    // The failed capture's credit came back.
    expect(await balanceOf(account.token)).toBe(BALANCE - 3);

    const [completed] = await webhooksFor(accepted.body.id);
    const event = JSON.parse(completed?.body ?? '{}');
    expect(event).toMatchObject({
      type: 'batch.completed',
      data: { id: accepted.body.id, status: 'completed' },
    });
    expect(event.data.counts).toEqual(batch.counts);
  });

  it('refuses the whole batch with each problem named by its place, and charges nothing', async () => {
    const account = await service.newAccount();
    const refused = await post('/api/batches', account.apiKey, {
      requests: [
        { url: `${pages.origin}/red` },
        { url: `${pages.origin}/red`, width: 1 },
        { url: 'http://10.0.0.1/' },
        { url: `${pages.origin}/red`, async: true },
      ],
    });
    expect(refused.status).toBe(400);
    const paths = refused.body.details.map((detail: Json) => detail.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['requests.1.width', 'requests.2.url', 'requests.3.async']));
    const fields = refused.body.details.map((detail: Json) => detail.field);
    expect(fields).toEqual(
      expect.arrayContaining(['requests[1].width', 'requests[2].url', 'requests[3].async']),
    );
    expect(await balanceOf(account.token)).toBe(BALANCE);
  });

  it('refuses an empty batch, one of 101, and requests that are not a list, naming requests, charging nothing', async () => {
    const oneTooMany = Array.from({ length: 101 }, () => ({ url: `${pages.origin}/red` }));
    for (const requests of [[], oneTooMany, 'http://10.0.0.1/', { url: `${pages.origin}/red` }, null]) {
      // An account each: a refused batch still counts against the window (429 comes before 400), up to 100.
      const account = await service.newAccount();
      const refused = await post('/api/batches', account.apiKey, { requests });
      expect(refused.status).toBe(400);
      expect(refused.body.details.map((detail: Json) => detail.path.join('.'))).toEqual(['requests']);
      expect(await balanceOf(account.token)).toBe(BALANCE);
    }
  });

  it('answers 429 when the rate window has no room for all of them, counting none of them', async () => {
    const account = await service.newAccount();
    // 99 bodies refused with 400 still count, as one refused capture does.
    const invalid = Array.from({ length: 99 }, () => ({ url: `${pages.origin}/red`, width: 1 }));
    expect((await post('/api/batches', account.apiKey, { requests: invalid })).status).toBe(400);
    const two = Array.from({ length: 2 }, () => ({ url: `${pages.origin}/red` }));
    const refused = await post('/api/batches', account.apiKey, { requests: two });
    expect(refused.status).toBe(429);
    // The one request left is still there, and the refusal says so (red team, round 24: it said 0).
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('1');
    const one = await post('/api/batches', account.apiKey, { requests: two.slice(1) });
    expect(one.status).toBe(202);
    expect(one.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
  });

  it('answers 402 with the sum required when the balance does not cover them all', async () => {
    const account = await service.newAccount();
    const requests = Array.from({ length: 11 }, () => ({ url: `${pages.origin}/red`, fullPage: true }));
    const refused = await post('/api/batches', account.apiKey, { requests });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ required: 22, available: BALANCE });
    expect(await balanceOf(account.token)).toBe(BALANCE);
  });
});

describe('Idempotency-Key', () => {
  it('answers the same key and body with the first acceptance again, charging once', async () => {
    const account = await service.newAccount();
    const body = { url: `${pages.origin}/red`, async: true };
    const first = await post('/api/screenshot', account.apiKey, body, 'order-1');
    const again = await post('/api/screenshot', account.apiKey, { async: true, url: body.url }, 'order-1');
    expect(first.status).toBe(202);
    expect(again).toMatchObject({ status: 202, body: first.body });
    expect(again.headers.get('location')).toBe(first.body.statusUrl);
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
    // Another account's same key is its own.
    const other = await service.newAccount();
    const theirs = await post('/api/screenshot', other.apiKey, body, 'order-1');
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it('answers 422 for the same key with another body, and charges nothing for it', async () => {
    const account = await service.newAccount();
    await post('/api/screenshot', account.apiKey, { url: `${pages.origin}/red`, async: true }, 'order-2');
    const other = await post(
      '/api/screenshot',
      account.apiKey,
      { url: `${pages.origin}/red?x`, async: true },
      'order-2',
    );
    expect(other).toMatchObject({ status: 422, body: { message: expect.any(String) } });
    // As every answer of the capture routes (red team, round 23: the 409 and 422 lacked it).
    expect(other.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
  });

  it('answers 409 for the same key while the first is still being accepted, and makes one batch', async () => {
    const account = await service.newAccount();
    const requests = Array.from({ length: 10 }, (_, i) => ({ url: `${pages.origin}/red?${i}` }));
    const answers = await Promise.all([
      post('/api/batches', account.apiKey, { requests }, 'batch-1'),
      post('/api/batches', account.apiKey, { requests }, 'batch-1'),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409]);
    const refused = answers.find((answer) => answer.status === 409);
    expect(refused?.body).toEqual({ message: expect.any(String) });
    expect(refused?.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await balanceOf(account.token)).toBe(BALANCE - 10);
    const replay = await post('/api/batches', account.apiKey, { requests }, 'batch-1');
    expect(replay.body.id).toBe(answers.find((answer) => answer.status === 202)?.body.id);
  });

  it('refuses a key that is not 1 to 255 visible ASCII characters in the order of checks, counted, charging nothing', async () => {
    const account = await service.newAccount();
    for (const [path, body] of [
      ['/api/screenshot', { url: `${pages.origin}/red`, async: true }],
      ['/api/batches', { requests: [{ url: `${pages.origin}/red` }] }],
    ] as const) {
      for (const key of ['x'.repeat(256), 'with space']) {
        // The API key first (401 whatever the header), as for any other field of the request.
        expect((await post(path, 'sk_live_0000000000000000000000000000000000000000', body, key)).status).toBe(
          401,
        );
        const refused = await post(path, account.apiKey, body, key);
        expect(refused.status).toBe(400);
        expect(refused.body.details).toEqual([
          expect.objectContaining({ code: 'invalid_idempotency_key', path: ['Idempotency-Key'] }),
        ]);
        // After the rate limit: counted, with its headers.
        expect(refused.headers.get('x-ratelimit-remaining')).not.toBeNull();
      }
    }
    // With the body's own problems beside it: a 400 lists every problem found (red team, round 24: the key's alone).
    for (const [path, body, field] of [
      ['/api/screenshot', { url: `${pages.origin}/red`, async: true, width: 1 }, ['width']],
      ['/api/batches', { requests: [{ url: `${pages.origin}/red`, width: 1 }] }, ['requests', 0, 'width']],
    ] as const) {
      const refused = await post(path, account.apiKey, body, 'with space');
      expect(refused.status).toBe(400);
      expect(refused.body.details.map((detail: Json) => detail.path)).toEqual([['Idempotency-Key'], field]);
    }
    // A synchronous capture has no use for the header: it is not read.
    const sync = await post(
      '/api/screenshot',
      account.apiKey,
      { url: `${pages.origin}/red`, response: 'json' },
      'with space',
    );
    expect(sync.status).toBe(200);
    expect(await balanceOf(account.token)).toBe(BALANCE - 1);
  });
});
