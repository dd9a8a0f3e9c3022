import { setTimeout as sleep } from 'node:timers/promises';
import { ListQueuesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

/**
 * Red team (round 4, jobs): docs/security.md treats other users of the machine as a threat to the local services
 * (the embedded DynamoDB and the local S3 API answer only requests signed with the data dir's own secret: "another
 * user of the machine set an account's balance with one curl"). The local SQS API (fauxqs) checks no signature, and
 * its only gate (local/ownClients.ts) refuses browsers, not local processes: another user of the machine lists the
 * queues, reads and deletes every message (each names an account and its job), and sends messages of its own. A
 * webhook attempt it writes is sent by the worker, signed with the account's secret, to the account's receiver, with
 * the `webhook-id` and `type` it chose: a receiver that verifies the signature takes an event the service never
 * made (here `screenshot.failed` for a job that succeeded, under an id it will not find a duplicate of).
 */

let receiver: WebhookReceiver;
let service: TestLocalService;
/** The receiver fails every delivery until the forged attempt is queued, so the job's webhook stays pending. */
let receiverOpen = false;

beforeAll(async () => {
  receiver = await startWebhookReceiver((_request, response) => {
    response.writeHead(receiverOpen ? 204 : 503).end();
  });
  service = await startTestLocalService(
    { ALLOW_PRIVATE_HOSTS: receiver.hostPort, FREE_CREDITS: '10', POWERTOOLS_METRICS_DISABLED: 'true' },
    { webhookRetryDelaySeconds: (attempt) => (attempt < 8 ? 6 : undefined) },
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

describe('the local SQS API against another user of the machine', () => {
  it("refuses a client that does not sign with the service's own secret: no queue listed, no attempt forged", async () => {
    const victim = await service.newAccount();
    const accepted = await service.request('/api/screenshot', {
      bearer: victim.apiKey,
      body: {
        html: '<h1>report</h1>',
        width: 320,
        height: 320,
        async: true,
        webhookUrl: `${receiver.origin}/hook`,
      },
    });
    expect(accepted.status).toBe(202);
    const jobId = ((await accepted.json()) as { id: string }).id;

    // The job ran and its first attempt failed: the webhook waits for its retry.
    let attempts = 0;
    for (const until = Date.now() + 90_000; attempts === 0; await sleep(100)) {
      if (Date.now() > until) throw new Error('the first attempt never came');
      const job = (await (await service.request(`/api/jobs/${jobId}`, { bearer: victim.apiKey })).json()) as {
        webhook: { attempts: number };
      };
      attempts = job.webhook.attempts;
    }

    // Another user of the machine: the port is on 127.0.0.1 for every local process; any credentials will do.
    const other = new SQSClient({
      endpoint: service.queue.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'someone-else', secretAccessKey: 'not-the-service-secret' },
    });
    const listed = await other.send(new ListQueuesCommand({})).then(
      (answer) => answer.QueueUrls ?? [],
      () => [] as string[],
    );
    const webhookQueue = listed.find((url) => url.endsWith('/webhooks')) ?? service.queue.webhookQueueUrl;
    const forged = await other
      .send(
        new SendMessageCommand({
          QueueUrl: webhookQueue,
          MessageBody: JSON.stringify({
            kind: 'webhook',
            accountId: victim.accountId,
            subjectId: jobId,
            eventId: 'msg_forged-by-another-user',
            type: 'screenshot.failed',
            timestamp: Date.now(),
            attempt: attempts,
          }),
        }),
      )
      .then(
        () => true,
        () => false,
      );
    receiverOpen = true;
    other.destroy();

    // Whatever reached the receiver from now on: the legitimate retry, and the forged attempt if it was taken.
    const secret = (await (
      await service.request('/api/webhook-secret', { bearer: victim.token })
    ).json()) as {
      secret: string;
    };
    const verifier = new Webhook(secret.secret);
    for (const until = Date.now() + 30_000; Date.now() < until; await sleep(200)) {
      if (receiver.received.some((request) => request.headers['webhook-id'] !== `msg_${jobId}`)) break;
      const job = (await (await service.request(`/api/jobs/${jobId}`, { bearer: victim.apiKey })).json()) as {
        webhook: { status: string };
      };
      if (job.webhook.status === 'delivered') break;
    }
    const foreignEvents = receiver.received
      .filter((request) => request.headers['webhook-id'] !== `msg_${jobId}`)
      .map((request) => ({
        id: request.headers['webhook-id'],
        event: verifier.verify(request.body, request.headers),
      }));

    expect({ listed, forged, foreignEvents }).toEqual({ listed: [], forged: false, foreignEvents: [] });
  }, 180_000);
});
