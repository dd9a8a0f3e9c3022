import { PurgeQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type LocalQueue, startLocalQueue, startQueuePoller } from '../../local/localQueue';
import type { QueueMessage } from '../../shared/jobs/jobQueue';
import { SqsJobQueue } from '../../shared/store/sqsJobQueue';
import { deferred } from '../helpers/deferred';

/**
 * What keeps one account's backlog from holding everyone's messages, against the local SQS API: every message names
 * its account as its message group (deployed, that makes SQS a fair queue), and the local event source gathers
 * webhook attempts into batches, so a burst of hanging ones holds a few invocations, not all of them.
 */

let sqs: LocalQueue;

beforeAll(async () => {
  sqs = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
});

afterAll(async () => {
  await sqs?.close();
});

beforeEach(async () => {
  for (const QueueUrl of [sqs.queueUrl, sqs.webhookQueueUrl])
    await sqs.client.send(new PurgeQueueCommand({ QueueUrl }));
});

const webhookAttempt = (accountId: string, subjectId: string): QueueMessage => ({
  kind: 'webhook',
  accountId,
  subjectId,
  timestamp: 0,
  attempt: 0,
});

describe('the job queue', () => {
  it("sends every message in its account's message group, on both queues", async () => {
    // fauxqs keeps no group on a standard queue: what left is read from the requests the SDK sent it.
    const client = new SQSClient({
      endpoint: sqs.endpoint,
      region: 'us-east-1',
      credentials: sqs.credentials,
    });
    const sent: { QueueUrl?: string; Entries?: { MessageGroupId?: string }[] }[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendMessageBatchCommand') sent.push(args.input as (typeof sent)[number]);
        return next(args);
      },
      { step: 'initialize' },
    );
    try {
      await new SqsJobQueue(client, sqs.queueUrl, sqs.webhookQueueUrl).send([
        { kind: 'capture', accountId: 'acct_a', jobId: 'job_1' },
        webhookAttempt('acct_b', 'job_2'),
      ]);
    } finally {
      client.destroy();
    }
    const groups = (queueUrl: string) =>
      sent
        .filter((request) => request.QueueUrl === queueUrl)
        .flatMap((request) => (request.Entries ?? []).map((entry) => entry.MessageGroupId));
    expect(groups(sqs.queueUrl)).toEqual(['acct_a']);
    expect(groups(sqs.webhookQueueUrl)).toEqual(['acct_b']);
  });
});

describe('the local event source with batches', () => {
  it('hands a burst of messages to a few invocations of up to a batch each', async () => {
    const queue = new SqsJobQueue(sqs.client, sqs.queueUrl, sqs.webhookQueueUrl);
    const release = deferred();
    const events: number[] = [];
    // Every invocation hangs, as a batch of attempts at receivers that never answer would.
    const poller = startQueuePoller({
      queue: sqs,
      queueUrl: sqs.webhookQueueUrl,
      handler: async (event: SQSEvent) => {
        events.push(event.Records.length);
        await release.promise;
        return { batchItemFailures: [] };
      },
      concurrency: 3,
      batchSize: 10,
      batchingWindowMs: 1_000,
      visibilityTimeoutSeconds: 30,
    });
    try {
      await queue.send(
        Array.from({ length: 25 }, (_, index) => webhookAttempt('acct_noisy', `job_${index}`)),
      );
      // One at a time, three invocations would hold three attempts and leave 22 waiting.
      await vi.waitFor(() => expect(events.reduce((sum, size) => sum + size, 0)).toBe(25), {
        timeout: 15_000,
        interval: 50,
      });
      expect(events.length).toBeLessThanOrEqual(3);
      expect(Math.max(...events)).toBeLessThanOrEqual(10);
    } finally {
      release.resolve();
      await poller.stop();
    }
  }, 30_000);

  it('deletes the messages of an event but those it reports failed', async () => {
    // A queue whose messages come back a second after a failed delivery.
    const quick = await startLocalQueue({ visibilityTimeoutSeconds: 1 });
    const queue = new SqsJobQueue(quick.client, quick.queueUrl, quick.webhookQueueUrl);
    const seen: string[] = [];
    const poller = startQueuePoller({
      queue: quick,
      queueUrl: quick.webhookQueueUrl,
      handler: async (event: SQSEvent) => {
        const failed = event.Records.filter((record) => {
          const subject = (JSON.parse(record.body) as { subjectId: string }).subjectId;
          seen.push(subject);
          return subject === 'job_failing';
        });
        return { batchItemFailures: failed.map((record) => ({ itemIdentifier: record.messageId })) };
      },
      concurrency: 1,
      batchSize: 10,
      batchingWindowMs: 500,
      visibilityTimeoutSeconds: 1,
    });
    try {
      await queue.send([webhookAttempt('acct_a', 'job_ok'), webhookAttempt('acct_a', 'job_failing')]);
      // The failed one comes back after its visibility timeout; the other never does.
      await vi.waitFor(() => expect(seen.filter((id) => id === 'job_failing').length).toBeGreaterThan(1), {
        timeout: 15_000,
        interval: 50,
      });
      expect(seen.filter((id) => id === 'job_ok')).toEqual(['job_ok']);
    } finally {
      await poller.stop();
      await quick.close();
    }
  }, 30_000);
});
