/**
 * Red team (round 15): a queued job that finds the local capture queue full is refused with OverloadedError, which runJob
 * does not take for "no room now" (it expects CapacityFullError): the job's delivery throws, and after MAX_JOB_RUNS
 * such deliveries the job ends failed ("The capture kept failing") without ever being captured
 * (local/admissionQueue.ts `wait` rejects a job with OverloadedError; shared/jobs/runJob.ts only sends itself again
 * for CapacityFullError).
 *
 * What it shows: one capture place, two waiting places. X runs a capture; Y and Z wait with one request each, so no
 * account waits with two more than the job's and makeRoomFor frees nothing. The job's delivery, through the local
 * queue's runJob as local/localService.ts wires it, rejects with OverloadedError instead of sending the job's message
 * again for later, as it does when the queue refuses it with CapacityFullError.
 *
 * Why it matters: locally, waiting requests of other accounts (one each is enough) make every job that comes while
 * the queue is full burn a run; three such deliveries fail the job unrun (its credits given back, its webhook sent
 * as failed). The runJob comment says a refusal by the admission itself is answered by waiting in the job queue.
 * Predates today's changes, but round 13/14's fair sharing kept it (a job is never displaced, yet may be refused).
 *
 * Fixed: the local queue refuses a job it has no place for with CapacityFullError, so the job waits in the job queue
 * (local/admissionQueue.ts).
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../local/admissionQueue';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { jobIntake } from '../../shared/jobs/jobIntake';
import type { JobQueue, QueueMessage } from '../../shared/jobs/jobQueue';
import { runJob } from '../../shared/jobs/runJob';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoJobStore } from '../../shared/store/dynamoJobStore';
import { deferred } from '../helpers/deferred';
import { jobWorkerDeps } from '../helpers/jobWorker';
import { FakeRenderer, MemoryCaptureSlots, MemoryCreditLedger } from '../helpers/memoryPorts';
import { startTestStore, TEST_TABLE } from '../helpers/store';

const ACCOUNT = 'acct-job';
const identity = { accountId: ACCOUNT, keyId: 'key_1', isActive: true } as never;

class RecordingQueue implements JobQueue {
  readonly sent: QueueMessage[] = [];
  async send(messages: QueueMessage[]): Promise<void> {
    this.sent.push(...messages);
  }
}

let store: EmbeddedDynamo;
let jobs: DynamoJobStore;
beforeAll(async () => {
  store = await startTestStore();
  jobs = new DynamoJobStore(DynamoDBDocumentClient.from(store.client), TEST_TABLE);
});
afterAll(() => store?.close());

describe('a queued job that finds the local capture queue full', () => {
  it('waits in the job queue (its message sent again), and its delivery does not fail', async () => {
    const cipher = new AesGcmSecretCipher(randomBytes(32));
    const credits = new MemoryCreditLedger();
    await credits.set(ACCOUNT, 10);
    const creditEpoch = await credits.reserve(ACCOUNT, 1);
    const made = await jobIntake({ jobs, queue: new RecordingQueue(), cipher, now: Date.now })(
      identity,
      [{ request: { url: 'https://a.test/' }, cost: 1, creditEpoch }],
      {},
    );
    const jobId = (made.jobs[0] as { id: string }).id;

    // The local capture queue, full: X runs, Y and Z wait with one request each.
    const local = new AdmissionQueue({ shared: 1, headroom: 0 }, 2);
    const x = deferred();
    const running = local.run('acct-x', () => x.promise);
    const y = local.run('acct-y', async () => 'y');
    const z = local.run('acct-z', async () => 'z');

    const queue = new RecordingQueue();
    const renderer = new FakeRenderer();
    const run = runJob(
      jobWorkerDeps({
        jobs,
        queue,
        credits,
        captureSlots: new MemoryCaptureSlots(5),
        renderer,
        cipher,
        // As local/localService.ts wires the worker.
        admission: { run: (accountId, task) => local.runJob(accountId, task) },
      }),
    );

    const delivery = await run(ACCOUNT, jobId, 1).then(
      () => 'sent again for later',
      (error: unknown) => error,
    );
    expect(delivery).toBe('sent again for later');
    expect(queue.sent).toEqual([expect.objectContaining({ kind: 'capture', jobId })]);
    expect(renderer.captures).toHaveLength(0);

    x.resolve();
    await Promise.all([running, y, z]);
  });
});
