import { randomBytes } from 'node:crypto';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import type { SlotLease } from '../../shared/accounts/captureSlots';
import type { CreditLedger } from '../../shared/accounts/creditLedger';
import { HTML_SOURCE } from '../../shared/capture/renderer';
import { CapacityFullError, StoreUnavailableError } from '../../shared/errors';
import { newJobId } from '../../shared/jobs/job';
import { openCredentials } from '../../shared/jobs/jobCredentials';
import { jobEnded } from '../../shared/jobs/jobEvents';
import { jobIntake } from '../../shared/jobs/jobIntake';
import type { JobQueue, QueueMessage } from '../../shared/jobs/jobQueue';
import { type JobStore, REFUND_CLAIM_MS } from '../../shared/jobs/jobStore';
import { batchView, jobView } from '../../shared/jobs/jobView';
import {
  ITEM_WRITE_WINDOW_MS,
  MAX_JOB_RUNS,
  NO_SLOT_DELAY_SECONDS,
  type RunJobDeps,
  runJob,
} from '../../shared/jobs/runJob';
import { givenBack } from '../../shared/screenshot/queuedCaptures';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { DynamoJobStore } from '../../shared/store/dynamoJobStore';
import { createSqsClient, SqsJobQueue } from '../../shared/store/sqsJobQueue';
import { itemKey } from '../../shared/store/table';
import { TIMED_OUT_SLOT_PENALTY_MS } from '../../shared/timing';
import { deferred } from '../helpers/deferred';
import { startFaultProxy } from '../helpers/faultProxy';
import { jobWorkerDeps } from '../helpers/jobWorker';
import {
  FakeRenderer,
  MemoryCaptureSlots,
  MemoryCreditLedger,
  MemoryImageStore,
  MemoryPendingRefunds,
} from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The worker's rules against the real job table (dynalite) and in-memory ports: a job ends once whatever the
 * deliveries, failures of ours are retried a bounded number of times, and a job with no free slot waits.
 */

const ACCOUNT = 'acct';
const identity = { accountId: ACCOUNT, keyId: 'key_1', isActive: true } as never;

class RecordingQueue implements JobQueue {
  readonly sent: { message: QueueMessage; delaySeconds: number }[] = [];
  async send(messages: QueueMessage[], delaySeconds = 0): Promise<void> {
    for (const message of messages) this.sent.push({ message, delaySeconds });
  }
}

let store: EmbeddedDynamo;
let db: DynamoDBDocumentClient;
let jobs: DynamoJobStore;
let queue: RecordingQueue;
let credits: MemoryCreditLedger;
let slots: MemoryCaptureSlots;
let renderer: FakeRenderer;
let usage: { record: (entry: unknown) => void; records: unknown[] };
let run: ReturnType<typeof runJob>;
let workerDeps: (ledger: CreditLedger) => RunJobDeps;
let workerWith: (ledger: CreditLedger) => ReturnType<typeof runJob>;
/** The service's cipher: the intake seals a request's credentials with it, the worker opens them. */
const cipher = new AesGcmSecretCipher(randomBytes(32));

beforeAll(async () => {
  store = await startTestStore();
  db = DynamoDBDocumentClient.from(store.client, { marshallOptions: { removeUndefinedValues: true } });
  jobs = new DynamoJobStore(db, TEST_TABLE);
});

afterAll(async () => {
  await store?.close();
});

beforeEach(() => {
  queue = new RecordingQueue();
  credits = new MemoryCreditLedger();
  slots = new MemoryCaptureSlots(1);
  renderer = new FakeRenderer();
  const records: unknown[] = [];
  usage = { record: (entry) => records.push(entry), records };
  const now = () => Date.now();
  workerDeps = (ledger) =>
    jobWorkerDeps({
      jobs,
      queue,
      captureSlots: slots,
      renderer,
      usage,
      cipher,
      credits: ledger,
      ended: jobEnded({ jobs, queue, now }),
      now,
    });
  workerWith = (ledger) => runJob(workerDeps(ledger));
  run = workerWith(credits);
});

/** A job accepted as the front accepts it: its credits already reserved. */
async function accepted(
  url: string,
  options: {
    batch?: boolean;
    cost?: number;
    ledger?: CreditLedger;
    fields?: Record<string, unknown>;
    webhookUrl?: string;
  } = {},
) {
  const cost = options.cost ?? 1;
  const ledger = options.ledger ?? credits;
  await ledger.set(ACCOUNT, 10);
  const creditEpoch = await ledger.reserve(ACCOUNT, cost);
  const intake = jobIntake({ jobs, queue: new RecordingQueue(), cipher, now: Date.now });
  const made = await intake(identity, [{ request: { url, ...options.fields }, cost, creditEpoch }], {
    ...(options.batch ? { batch: true } : {}),
    webhookUrl: options.webhookUrl,
  });
  return { job: made.jobs[0] as { id: string }, batch: made.batch };
}

describe('a large request, kept apart from its job', () => {
  it('keeps the job item small whatever the request weighs; the worker reads the request and captures it', async () => {
    // Near the largest document a queued capture may carry (MAX_QUEUED_HTML_BYTES, 256 KiB).
    const html = `<h1>report</h1>${'<p>row</p>'.repeat(24_000)}`;
    await credits.set(ACCOUNT, 10);
    await credits.reserve(ACCOUNT, 2);
    const intake = jobIntake({ jobs, queue: new RecordingQueue(), cipher, now: Date.now });
    const { jobs: made } = await intake(
      identity,
      [
        { request: { html }, cost: 1 },
        { request: { url: 'https://a.test/report' }, cost: 1 },
      ],
      {},
    );
    const items = await Promise.all(
      made.map(async ({ id }) => {
        const key = itemKey.job(ACCOUNT, id);
        return (await db.send(new GetCommand({ TableName: TEST_TABLE, Key: key, ConsistentRead: true })))
          .Item;
      }),
    );
    // The document is kept apart; the small request stays in its job's item (its URL sealed), read with it.
    expect(items[0]?.request).toBeUndefined();
    expect(items[1]?.request).toEqual({ sealedCredentials: expect.any(Object) });
    for (const item of items) expect(JSON.stringify(item).length).toBeLessThan(1_024);
    for (const { id } of made) await run(ACCOUNT, id, 1);
    expect(renderer.captures.map(({ spec }) => spec.html?.length ?? spec.url)).toEqual([
      html.length,
      'https://a.test/report',
    ]);
    // The usage records' hosts are the jobs' own, read with no request.
    expect(usage.records).toMatchObject([
      { host: HTML_SOURCE, status: 200 },
      { host: 'a.test', status: 200 },
    ]);
  });

  it("ends a job whose request is not in the table at once, refunded, as the request's failure", async () => {
    await credits.set(ACCOUNT, 10);
    await credits.reserve(ACCOUNT, 1);
    const intake = jobIntake({ jobs, queue: new RecordingQueue(), cipher, now: Date.now });
    const {
      jobs: [job],
    } = await intake(identity, [{ request: { html: `<p>${'x'.repeat(4_096)}</p>` }, cost: 1 }], {});
    if (!job) throw new Error('no job');
    await db.send(new DeleteCommand({ TableName: TEST_TABLE, Key: itemKey.jobRequest(ACCOUNT, job.id) }));
    await run(ACCOUNT, job.id, 1);
    expect(renderer.captures).toEqual([]);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({
      status: 'failed',
      error: { status: 500, message: "The job's request could not be read" },
    });
    expect(await credits.balance(ACCOUNT)).toBe(10);
  });
});

describe("a job's usage record", () => {
  it('is dated when the request came in, and lasts until the job ended, however long it waited (red team, round 27)', async () => {
    const { job } = await accepted('https://a.test/late');
    const { createdAt } = (await jobs.get(ACCOUNT, job.id)) ?? { createdAt: 0 };
    // Run two hours later, as after a backlog or the sweep: a job accepted before midnight (UTC) ended after it.
    const later = 2 * 60 * 60 * 1000;
    const now = () => Date.now() + later;
    await runJob({ ...workerDeps(credits), now, ended: jobEnded({ jobs, queue, now }) })(ACCOUNT, job.id, 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'succeeded' });
    expect(usage.records).toEqual([expect.objectContaining({ at: createdAt, status: 200, credits: 1 })]);
    expect((usage.records[0] as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(later);
  });
});

describe('a queued job', () => {
  it('succeeds once: the reserved credits are kept, a later delivery of its message changes nothing', async () => {
    const { job } = await accepted('https://a.test/page');
    await run(ACCOUNT, job.id, 1);
    await run(ACCOUNT, job.id, 2);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'succeeded', runs: 1 });
    expect(renderer.captures).toHaveLength(1);
    expect(await credits.balance(ACCOUNT)).toBe(9);
    expect(usage.records).toHaveLength(1);
  });

  it('is delivered again after a failure of ours, and after the last run ends failed, refunded once', async () => {
    const { job } = await accepted('https://a.test/fail');
    for (let delivery = 1; delivery < MAX_JOB_RUNS; delivery++) {
      await expect(run(ACCOUNT, job.id, delivery)).rejects.toThrow();
      expect((await jobs.get(ACCOUNT, job.id))?.status).toBe('running');
    }
    await run(ACCOUNT, job.id, MAX_JOB_RUNS);
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({
      status: 'failed',
      error: { status: 500, message: 'Navigation timed out' },
    });
    expect(await credits.balance(ACCOUNT)).toBe(10);
    expect(usage.records).toEqual([expect.objectContaining({ status: 500, credits: 0 })]);
  });

  it("keeps the account's slot a while after a job that ran out of its time budget, as a synchronous capture", async () => {
    const { job } = await accepted('https://a.test/timeout');
    await run(ACCOUNT, job.id, MAX_JOB_RUNS).catch(() => undefined);
    expect(await credits.balance(ACCOUNT)).toBe(10);
    expect(slots.held(ACCOUNT, Date.now() + TIMED_OUT_SLOT_PENALTY_MS - 5_000)).toBe(1);
    expect(slots.held(ACCOUNT, Date.now() + TIMED_OUT_SLOT_PENALTY_MS + 5_000)).toBe(0);
  });

  it("gives the account's slot back at once after a failure of ours", async () => {
    const { job } = await accepted('https://a.test/fail');
    await expect(run(ACCOUNT, job.id, 1)).rejects.toThrow();
    expect(slots.held(ACCOUNT, Date.now())).toBe(0);
  });

  it('ends failed and refunded on its first run, without a capture, when its sealed credentials do not open', async () => {
    const { job } = await accepted('https://a.test/page', {
      fields: { headers: { Authorization: 'Bearer x' } },
    });
    // Another key than the one they were sealed with: no later run would open them either.
    const worker = runJob({ ...workerDeps(credits), cipher: new AesGcmSecretCipher(randomBytes(32)) });
    await worker(ACCOUNT, job.id, 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({
      status: 'failed',
      runs: 1,
      error: { status: 500 },
    });
    expect(renderer.captures).toHaveLength(0);
    expect(await credits.balance(ACCOUNT)).toBe(10);
    expect(slots.held(ACCOUNT, Date.now())).toBe(0);
  });

  it('ends failed and refunded without a capture once its message was delivered more than the runs allowed', async () => {
    const { job } = await accepted('https://a.test/page');
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'failed' });
    expect(renderer.captures).toHaveLength(0);
    expect(await credits.balance(ACCOUNT)).toBe(10);
  });

  it('sends a message that outran its job item again a second later, and drops it once no item can come', async () => {
    const id = newJobId(Date.now());
    await run(ACCOUNT, id, 1);
    expect(queue.sent).toEqual([
      { message: { kind: 'capture', accountId: ACCOUNT, jobId: id, waited: 1 }, delaySeconds: 1 },
    ]);
    // The function that accepted it has stopped: its item will never be written.
    await run(ACCOUNT, newJobId(Date.now() - ITEM_WRITE_WINDOW_MS - 1_000), 1, 5);
    await run(ACCOUNT, 'job_not_ours', 1);
    expect(queue.sent).toHaveLength(1);
    expect(renderer.captures).toEqual([]);
  });

  it('waits for a job item written late (a slow write) while the function that accepted it may still write it, then runs it', async () => {
    // Accepted 10 s ago; its message outran the item's write, which DynamoDB's retries (a throttled partition) drew out.
    const createdAt = Date.now() - 10_000;
    const id = newJobId(createdAt);
    await run(ACCOUNT, id, 1, 3);
    const resent = queue.sent.map((entry) => entry.message);
    expect(resent).toEqual([expect.objectContaining({ kind: 'capture', jobId: id })]);
    // The write lands, and the intake answers 202: the job must run.
    await credits.set(ACCOUNT, 10);
    await credits.reserve(ACCOUNT, 1);
    await jobs.create([
      {
        id,
        accountId: ACCOUNT,
        keyId: 'key_1',
        status: 'queued',
        createdAt,
        startedAt: null,
        finishedAt: null,
        request: { url: 'https://a.test/late' },
        cost: 1,
        result: null,
        error: null,
        webhook: null,
        runs: 0,
      },
    ]);
    const [message] = resent;
    if (message?.kind !== 'capture') throw new Error('no capture message');
    await run(ACCOUNT, id, 1, message.waited);
    expect(await jobs.get(ACCOUNT, id)).toMatchObject({ status: 'succeeded' });
    expect(await credits.balance(ACCOUNT)).toBe(9);
  });

  it("keeps each run's image apart, so two deliveries running at once never replace the one whose end was written", async () => {
    const { job } = await accepted('https://a.test/slow');
    slots = new MemoryCaptureSlots(2);
    const images = new MemoryImageStore();
    run = runJob({ ...workerDeps(credits), images });
    // The second, a redelivery (its first worker seemed gone), may restart the job while the first still runs it.
    const both = Promise.all([run(ACCOUNT, job.id, 1), run(ACCOUNT, job.id, 2)]);
    while (renderer.captures.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    renderer.finishSlow();
    await both;
    const ended = await jobs.get(ACCOUNT, job.id);
    expect(ended).toMatchObject({ status: 'succeeded', runs: 2 });
    expect(images.objects.size).toBe(2);
    const kept = images.objects.get(ended?.result?.key as string);
    expect(kept?.info.etag).toBe(ended?.result?.etag);
    expect(await credits.balance(ACCOUNT)).toBe(9);
  });

  it("leaves a job another delivery is running to it when a second message comes (the sweep's, after a backlog)", async () => {
    const { job } = await accepted('https://a.test/slow');
    slots = new MemoryCaptureSlots(2);
    run = workerWith(credits);
    const first = run(ACCOUNT, job.id, 1);
    while (renderer.captures.length < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    await run(ACCOUNT, job.id, 1);
    expect(renderer.captures).toHaveLength(1);
    renderer.finishSlow();
    await first;
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'succeeded', runs: 1 });
    expect(await credits.balance(ACCOUNT)).toBe(9);
  });

  it('takes up a job it gave back to the queue when every renderer was busy, by its own message', async () => {
    const { job } = await accepted('https://a.test/page');
    let busy = true;
    const capture = renderer.capture.bind(renderer);
    renderer.capture = async (spec, limits) => {
      if (busy) throw new CapacityFullError();
      return capture(spec, limits);
    };
    await run(ACCOUNT, job.id, 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'running' });
    expect(queue.sent).toEqual([
      {
        message: { kind: 'capture', accountId: ACCOUNT, jobId: job.id, resume: true },
        delaySeconds: NO_SLOT_DELAY_SECONDS,
      },
    ]);
    busy = false;
    // Another first delivery (a copy) leaves it; the worker's own message takes it.
    await run(ACCOUNT, job.id, 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'running' });
    await run(ACCOUNT, job.id, 1, 0, true);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'succeeded' });
    expect(await credits.balance(ACCOUNT)).toBe(9);
  });

  it('restarts a job whose worker died, through a wait for a slot: the message it sends again may take it', async () => {
    const { job } = await accepted('https://a.test/page');
    // Its first worker started it and died: the job stays running, its message comes back.
    await jobs.start(ACCOUNT, job.id, Date.now(), false);
    const held = await slots.acquire(ACCOUNT, Date.now(), Date.now() + 60_000);
    await run(ACCOUNT, job.id, 2);
    expect(queue.sent).toEqual([
      {
        message: { kind: 'capture', accountId: ACCOUNT, jobId: job.id, resume: true },
        delaySeconds: NO_SLOT_DELAY_SECONDS,
      },
    ]);
    await slots.release(ACCOUNT, (held as SlotLease).leaseId);
    await run(ACCOUNT, job.id, 1, 0, true);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'succeeded' });
  });

  it('waits for a free slot: sent again with a delay, still queued, never refused', async () => {
    const { job } = await accepted('https://a.test/page');
    const held = await slots.acquire(ACCOUNT, Date.now(), Date.now() + 60_000);
    await run(ACCOUNT, job.id, 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'queued' });
    expect(queue.sent).toEqual([
      {
        message: { kind: 'capture', accountId: ACCOUNT, jobId: job.id },
        delaySeconds: NO_SLOT_DELAY_SECONDS,
      },
    ]);
    await slots.release(ACCOUNT, (held as SlotLease).leaseId);
    await run(ACCOUNT, job.id, 1);
    expect((await jobs.get(ACCOUNT, job.id))?.status).toBe('succeeded');
  });

  it("counts a batch's job once even when its end is handled again, and completes the batch once", async () => {
    const { job, batch } = await accepted('https://a.test/page', { batch: true });
    await run(ACCOUNT, job.id, 1);
    // The worker died after the end, before the message was deleted: it comes back.
    await run(ACCOUNT, job.id, 2);
    expect(await jobs.getBatch(ACCOUNT, batch?.id as string)).toMatchObject({
      status: 'completed',
      finished: 1,
    });
    expect(await credits.balance(ACCOUNT)).toBe(9);
  });
});

describe('a job that asked for the page metadata', () => {
  const withMetadata: { fields: Record<string, unknown> } = { fields: { response: 'json', metadata: true } };
  const now = Date.now();

  async function succeeded(images: MemoryImageStore, options = withMetadata) {
    run = runJob({ ...workerDeps(credits), images });
    const { job } = await accepted('https://a.test/page', options);
    await run(ACCOUNT, job.id, 1);
    const ended = await jobs.get(ACCOUNT, job.id);
    if (ended?.status !== 'succeeded' || !ended.result) throw new Error(`not succeeded: ${ended?.status}`);
    return { ended, result: ended.result };
  }

  it('keeps only a mark in its item: the metadata is stored beside the image', async () => {
    const images = new MemoryImageStore();
    const { result } = await succeeded(images);
    expect(result).toEqual({
      key: expect.any(String),
      contentType: 'image/png',
      width: 1920,
      height: 1080,
      bytes: expect.any(Number),
      etag: expect.any(String),
      creditsCharged: 1,
      metadataStored: true,
    });
    expect(images.objects.get(result.key)?.info.metadata).toMatchObject({ finalUrl: 'https://a.test/page' });
  });

  it('is shown with its metadata, read from the store once per job, in its view and its batch view', async () => {
    const images = new MemoryImageStore();
    const { ended } = await succeeded(images);
    const view = await jobView(ended, images, now);
    expect(view.result?.metadata).toEqual(images.objects.get(ended.result?.key as string)?.info.metadata);
    const batch = await batchView(
      {
        id: 'bat_x',
        accountId: ACCOUNT,
        status: 'completed',
        createdAt: 0,
        finishedAt: 0,
        jobIds: [],
        finished: 2,
        webhook: null,
      },
      [ended, ended],
      images,
      now,
    );
    expect(batch.jobs.map((job) => job.result)).toEqual([view.result, view.result]);
    expect(images.calls.pageMetadata).toBe(3);
  });

  it('is shown without metadata, and without a store read, when it did not ask for it', async () => {
    const images = new MemoryImageStore();
    const { ended } = await succeeded(images, { fields: { response: 'json' } });
    const view = await jobView(ended, images, now);
    expect(view.result).not.toHaveProperty('metadata');
    expect(images.calls.pageMetadata).toBe(0);
  });

  it('is shown without metadata once the metadata is gone from the store, as its image would be', async () => {
    const images = new MemoryImageStore();
    const { ended } = await succeeded(images);
    const present = await jobView(ended, images, now);
    images.objects.clear();
    const gone = await jobView(ended, images, now);
    const { metadata: _metadata, ...rest } = present.result ?? {};
    expect(gone).toEqual({ ...present, result: rest });
    expect(gone.status).toBe('succeeded');
  });
});

describe('jobs that could not all be accepted (the real ledger, on the table)', () => {
  /** The front's part: the intake fails, so it gives back what all the captures reserved. */
  async function acceptance(
    captures: { request: Record<string, unknown>; cost: number }[],
    sender: JobQueue,
    options: { webhookUrl?: string; store?: JobStore } = {},
  ) {
    const ledger = new DynamoCreditLedger(db, TEST_TABLE);
    await ledger.set(ACCOUNT, 10);
    const total = captures.reduce((sum, capture) => sum + capture.cost, 0);
    await ledger.reserve(ACCOUNT, total);
    const intake = jobIntake({ jobs: options.store ?? jobs, queue: sender, cipher, now: Date.now });
    const failure = await intake(identity, captures, { batch: true, webhookUrl: options.webhookUrl }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    await ledger.refund(ACCOUNT, givenBack(failure, total).credits);
    return ledger;
  }

  /** `count` captures of a credit each, of pages a.test/0, a.test/1, … */
  const oneCreditCaptures = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ request: { url: `https://a.test/${i}` }, cost: 1 }));

  /** Every job the worker can find ends failed and owes nothing; running their messages gives nothing more. */
  async function expectNothingOwed(ledger: DynamoCreditLedger, sent: QueueMessage[]) {
    run = workerWith(ledger);
    for (const message of sent) {
      if (message.kind !== 'capture') continue;
      const job = await jobs.get(ACCOUNT, message.jobId);
      if (job) {
        expect(job).toMatchObject({ status: 'failed' });
        expect(job).not.toHaveProperty('refundOwed');
      }
      await run(ACCOUNT, message.jobId, 1);
    }
    expect(renderer.captures).toEqual([]);
    expect(await ledger.balance(ACCOUNT)).toBe(10);
  }

  /** The batch of the jobs `sent` names, as the table keeps it. */
  async function batchOfSent(sent: QueueMessage[]) {
    const [first] = sent;
    const job = first?.kind === 'capture' ? await jobs.get(ACCOUNT, first.jobId) : undefined;
    return jobs.getBatch(ACCOUNT, job?.batchId as string);
  }

  it('a queue that took some messages, then refused: no job runs, none is refunded a second time, the batch ends', async () => {
    const sent: QueueMessage[] = [];
    const halfQueue: JobQueue = {
      async send(messages) {
        sent.push(...messages.slice(0, 2));
        throw new Error('3 queue messages not sent');
      },
    };
    const captures = oneCreditCaptures(5);
    const ledger = await acceptance(captures, halfQueue, { webhookUrl: 'https://hooks.test/batch' });
    expect(sent).toHaveLength(2);
    // Not left `running` until its TTL: every job it holds has ended, whether or not its message went through.
    expect(await batchOfSent(sent)).toMatchObject({ status: 'completed', finished: 5 });
    await expectNothingOwed(ledger, sent);
    // Its id was never answered: no batch.completed for it, ever.
    expect(queue.sent.filter((entry) => entry.message.kind === 'webhook')).toEqual([]);
  });

  it('a queue that took every message yet failed: the batch answered 503 sends no batch.completed', async () => {
    const sent: QueueMessage[] = [];
    // SQS took them all, then the answer was lost (a timeout): the intake cannot tell them from refused ones.
    const lostAnswer: JobQueue = {
      async send(messages) {
        sent.push(...messages);
        throw new Error('queue answer lost');
      },
    };
    const captures = oneCreditCaptures(3);
    const ledger = await acceptance(captures, lostAnswer, { webhookUrl: 'https://hooks.test/batch' });
    await expectNothingOwed(ledger, sent);
    expect(await batchOfSent(sent)).toMatchObject({ status: 'completed', finished: 3 });
    expect(queue.sent.filter((entry) => entry.message.kind === 'webhook')).toEqual([]);
  });

  it('a job a worker ended before the intake failed keeps its charge: the caller gives back only the others', async () => {
    const sent: QueueMessage[] = [];
    // SQS took every message and a worker ran the first to its end before the queue's answer was lost.
    const lostAnswer: JobQueue = {
      async send(messages) {
        sent.push(...messages);
        const [first] = messages;
        if (first?.kind !== 'capture') throw new Error('no capture message');
        await expect.poll(() => jobs.get(ACCOUNT, first.jobId)).toBeDefined();
        await workerWith(new DynamoCreditLedger(db, TEST_TABLE))(ACCOUNT, first.jobId, 1);
        throw new Error('queue answer lost');
      },
    };
    const captures = oneCreditCaptures(3);
    const ledger = await acceptance(captures, lostAnswer);
    const [first] = sent;
    expect(await jobs.get(ACCOUNT, first?.kind === 'capture' ? first.jobId : '')).toMatchObject({
      status: 'succeeded',
    });
    // Its image was made and kept: it is paid for, the two others are not.
    expect(await ledger.balance(ACCOUNT)).toBe(9);
  });

  it('a job whose ending write fails keeps its credits: it stays queued and runs once, charged once, never free', async () => {
    const refusingQueue: JobQueue = {
      async send() {
        throw new Error('queue refused');
      },
    };
    // The table takes the items, then throttles the intake's ending writes.
    const written: string[] = [];
    const throttledEnds = Object.assign(Object.create(jobs) as DynamoJobStore, {
      create: async (...args: Parameters<JobStore['create']>) => {
        written.push(...args[0].map((job) => job.id));
        await jobs.create(...args);
      },
      finish: async () => {
        throw new Error('ProvisionedThroughputExceededException');
      },
    });
    const captures = oneCreditCaptures(3);
    const ledger = await acceptance(captures, refusingQueue, { store: throttledEnds });
    // Nothing given back: each job is still queued, so its message or the sweep will run it.
    expect(await ledger.balance(ACCOUNT)).toBe(7);
    expect(written).toHaveLength(3);
    for (const id of written) expect(await jobs.get(ACCOUNT, id)).toMatchObject({ status: 'queued' });
    run = workerWith(ledger);
    for (const id of written) await run(ACCOUNT, id, 1);
    for (const id of written) expect(await jobs.get(ACCOUNT, id)).toMatchObject({ status: 'succeeded' });
    expect(await ledger.balance(ACCOUNT)).toBe(7);
  });

  it('a job whose ending write was applied but answered as failed (a timeout) is refunded by the caller (red team: lost)', async () => {
    const refusingQueue: JobQueue = {
      async send() {
        throw new Error('queue refused');
      },
    };
    const lateEnds = Object.assign(Object.create(jobs) as DynamoJobStore, {
      finish: async (...args: Parameters<JobStore['finish']>) => {
        await jobs.finish(...args);
        throw new StoreUnavailableError();
      },
    });
    const ledger = await acceptance(oneCreditCaptures(3), refusingQueue, { store: lateEnds });
    // Each job ended failed owing nothing (the caller's to give back), and the caller gave it back.
    expect(await ledger.balance(ACCOUNT)).toBe(10);
    for (const job of await jobs.latest(ACCOUNT, 3)) {
      expect(job).toMatchObject({ status: 'failed', refundedByCaller: true });
      expect(job).not.toHaveProperty('refundOwed');
    }
  });

  it('a queue that never answers: the send fails in time, so the intake ends the job and the caller refunds it', async () => {
    const silent = await startFaultProxy('http://127.0.0.1:9');
    await silent.setMode('blackhole');
    try {
      const client = createSqsClient({
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      });
      const sqs = new SqsJobQueue(client, `${silent.endpoint}/000000000000/jobs`);
      const ledger = await acceptance([{ request: { url: 'https://a.test/silent' }, cost: 1 }], sqs);
      const [job] = await jobs.latest(ACCOUNT, 1);
      expect(job?.status).toBe('failed');
      expect(job && (await openCredentials(cipher, { ...job, request: job.request ?? {} }))).toEqual({
        url: 'https://a.test/silent',
      });
      expect(await ledger.balance(ACCOUNT)).toBe(10);
      client.destroy();
    } finally {
      await silent.close();
    }
  }, 60_000);

  it('a job item the table refused: the items written end failed, even one written late, and their messages run nothing', async () => {
    const queued = new RecordingQueue();
    // One job's write is refused (as a throttled table refuses it) while the others go through; one of those is slow
    // (retried by the SDK): it lands after the refused one.
    // Told apart by width (their URLs are sealed in the items written).
    const captures = [
      { request: { url: 'https://a.test/slow', width: 801 }, cost: 1 },
      { request: { url: 'https://a.test/refused', width: 802 }, cost: 1 },
      { request: { url: 'https://a.test/3', width: 803 }, cost: 1 },
    ];
    const slowWrites = {
      send: async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
        const item = command instanceof PutCommand ? command.input.Item : undefined;
        const width = (item?.request as { width?: number } | undefined)?.width;
        if (width === 802)
          throw Object.assign(new Error('Throughput exceeds the current capacity of your table'), {
            name: 'ThrottlingException',
          });
        if (width === 801) await new Promise((resolve) => setTimeout(resolve, 300));
        return db.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const ledger = await acceptance(captures, queued, { store: new DynamoJobStore(slowWrites, TEST_TABLE) });
    const messages = queued.sent.map((entry) => entry.message);
    expect(messages).toHaveLength(3);
    const written = async () =>
      (
        await Promise.all(
          messages.map((message) =>
            message.kind === 'capture' ? jobs.get(ACCOUNT, message.jobId) : undefined,
          ),
        )
      ).filter(Boolean);
    await expect.poll(async () => (await written()).length).toBe(2);
    await expectNothingOwed(ledger, messages);
  });

  it("a large request's item the table refused: no job is written, and their messages run nothing", async () => {
    const queued = new RecordingQueue();
    // A request item past DynamoDB's 400 KB: validation keeps such a request out (MAX_QUEUED_HTML_BYTES); here it
    // stands for any write of a request kept apart that failed. Requests are written before their jobs.
    const captures = [
      { request: { url: 'https://a.test/1' }, cost: 1 },
      { request: { html: 'x'.repeat(500 * 1024) }, cost: 1 },
    ];
    const ledger = await acceptance(captures, queued);
    const messages = queued.sent.map((entry) => entry.message);
    expect(messages).toHaveLength(2);
    for (const message of messages)
      if (message.kind === 'capture') expect(await jobs.get(ACCOUNT, message.jobId)).toBeUndefined();
    await expectNothingOwed(ledger, messages);
  });
});

describe('a failed job whose worker died before its refund was done (the real ledger, on the table)', () => {
  let ledger: DynamoCreditLedger;
  const failedEnd = { status: 'failed' as const, error: { status: 500, message: 'Navigation timed out' } };
  const accountItem = async () =>
    (
      await db.send(
        new GetCommand({ TableName: TEST_TABLE, Key: itemKey.account(ACCOUNT), ConsistentRead: true }),
      )
    ).Item ?? {};
  /** An end far enough back that the ending delivery's claim on the refund has run out. */
  const longAgo = () => Date.now() - REFUND_CLAIM_MS - 1_000;
  /** A worker whose clock says every claim made until now has run out. */
  const workerLater = (deps: Partial<RunJobDeps> = {}) =>
    runJob({ ...workerDeps(ledger), now: () => Date.now() + REFUND_CLAIM_MS + 1_000, ...deps });
  /** A store whose worker is killed at `method`: the write is never made, nothing after it either. */
  const killedAt = <T extends object>(port: T, method: keyof T): T =>
    Object.assign(Object.create(port) as T, { [method]: () => Promise.reject(new Error('worker killed')) });
  const refundMarks = async () =>
    Object.keys(await accountItem()).filter((name) => name.startsWith('refund#'));
  const resent = () => queue.sent.filter((entry) => entry.message.kind === 'capture');
  async function expectRefundedOnce(jobId: string) {
    expect(await ledger.balance(ACCOUNT)).toBe(10);
    expect(await jobs.get(ACCOUNT, jobId)).not.toHaveProperty('refundOwed');
    expect(await refundMarks()).toEqual([]);
  }

  beforeEach(() => {
    ledger = new DynamoCreditLedger(db, TEST_TABLE);
    run = workerWith(ledger);
  });

  it('leaves neither a debt, nor a claim on the job, nor a mark on the account once a failure is refunded', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 1);
    const ended = await jobs.get(ACCOUNT, job.id);
    expect(ended).toMatchObject({ status: 'failed' });
    expect(ended).not.toHaveProperty('refundClaimedUntil');
    await expectRefundedOnce(job.id);
  });

  it('refunds once on the normal failure path, and reports the end once per delivery, each after the credits are back', async () => {
    const { job } = await accepted('https://a.test/page', { ledger, webhookUrl: 'https://hooks.test/job' });
    const balancesAtEnd: number[] = [];
    const reportEnd = jobEnded({ jobs, queue, now: Date.now });
    run = runJob({
      ...workerDeps(ledger),
      ended: async (ended) => {
        balancesAtEnd.push(await ledger.balance(ACCOUNT));
        await reportEnd(ended);
      },
    });
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 1);
    // A copy of its message, after the ending delivery was done.
    await run(ACCOUNT, job.id, 1);
    expect(balancesAtEnd).toEqual([10, 10]);
    expect(queue.sent.map((entry) => entry.message)).toEqual([
      expect.objectContaining({ kind: 'webhook', subjectId: job.id }),
      expect.objectContaining({ kind: 'webhook', subjectId: job.id }),
    ]);
    await expectRefundedOnce(job.id);
  });

  it('gives nothing back into a balance an operator set after its acceptance (an account cut off)', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    expect(await ledger.set(ACCOUNT, 0)).toBe(0);
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 1);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'failed' });
    expect(await ledger.balance(ACCOUNT)).toBe(0);
    expect(await refundMarks()).toEqual([]);
  });

  it('died after the ending write: the next delivery gives the credits back, once however often it comes', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    // What a worker killed right after the ending write leaves behind, found once its claim has run out.
    expect(await jobs.finish(ACCOUNT, job.id, failedEnd, longAgo())).toMatchObject({ refundOwed: true });
    expect(await ledger.balance(ACCOUNT)).toBe(9);
    await run(ACCOUNT, job.id, 2);
    await run(ACCOUNT, job.id, 3);
    await expectRefundedOnce(job.id);
    expect(renderer.captures).toEqual([]);
  });

  it('died after the refund, before the job said so: the next delivery gives nothing more', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    await jobs.finish(ACCOUNT, job.id, failedEnd, longAgo());
    expect(await ledger.refundOnce(ACCOUNT, 1, job.id)).toBe(true);
    expect(await ledger.balance(ACCOUNT)).toBe(10);
    await run(ACCOUNT, job.id, 2);
    await expectRefundedOnce(job.id);
  });

  it('leaves the refund to the delivery that holds its claim, and sends itself again for when the claim runs out', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    const endedAt = Date.now();
    await jobs.finish(ACCOUNT, job.id, failedEnd, endedAt);
    // A copy of the message, read while the ending worker gives the refund and forgets its mark.
    await run(ACCOUNT, job.id, 1);
    expect(await ledger.balance(ACCOUNT)).toBe(9);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ refundOwed: true });
    const [again] = resent();
    expect(again?.message).toEqual({ kind: 'capture', accountId: ACCOUNT, jobId: job.id });
    expect(endedAt + (again?.delaySeconds ?? 0) * 1000).toBeGreaterThanOrEqual(endedAt + REFUND_CLAIM_MS);
    // It comes back: the ending worker died before the refund, so it gives it.
    await workerLater()(ACCOUNT, job.id, 1);
    await expectRefundedOnce(job.id);
  });

  it('two copies: one read before the other said its refund was given, and asks after that one forgot its mark: refunded once', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    // The ending worker died after its ending write; its claim has run out, and two copies come together.
    await jobs.finish(ACCOUNT, job.id, failedEnd, longAgo());
    const firstDone = deferred();
    const secondRead = deferred();
    const readEarly = Object.assign(Object.create(jobs) as DynamoJobStore, {
      get: async (...args: Parameters<DynamoJobStore['get']>) => {
        const found = await jobs.get(...args);
        secondRead.resolve();
        await firstDone.promise;
        return found;
      },
    });
    const second = runJob({ ...workerDeps(ledger), jobs: readEarly })(ACCOUNT, job.id, 1);
    await secondRead.promise;
    await run(ACCOUNT, job.id, 1);
    expect(await refundMarks()).toEqual([]);
    firstDone.resolve();
    await second;
    await expectRefundedOnce(job.id);
  });

  it('many copies at once after the claim ran out: refunded once, and their messages sent again give nothing more', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    await jobs.finish(ACCOUNT, job.id, failedEnd, longAgo());
    await Promise.all(Array.from({ length: 8 }, (_, copy) => run(ACCOUNT, job.id, copy + 1)));
    await expectRefundedOnce(job.id);
    const again = resent();
    expect(again.length).toBeLessThan(8);
    await Promise.all(again.map(() => workerLater()(ACCOUNT, job.id, 1)));
    await expectRefundedOnce(job.id);
  });

  it('a claimer killed after the refund, before the job said so: the next claim gives nothing more and ends the debt', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    const dying = runJob({ ...workerDeps(ledger), jobs: killedAt(jobs, 'refundGiven') });
    await expect(dying(ACCOUNT, job.id, MAX_JOB_RUNS + 1)).rejects.toThrow('worker killed');
    expect(await ledger.balance(ACCOUNT)).toBe(10);
    // Its message comes back while its claim holds: nothing is given, the message waits for the claim.
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 2);
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ refundOwed: true });
    expect(resent()).toHaveLength(1);
    await workerLater()(ACCOUNT, job.id, 1);
    await expectRefundedOnce(job.id);
  });

  it('a claimer killed before the refund: the next claim, once it ran out, gives the credits back once', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    const dying = runJob({ ...workerDeps(killedAt(ledger, 'refundOnce')) });
    await expect(dying(ACCOUNT, job.id, MAX_JOB_RUNS + 1)).rejects.toThrow('worker killed');
    await run(ACCOUNT, job.id, MAX_JOB_RUNS + 2);
    expect(await ledger.balance(ACCOUNT)).toBe(9);
    const later = workerLater();
    await later(ACCOUNT, job.id, 1);
    await later(ACCOUNT, job.id, 2);
    await expectRefundedOnce(job.id);
  });

  it('keeps a refund the ledger refused owed on the job, never as a pending refund, and gives it on a later delivery', async () => {
    const { job } = await accepted('https://a.test/page', { ledger });
    const pendingRefunds = new MemoryPendingRefunds();
    let refusals = 1;
    const flaky = Object.assign(Object.create(ledger) as DynamoCreditLedger, {
      refundOnce: (...args: Parameters<DynamoCreditLedger['refundOnce']>) =>
        refusals-- > 0 ? Promise.reject(new Error('throttled')) : ledger.refundOnce(...args),
    });
    run = runJob({ ...workerDeps(flaky), pendingRefunds });
    await expect(run(ACCOUNT, job.id, MAX_JOB_RUNS + 1)).rejects.toThrow('throttled');
    expect(await jobs.get(ACCOUNT, job.id)).toMatchObject({ status: 'failed', refundOwed: true });
    expect(pendingRefunds.pending).toEqual([]);
    expect(usage.records).toHaveLength(1);
    expect(await ledger.balance(ACCOUNT)).toBe(9);
    // The message comes back once the claim of the delivery that ended the job has run out.
    const later = workerLater({ credits: flaky, pendingRefunds });
    await later(ACCOUNT, job.id, 1);
    await later(ACCOUNT, job.id, 2);
    await expectRefundedOnce(job.id);
    expect(usage.records).toHaveLength(1);
  });

  it('gives each refund id once even when asked in parallel', async () => {
    await ledger.set(ACCOUNT, 0);
    const given = await Promise.all(
      Array.from({ length: 8 }, () => ledger.refundOnce(ACCOUNT, 5, 'job_same')),
    );
    expect(given.filter(Boolean)).toHaveLength(1);
    expect(await ledger.balance(ACCOUNT)).toBe(5);
    await ledger.forgetRefund(ACCOUNT, 'job_same');
    expect(await refundMarks()).toEqual([]);
  });
});

describe("the claim on a failed job's refund (the table)", () => {
  const failedEnd = { status: 'failed' as const, error: { status: 500, message: 'x' } };

  it('is held by the ending delivery, taken by one other once it ran out, and by none once the refund is given', async () => {
    const { job } = await accepted('https://a.test/page');
    const endedAt = Date.now();
    expect(await jobs.finish(ACCOUNT, job.id, failedEnd, endedAt)).toMatchObject({
      refundClaimedUntil: endedAt + REFUND_CLAIM_MS,
    });
    expect(await jobs.claimRefund(ACCOUNT, job.id, endedAt + REFUND_CLAIM_MS - 1)).toBe(false);
    const runOut = endedAt + REFUND_CLAIM_MS;
    expect(await Promise.all([1, 2, 3].map(() => jobs.claimRefund(ACCOUNT, job.id, runOut)))).toEqual(
      expect.arrayContaining([true, false, false]),
    );
    expect(await jobs.claimRefund(ACCOUNT, job.id, runOut + REFUND_CLAIM_MS - 1)).toBe(false);
    await jobs.refundGiven(ACCOUNT, job.id);
    expect(await jobs.claimRefund(ACCOUNT, job.id, runOut + 10 * REFUND_CLAIM_MS)).toBe(false);
    const given = await jobs.get(ACCOUNT, job.id);
    expect(given).not.toHaveProperty('refundOwed');
    expect(given).not.toHaveProperty('refundClaimedUntil');
  });

  it('is taken on a job that owes its refund without one (ended before claims existed)', async () => {
    const { job } = await accepted('https://a.test/page');
    await jobs.finish(ACCOUNT, job.id, failedEnd, Date.now());
    await db.send(
      new UpdateCommand({
        TableName: TEST_TABLE,
        Key: itemKey.job(ACCOUNT, job.id),
        UpdateExpression: 'REMOVE refundClaimedUntil',
      }),
    );
    expect(await jobs.claimRefund(ACCOUNT, job.id, Date.now())).toBe(true);
  });

  it('is never taken on a job that succeeded, or on one whose refund its caller gave', async () => {
    const succeeded = (await accepted('https://a.test/page')).job;
    await run(ACCOUNT, succeeded.id, 1);
    const refused = (await accepted('https://a.test/page')).job;
    await jobs.finish(ACCOUNT, refused.id, { ...failedEnd, refundedByCaller: true }, Date.now());
    for (const id of [succeeded.id, refused.id])
      expect(await jobs.claimRefund(ACCOUNT, id, Date.now())).toBe(false);
  });
});
