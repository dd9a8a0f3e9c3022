import { randomBytes } from 'node:crypto';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { createEgressGate } from '../../shared/egress/egressGate';
import { jobEnded } from '../../shared/jobs/jobEvents';
import { jobIntake } from '../../shared/jobs/jobIntake';
import { type JobQueue, type QueueMessage, queueMessage } from '../../shared/jobs/jobQueue';
import { WEBHOOK_CLAIM_MS } from '../../shared/jobs/jobStore';
import { sendWebhook } from '../../shared/jobs/sendWebhook';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoJobStore } from '../../shared/store/dynamoJobStore';
import { MemoryImageStore } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

/**
 * Events a worker owes after the write that made them due, when it dies before queueing them: the next delivery of
 * its message queues them again. Against the real job table (dynalite) and a real receiver on 127.0.0.1.
 */

const ACCOUNT = 'acct-events';
const identity = { accountId: ACCOUNT, keyId: 'key_1', isActive: true } as never;

/** Records what is queued; `dies` makes the next send throw, as a worker killed at that moment would leave it. */
class RecordingQueue implements JobQueue {
  readonly sent: QueueMessage[] = [];
  dies = false;
  async send(messages: QueueMessage[]): Promise<void> {
    if (this.dies) {
      this.dies = false;
      throw new Error('the worker died');
    }
    this.sent.push(...messages);
  }
}

let store: EmbeddedDynamo;
let jobs: DynamoJobStore;
let receiver: WebhookReceiver;
let answers: number[];
let queue: RecordingQueue;

beforeAll(async () => {
  store = await startTestStore();
  jobs = new DynamoJobStore(DynamoDBDocumentClient.from(store.client), TEST_TABLE);
  receiver = await startWebhookReceiver((_request, response) => {
    response.writeHead(answers.shift() ?? 204).end();
  });
});
afterAll(async () => {
  await receiver?.close();
  await store?.close();
});
beforeEach(() => {
  answers = [];
  queue = new RecordingQueue();
});

const accept = (options: { batch?: boolean }) =>
  jobIntake({
    jobs,
    queue: new RecordingQueue(),
    cipher: new AesGcmSecretCipher(randomBytes(32)),
    now: Date.now,
  })(identity, [{ request: { url: 'https://a.test/' }, cost: 1 }], {
    webhookUrl: `${receiver.origin}/hook`,
    ...options,
  });

/** The worker's clock, `laterMs` on: a message a dead worker held comes back once its visibility timeout ran out. */
const webhooks = (laterMs = 0) =>
  sendWebhook({
    jobs,
    queue,
    images: new MemoryImageStore(),
    secrets: { signingSecrets: async () => ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] },
    delivery: { egress: createEgressGate({ allowPrivateHosts: receiver.hostPort }) },
    now: () => Date.now() + laterMs,
    retryDelaySeconds: () => 1,
  });

type WebhookMessage = Extract<QueueMessage, { kind: 'webhook' }>;

/** A failed job with a webhook, and its first attempt's message. */
async function failedJob(): Promise<{ jobId: string; first: WebhookMessage }> {
  const { jobs: accepted } = await accept({});
  const jobId = accepted[0]?.id as string;
  await jobs.finish(ACCOUNT, jobId, { status: 'failed', error: { status: 500, message: 'x' } }, Date.now());
  return {
    jobId,
    first: { kind: 'webhook', accountId: ACCOUNT, subjectId: jobId, timestamp: Date.now(), attempt: 0 },
  };
}

const queuedFor = (attempt: number) =>
  queue.sent.filter(
    (message): message is WebhookMessage => message.kind === 'webhook' && message.attempt === attempt,
  );

describe('a webhook attempt whose worker died before it queued the next', () => {
  it('is queued again by the next delivery of the attempt before it, and then delivered', async () => {
    const { jobId, first } = await failedJob();
    answers = [500];
    queue.dies = true;
    await expect(webhooks()(first)).rejects.toThrow('the worker died');
    expect((await jobs.get(ACCOUNT, jobId))?.webhook).toMatchObject({ status: 'pending', attempts: 1 });
    expect(queue.sent).toEqual([]);

    // A copy of its message at once (the worker might still be queueing the next): it looks again later.
    await webhooks()(first);
    expect(queue.sent).toEqual([
      expect.objectContaining({ attempt: 0, notBefore: expect.any(Number) }) as unknown as QueueMessage,
    ]);
    queue.sent.length = 0;
    // Its message comes back once the dead worker's claim ran out: the attempt is not made again, the next one is
    // queued, once.
    await webhooks(WEBHOOK_CLAIM_MS)(first);
    await webhooks(WEBHOOK_CLAIM_MS)(first);
    expect(receiver.received.filter((hook) => hook.body.includes(jobId))).toHaveLength(1);
    expect(queue.sent).toHaveLength(1);
    const [next] = queue.sent;
    expect(next).toMatchObject({ kind: 'webhook', subjectId: jobId, attempt: 1 });
    if (next?.kind !== 'webhook') throw new Error('expected the next attempt');

    await webhooks(WEBHOOK_CLAIM_MS)({ ...next, notBefore: Date.now() + WEBHOOK_CLAIM_MS });
    expect((await jobs.get(ACCOUNT, jobId))?.webhook).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(receiver.received.filter((hook) => hook.body.includes(jobId))).toHaveLength(2);
  });
  /**
   * Red team (round 14): the copy that queued the dead worker's next attempt again noted it queued before it sent it;
   * a send that failed then (an SQS error, the worker killed again) left every later copy finding it noted, and the
   * webhook pending for good with nothing queued. Now that copy takes a claim that runs out, and notes the attempt
   * queued only once it is sent.
   */
  it('is still queued when the copy that queues it again fails to send it', async () => {
    const { jobId, first } = await failedJob();
    answers = [500];
    queue.dies = true;
    await expect(webhooks()(first)).rejects.toThrow('the worker died');
    queue.dies = true;
    await expect(webhooks(WEBHOOK_CLAIM_MS)(first)).rejects.toThrow('the worker died');
    expect(queue.sent).toEqual([]);

    // Copies while its claim holds look again later; the one after it queues the attempt, once.
    await webhooks(WEBHOOK_CLAIM_MS + 1_000)(first);
    await webhooks(2 * WEBHOOK_CLAIM_MS + 1_000)(first);
    await webhooks(2 * WEBHOOK_CLAIM_MS + 2_000)(first);
    expect((await jobs.get(ACCOUNT, jobId))?.webhook).toMatchObject({ status: 'pending', attempts: 1 });
    expect(queuedFor(1)).toHaveLength(1);
  });
});

describe('what a webhook attempt says', () => {
  it("comes from the job, not the message: nothing before the job ended, then the job's own id and type", async () => {
    const { jobs: accepted } = await accept({});
    const jobId = accepted[0]?.id as string;
    // A message no one of ours sent (the queue is not the service's word), with what it would like to say.
    const claimed = {
      kind: 'webhook',
      accountId: ACCOUNT,
      subjectId: jobId,
      timestamp: Date.now(),
      attempt: 0,
      eventId: 'msg_chosen-by-the-sender',
      type: 'screenshot.succeeded',
    };
    const message = queueMessage.parse(claimed);
    if (message.kind !== 'webhook') throw new Error('unreachable');
    await webhooks()(message);
    expect(receiver.received.filter((hook) => hook.body.includes(jobId))).toEqual([]);

    await jobs.finish(ACCOUNT, jobId, { status: 'failed', error: { status: 500, message: 'x' } }, Date.now());
    await webhooks()(message);
    const sent = receiver.received.filter((hook) => hook.body.includes(jobId));
    expect(sent.map((hook) => [hook.headers['webhook-id'], JSON.parse(hook.body).type])).toEqual([
      [`msg_${jobId}`, 'screenshot.failed'],
    ]);
  });
});

describe('a batch whose last job ended in a worker that died before it queued batch.completed', () => {
  it('gets its event from the next delivery of that job, and only while its webhook was never tried', async () => {
    const { jobs: accepted, batch } = await accept({ batch: true });
    const job = await jobs.finish(
      ACCOUNT,
      accepted[0]?.id as string,
      { status: 'failed', error: { status: 500, message: 'x' } },
      Date.now(),
    );
    if (!job || !batch) throw new Error('expected the job to end');
    const ended = jobEnded({ jobs, queue, now: Date.now });
    queue.dies = true;
    await expect(ended(job)).rejects.toThrow('the worker died');
    expect(await jobs.getBatch(ACCOUNT, batch.id)).toMatchObject({ status: 'completed' });

    await ended(job);
    expect(queue.sent).toEqual([expect.objectContaining({ kind: 'webhook', subjectId: batch.id })]);

    // Once an attempt was made, a late copy of the job's message sends nothing more.
    const [event] = queue.sent;
    if (event?.kind !== 'webhook') throw new Error('expected the event');
    await webhooks()(event);
    await ended(job);
    expect(queue.sent).toHaveLength(1);
  });
});

/**
 * Red team (round 13b): a late copy of an attempt's message (SQS delivers at least once) re-queued the next attempt
 * as if its worker had died before queueing it, and two copies at once both called the receiver: every later attempt
 * ran twice, each holding one of the shared webhook places. Now one delivery claims each attempt before it calls the
 * receiver, the next attempt's message is noted queued, and a copy queues it again only when it was not and the
 * claim ran out; a copy that comes while a claim holds looks again later.
 */
describe('a copy of a webhook attempt’s message', () => {
  const deliveries = (jobId: string) => receiver.received.filter((hook) => hook.body.includes(jobId)).length;

  it('that comes after it is dropped, not turned into a second chain of attempts', async () => {
    const { jobId, first } = await failedJob();
    answers = [500, 500];
    await webhooks()(first);
    await webhooks()(first);
    expect(deliveries(jobId)).toBe(1);

    const second = queuedFor(1).map((message) => ({ ...message, notBefore: Date.now() }));
    await Promise.all(second.map((message) => webhooks()(message)));

    expect({ second: second.length, calls: deliveries(jobId), third: queuedFor(2).length }).toEqual({
      second: 1,
      calls: 2,
      third: 1,
    });
  });

  it('that runs beside it calls the receiver once, and looks again later', async () => {
    const { jobId, first } = await failedJob();
    answers = [500];
    await Promise.all([webhooks()(first), webhooks()(first)]);
    expect(deliveries(jobId)).toBe(1);
    expect({ later: queuedFor(0).length, next: queuedFor(1).length }).toEqual({ later: 1, next: 1 });
  });
});
