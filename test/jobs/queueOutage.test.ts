import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';
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

it('passes on what is no outage as it is: a queue that does not exist will not exist in a second either', async () => {
  const gone = new SqsJobQueue(sqs.client, `${sqs.queueUrl}-gone`);
  const refused = await gone.send([message]).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(Error);
  expect(refused).not.toBeInstanceOf(StoreUnavailableError);
  await expect(new SqsJobQueue(sqs.client, sqs.queueUrl).send([message])).resolves.toBeUndefined();
});

it('fails as an outage when the queue cannot be reached', async () => {
  const closed = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
  await closed.close();
  await expect(new SqsJobQueue(closed.client, closed.queueUrl).send([message])).rejects.toBeInstanceOf(
    StoreUnavailableError,
  );
});

it("fails as an outage when the queue fails on its side (the local queue's disk full)", async () => {
  // SQS's JSON protocol, answered as the local queue answers a failed SQLite write.
  const failing = createServer((_request, response) =>
    response
      .writeHead(500, { 'Content-Type': 'application/x-amz-json-1.0' })
      .end(
        JSON.stringify({ __type: 'com.amazonaws.sqs#InternalError', message: 'database or disk is full' }),
      ),
  );
  failing.listen(0, '127.0.0.1');
  await once(failing, 'listening');
  const client = new SQSClient({
    endpoint: `http://127.0.0.1:${(failing.address() as AddressInfo).port}`,
    region: 'us-east-1',
    credentials: sqs.credentials,
    maxAttempts: 1,
  });
  try {
    await expect(new SqsJobQueue(client, `${sqs.queueUrl}`).send([message])).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  } finally {
    client.destroy();
    failing.close();
  }
});
