import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LocalQueue, startLocalQueue } from '../../local/localQueue';
import { StoreUnavailableError } from '../../shared/errors';
import { SqsJobQueue } from '../../shared/store/sqsJobQueue';

/**
 * Red team (round 27): a queue that could not take the messages (the local queue's disk full) made the async
 * capture's and the batch's intake answer a bare `500 Internal server error`; the contract says `503` with
 * `Retry-After`, which StoreUnavailableError is. Against the local SQS API.
 */

let sqs: LocalQueue;

beforeAll(async () => {
  sqs = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
});

afterAll(async () => {
  await sqs?.close();
});

const message = { kind: 'capture', accountId: 'acct', jobId: 'job_1' } as const;

it('fails as an outage when the queue refuses the messages', async () => {
  const gone = new SqsJobQueue(sqs.client, `${sqs.queueUrl}-gone`);
  await expect(gone.send([message])).rejects.toBeInstanceOf(StoreUnavailableError);
  await expect(new SqsJobQueue(sqs.client, sqs.queueUrl).send([message])).resolves.toBeUndefined();
});

it('fails as an outage when the queue cannot be reached', async () => {
  const closed = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
  await closed.close();
  await expect(new SqsJobQueue(closed.client, closed.queueUrl).send([message])).rejects.toBeInstanceOf(
    StoreUnavailableError,
  );
});
