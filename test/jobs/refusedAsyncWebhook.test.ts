import { randomBytes } from 'node:crypto';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { jobEnded } from '../../shared/jobs/jobEvents';
import { jobIntake } from '../../shared/jobs/jobIntake';
import type { JobQueue, QueueMessage } from '../../shared/jobs/jobQueue';
import { runJob } from '../../shared/jobs/runJob';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoJobStore } from '../../shared/store/dynamoJobStore';
import { jobWorkerDeps } from '../helpers/jobWorker';
import { FakeRenderer, MemoryCaptureSlots, MemoryCreditLedger } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team (round 4, jobs): an async capture whose message went through while the queue's answer was lost (a
 * timeout) is answered 503, its credits given back, and its job ended failed by the intake: its id was never given to
 * the client. A batch in that state sends no batch.completed ("its id was never answered", docs/data-model.md), but
 * the single job keeps its webhook: its message, run by the worker, finds it failed and sends screenshot.failed, signed,
 * to the client's receiver, about a job the client was told was not accepted (and whose retry made another).
 */

const ACCOUNT = 'acct-refused';
const identity = { accountId: ACCOUNT, keyId: 'key_1', isActive: true } as never;

let store: EmbeddedDynamo;
let jobs: DynamoJobStore;

beforeAll(async () => {
  store = await startTestStore();
  jobs = new DynamoJobStore(
    DynamoDBDocumentClient.from(store.client, { marshallOptions: { removeUndefinedValues: true } }),
    TEST_TABLE,
  );
});

afterAll(async () => {
  await store?.close();
});

describe('an async capture answered 503 because the queue’s answer was lost', () => {
  it('sends no webhook about the job whose id was never answered', async () => {
    const cipher = new AesGcmSecretCipher(randomBytes(32));
    const sent: QueueMessage[] = [];
    const lostAnswer: JobQueue = {
      async send(messages) {
        sent.push(...messages);
        throw new Error('queue answer lost');
      },
    };
    const intake = jobIntake({ jobs, queue: lostAnswer, cipher, now: Date.now });
    const refused = await intake(identity, [{ request: { url: 'https://a.test/' }, cost: 1 }], {
      webhookUrl: 'https://hooks.test/jobs',
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(Error);

    // The worker takes the message that went through, as it takes any.
    const workerSent: QueueMessage[] = [];
    const workerQueue: JobQueue = {
      async send(messages) {
        workerSent.push(...messages);
      },
    };
    const now = () => Date.now();
    const run = runJob(
      jobWorkerDeps({
        jobs,
        queue: workerQueue,
        credits: new MemoryCreditLedger(),
        captureSlots: new MemoryCaptureSlots(1),
        renderer: new FakeRenderer(),
        cipher,
        ended: jobEnded({ jobs, queue: workerQueue, now }),
        now,
      }),
    );
    for (const message of sent) if (message.kind === 'capture') await run(ACCOUNT, message.jobId, 1);

    expect(workerSent.filter((message) => message.kind === 'webhook')).toEqual([]);
  });
});
