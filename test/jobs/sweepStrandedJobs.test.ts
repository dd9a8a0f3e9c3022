import { randomBytes } from 'node:crypto';
import { DeleteMessageCommand, PurgeQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { type LocalQueue, startLocalQueue } from '../../local/localQueue';
import type { SlotLease } from '../../shared/accounts/captureSlots';
import { type Job, STRANDED_AFTER_MS } from '../../shared/jobs/job';
import { jobIntake } from '../../shared/jobs/jobIntake';
import { type JobQueue, type QueueMessage, queueMessage } from '../../shared/jobs/jobQueue';
import { SWEEP_SHARDS, type SweepEntry } from '../../shared/jobs/jobStore';
import { ITEM_WRITE_WINDOW_MS, LATEST_START_MS, runJob } from '../../shared/jobs/runJob';
import { MAX_BATCH_SIZE } from '../../shared/jobs/submitBatch';
import {
  fairShare,
  nextSweepAt,
  SWEEP_PER_ACCOUNT,
  SWEEP_SEND_LIMIT,
  sweepStrandedJobs,
} from '../../shared/jobs/sweepStrandedJobs';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { DynamoJobStore } from '../../shared/store/dynamoJobStore';
import { SqsJobQueue } from '../../shared/store/sqsJobQueue';
import { jobWorkerDeps } from '../helpers/jobWorker';
import { FakeRenderer, MemoryCaptureSlots } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The sweep of stranded jobs against the real parts: the job table with its queued-jobs index (dynalite over HTTP)
 * and the local SQS API. A stranded job is one whose accepting function died after writing its item and before
 * sending its message.
 */

const cipher = new AesGcmSecretCipher(randomBytes(32));

let store: EmbeddedDynamo;
let sqs: LocalQueue;
let db: DynamoDBDocumentClient;
let jobs: DynamoJobStore;
let queue: SqsJobQueue;
let ledger: DynamoCreditLedger;
let renderer: FakeRenderer;
let slots: MemoryCaptureSlots;

beforeAll(async () => {
  sqs = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
  queue = new SqsJobQueue(sqs.client, sqs.queueUrl);
});

afterAll(async () => {
  await sqs?.close();
});

// A table and a queue of its own for each test: a sweep reads every account's jobs.
beforeEach(async () => {
  store = await startTestStore();
  db = DynamoDBDocumentClient.from(store.client, { marshallOptions: { removeUndefinedValues: true } });
  jobs = new DynamoJobStore(db, TEST_TABLE);
  ledger = new DynamoCreditLedger(db, TEST_TABLE);
  await sqs.client.send(new PurgeQueueCommand({ QueueUrl: sqs.queueUrl }));
  renderer = new FakeRenderer();
  slots = new MemoryCaptureSlots(1);
});

afterEach(async () => {
  await store.close();
});

/** A fresh account with `balance` credits: each test's jobs are its own. */
async function account(balance = 100): Promise<string> {
  const accountId = `acct_${randomBytes(6).toString('hex')}`;
  await ledger.set(accountId, balance);
  return accountId;
}

/** The sweep with its clock at `now`. */
const sweepAt = (now: number) => sweepStrandedJobs({ jobs, queue, now: () => now })();

/** A queue port that never answers: the function that accepted the jobs dies while it waits. */
const dyingQueue: JobQueue = { send: () => new Promise<never>(() => undefined) };

/**
 * Captures accepted as the front accepts them (credits reserved), by a function that dies once their items are
 * written and before their messages are sent: the intake never returns.
 */
async function stranded(accountId: string, count = 1, createdAt = Date.now()): Promise<Job[]> {
  await ledger.reserve(accountId, count);
  const identity = { accountId, keyId: 'key_1', isActive: true } as never;
  const written = async () =>
    (await jobs.latest(accountId, count + 1)).filter((job) => job.createdAt === createdAt);
  // A batch's worth at a time, as a front accepts them (MAX_BATCH_SIZE): hundreds of writes at once to the embedded
  // table outlast the client's connection timeout on a loaded machine.
  for (let done = 0; done < count; done += MAX_BATCH_SIZE) {
    const size = Math.min(MAX_BATCH_SIZE, count - done);
    const captures = Array.from({ length: size }, (_, i) => ({
      request: { url: `https://a.test/${done + i}` },
      cost: 1,
    }));
    void jobIntake({ jobs, queue: dyingQueue, cipher, now: () => createdAt })(identity, captures, {});
    await expect.poll(async () => (await written()).length, { timeout: 30_000 }).toBe(done + size);
  }
  return written();
}

/** Every message on the local queue now, deleted as read. */
async function drain(): Promise<QueueMessage[]> {
  const messages: QueueMessage[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.client.send(
      new ReceiveMessageCommand({ QueueUrl: sqs.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (Messages.length === 0) return messages;
    for (const message of Messages) {
      messages.push(queueMessage.parse(JSON.parse(message.Body ?? '')));
      await sqs.client.send(
        new DeleteMessageCommand({ QueueUrl: sqs.queueUrl, ReceiptHandle: message.ReceiptHandle }),
      );
    }
  }
}

/** The worker, as deployed but for its renderer, slots and image store. */
const worker = () =>
  runJob(jobWorkerDeps({ jobs, queue, captureSlots: slots, renderer, cipher, credits: ledger }));

/** Runs every capture message on the queue through the worker, as the queue delivers them. */
async function runQueued(): Promise<QueueMessage[]> {
  const messages = await drain();
  const run = worker();
  for (const message of messages)
    if (message.kind === 'capture') await run(message.accountId, message.jobId, 1);
  return messages;
}

const strandedTime = (job: Job) => job.createdAt + STRANDED_AFTER_MS;

describe('the sweep of stranded jobs', () => {
  it('finds a job whose message was never sent and queues it again: it runs to success, charged once', async () => {
    const accountId = await account(10);
    const [job] = await stranded(accountId);
    if (!job) throw new Error('no job');
    expect(job).toMatchObject({ status: 'queued', sweepAt: strandedTime(job) });
    expect(await drain()).toEqual([]);

    expect(await sweepAt(strandedTime(job))).toEqual({ requeued: 1 });
    const sent = await runQueued();
    expect(sent).toEqual([{ kind: 'capture', accountId, jobId: job.id }]);
    expect(await jobs.get(accountId, job.id)).toMatchObject({ status: 'succeeded', runs: 1 });
    expect(renderer.captures).toHaveLength(1);
    expect(await ledger.balance(accountId)).toBe(9);
    // Out of the index once it started: no later sweep sends it again.
    expect(await jobs.get(accountId, job.id)).not.toHaveProperty('sweepAt');
    expect(await sweepAt(strandedTime(job) + 24 * 60 * 60 * 1000)).toEqual({ requeued: 0 });
    expect(await drain()).toEqual([]);
    expect(await ledger.balance(accountId)).toBe(9);
  });

  it('never queues again a job that is running, succeeded or failed', async () => {
    const accountId = await account();
    const [running, succeeded, failed] = await stranded(accountId, 3);
    if (!running || !succeeded || !failed) throw new Error('no jobs');
    await jobs.start(accountId, running.id, Date.now(), false);
    await jobs.finish(accountId, succeeded.id, { status: 'succeeded', result: {} as never }, Date.now());
    await jobs.finish(
      accountId,
      failed.id,
      { status: 'failed', error: { status: 500, message: 'x' } },
      Date.now(),
    );
    const later = strandedTime(running) + 60 * 60 * 1000;
    expect(await sweepAt(later)).toEqual({ requeued: 0 });
    expect(await drain()).toEqual([]);
    for (const shard of Array.from({ length: SWEEP_SHARDS }, (_, i) => i))
      expect(
        (await jobs.dueForSweep(shard, later, 1_000)).filter((entry) => entry.accountId === accountId),
      ).toEqual([]);
  });

  it('leaves alone a job inside its write window, and until its sweep time after that', async () => {
    const accountId = await account();
    const [job] = await stranded(accountId);
    if (!job) throw new Error('no job');
    expect(STRANDED_AFTER_MS).toBeGreaterThan(ITEM_WRITE_WINDOW_MS + 60_000);
    expect(await sweepAt(job.createdAt)).toEqual({ requeued: 0 });
    expect(await sweepAt(job.createdAt + ITEM_WRITE_WINDOW_MS + 1_000)).toEqual({ requeued: 0 });
    expect(await sweepAt(strandedTime(job) - 1)).toEqual({ requeued: 0 });
    expect(await drain()).toEqual([]);
    expect(await jobs.get(accountId, job.id)).toMatchObject({ status: 'queued', sweepAt: strandedTime(job) });
  });

  it('queues a job waiting for a slot again at most once per interval', async () => {
    const accountId = await account();
    const [job] = await stranded(accountId);
    if (!job) throw new Error('no job');
    const held = (await slots.acquire(accountId, Date.now(), Date.now() + 60 * 60 * 1000)) as SlotLease;
    const first = strandedTime(job);
    expect(await sweepAt(first)).toEqual({ requeued: 1 });
    // Its message finds no slot and is sent again with a delay: the job stays queued.
    expect(await runQueued()).toHaveLength(1);
    expect(await jobs.get(accountId, job.id)).toMatchObject({ status: 'queued' });
    // Sweeps within the interval leave it alone, however many.
    for (const at of [first, first + 1_000, first + STRANDED_AFTER_MS - 1])
      expect(await sweepAt(at)).toEqual({ requeued: 0 });
    expect(await sweepAt(nextSweepAt(job.id, first))).toEqual({ requeued: 1 });
    await slots.release(accountId, held.leaseId);
    await expect.poll(runQueued, { timeout: 10_000 }).not.toEqual([]);
    await expect
      .poll(async () => (await jobs.get(accountId, job.id))?.status, { timeout: 10_000 })
      .toBe('succeeded');
    expect(await ledger.balance(accountId)).toBe(99);
  });

  it('is kept away from a job whose own message keeps coming back for a slot', async () => {
    const accountId = await account();
    const [job] = await stranded(accountId);
    if (!job) throw new Error('no job');
    await slots.acquire(accountId, Date.now(), Date.now() + 60 * 60 * 1000);
    // Its sweep time is near: its message, finding no slot, moves it on.
    const near = Date.now() + 10_000;
    expect(await jobs.moveSweep(accountId, job.id, strandedTime(job), near)).toBe(true);
    await worker()(accountId, job.id, 1);
    const waiting = await jobs.get(accountId, job.id);
    expect(waiting?.sweepAt).toBeGreaterThanOrEqual(near + STRANDED_AFTER_MS / 2);
    expect(await sweepAt(near)).toEqual({ requeued: 0 });
    expect(await jobs.get(accountId, job.id)).toMatchObject({ status: 'queued', sweepAt: waiting?.sweepAt });
  });

  it('queues a job once when two sweeps run at once', async () => {
    const accountId = await account();
    const made = await stranded(accountId, 5);
    const at = strandedTime(made[0] as Job);
    const [one, two] = await Promise.all([sweepAt(at), sweepAt(at)]);
    expect((one?.requeued ?? 0) + (two?.requeued ?? 0)).toBe(5);
    const sent = await drain();
    expect(sent.map((message) => (message.kind === 'capture' ? message.jobId : '')).sort()).toEqual(
      made.map((job) => job.id).sort(),
    );
  });

  it('gives its claims back when the queue refuses, so the next run sends them', async () => {
    const accountId = await account();
    const [job] = await stranded(accountId);
    if (!job) throw new Error('no job');
    const refusing: JobQueue = { send: () => Promise.reject(new Error('queue unavailable')) };
    await expect(
      sweepStrandedJobs({ jobs, queue: refusing, now: () => strandedTime(job) })(),
    ).rejects.toThrow();
    expect(await jobs.get(accountId, job.id)).toMatchObject({ status: 'queued', sweepAt: strandedTime(job) });
    expect(await sweepAt(strandedTime(job))).toEqual({ requeued: 1 });
  });

  it('ends failed and refunded, without a capture, a stranded job found too late to keep its result', async () => {
    const accountId = await account(10);
    const [job] = await stranded(accountId, 1, Date.now() - LATEST_START_MS - 60_000);
    if (!job) throw new Error('no job');
    expect(await ledger.balance(accountId)).toBe(9);
    expect(await sweepAt(Date.now())).toEqual({ requeued: 1 });
    await runQueued();
    expect(await jobs.get(accountId, job.id)).toMatchObject({
      status: 'failed',
      error: { status: 503, message: 'The job could not be run in time' },
    });
    expect(renderer.captures).toEqual([]);
    expect(await ledger.balance(accountId)).toBe(10);
  });
});

describe('the sweep under one account with many queued jobs', () => {
  it("queues another account's stranded job in the same run, and only a bounded share of the heavy account's", async () => {
    const heavy = await account(1_000);
    const other = await account();
    const createdAt = Date.now();
    // The heavy account's jobs are all older: they come first in every shard.
    const many = await stranded(heavy, 400, createdAt - 1_000);
    const [victim] = await stranded(other, 1, createdAt);
    if (!victim) throw new Error('no job');
    const { requeued } = await sweepAt(strandedTime(victim));
    const sent = await drain();
    const ids = sent.map((message) => (message.kind === 'capture' ? message.jobId : ''));
    expect(ids).toContain(victim.id);
    expect(requeued).toBe(sent.length);
    expect(sent.length - 1).toBeLessThanOrEqual(SWEEP_SHARDS * SWEEP_PER_ACCOUNT);
    expect(sent.length - 1).toBeLessThan(many.length);
    // The rest are left due for the next runs, which take the next of them.
    const { requeued: next } = await sweepAt(strandedTime(victim) + 1);
    expect(next).toBeGreaterThan(0);
  }, 60_000);

  it('takes at most its share of one account per shard however many it has due, and every other account', () => {
    const due: SweepEntry[] = [
      ...Array.from({ length: 5_000 }, (_, i) => ({ accountId: 'heavy', jobId: `job_${i}`, sweepAt: i })),
      ...Array.from({ length: 20 }, (_, i) => ({
        accountId: `other${i}`,
        jobId: `job_o${i}`,
        sweepAt: 10_000 + i,
      })),
    ];
    const taken = fairShare(due);
    expect(taken.filter((entry) => entry.accountId === 'heavy')).toHaveLength(SWEEP_PER_ACCOUNT);
    expect(taken.filter((entry) => entry.accountId !== 'heavy')).toHaveLength(20);
    expect(taken.length).toBeLessThanOrEqual(SWEEP_SEND_LIMIT);
  });

  it('spaces the sends of a job that stays queued further apart as it ages: about twenty in its seven days', () => {
    const createdAt = Date.now();
    const jobId = `job_${createdAt.toString(36).padStart(9, '0')}${'0'.repeat(16)}`;
    let at = createdAt + STRANDED_AFTER_MS;
    let sends = 0;
    while (at < createdAt + 7 * 24 * 60 * 60 * 1000) {
      sends++;
      const next = nextSweepAt(jobId, at);
      expect(next - at).toBeGreaterThanOrEqual(STRANDED_AFTER_MS);
      at = next;
    }
    expect(sends).toBeLessThanOrEqual(25);
  });
});
