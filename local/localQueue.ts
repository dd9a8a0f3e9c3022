import { randomBytes } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import { Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { startFauxqs } from 'fauxqs';
import { ownPorts } from '../shared/egress/ownPorts';
import { MAX_RECEIVE_COUNT } from '../shared/jobs/runJob';
import { logger } from '../shared/logger';
import type { JobWorkerHandler } from '../shared/wiring/jobs';
import { requireAwsJsonSignature } from './awsJsonSignatureGate';
import { serveOwnClientsOnly } from './ownClients';
import { ownerOnlyDir } from './ownerOnlyDir';
import { type LocalCredentials, localCredentials } from './sigV4Verifier';

const REGION = 'us-east-1';
/** What the queue's gate checks: SQS's JSON protocol, and a batch of ten messages of up to 1 MiB in all, with room. */
const SIGNED_QUEUE_API = { region: REGION, service: 'sqs', maxBodyBytes: 2 * 1024 * 1024 };

export interface LocalQueue {
  client: SQSClient;
  queueUrl: string;
  /** Webhook attempts, polled apart from the captures, as deployed. */
  webhookQueueUrl: string;
  deadLetterQueueUrl: string;
  endpoint: string;
  /** What its clients sign with; the queue answers no other request. */
  credentials: LocalCredentials;
  close(): Promise<void>;
}

/**
 * A real SQS API on a local port (fauxqs: SQS's AWS JSON 1.0 protocol, visibility timeouts, delays, long polling,
 * dead-letter redrive). With `dataDir` every message is written through to SQLite there, so messages accepted,
 * delayed or in flight when the process was killed are still there when it starts again. The port is one of our
 * own: no page or webhook may reach it.
 */
export async function startLocalQueue(options: {
  dataDir?: string;
  visibilityTimeoutSeconds: number;
}): Promise<LocalQueue> {
  const dataDir = options.dataDir && (await ownerOnlyDir(options.dataDir));
  // Only this process's clients use the queue: a secret of its own for each start.
  const credentials = localCredentials('LOCALSQS', randomBytes(32));
  const server = await ownClientsOnly(credentials, () =>
    startFauxqs({ port: 0, logger: false, ...(dataDir ? { dataDir } : {}) }),
  );
  const leaveOwnPorts = ownPorts.add(server.port);
  const endpoint = `http://127.0.0.1:${server.port}`;
  const client = new SQSClient({ endpoint, region: REGION, credentials });
  try {
    const dlq = await client.send(new CreateQueueCommand({ QueueName: 'jobs-dlq' }));
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const create = async (name: string) =>
      (
        await client.send(
          new CreateQueueCommand({
            QueueName: name,
            Attributes: {
              VisibilityTimeout: String(options.visibilityTimeoutSeconds),
              RedrivePolicy: JSON.stringify({
                deadLetterTargetArn: Attributes?.QueueArn,
                maxReceiveCount: MAX_RECEIVE_COUNT,
              }),
            },
          }),
        )
      ).QueueUrl as string;
    return {
      client,
      queueUrl: await create('jobs'),
      webhookQueueUrl: await create('webhooks'),
      deadLetterQueueUrl: dlq.QueueUrl as string,
      endpoint,
      credentials,
      async close() {
        client.destroy();
        await server.stop();
        leaveOwnPorts();
      },
    };
  } catch (error) {
    await server.stop();
    leaveOwnPorts();
    throw error;
  }
}

/**
 * fauxqs listens on every interface; the local service listens on loopback only. While it starts, a listen on the
 * unspecified address is made on 127.0.0.1 instead (fastify passes its host to net.Server#listen). fauxqs checks no
 * signature and takes form posts (its SNS API, which can publish into our queue): the server it made answers only
 * our own clients, as the embedded DynamoDB does, with requests signed with the queue's credentials (red team:
 * another user of the machine listed, read and could delete the job messages).
 */
async function ownClientsOnly<T>(credentials: LocalCredentials, start: () => Promise<T>): Promise<T> {
  const listen = Server.prototype.listen;
  const servers: Server[] = [];
  Server.prototype.listen = function (this: Server, ...args: unknown[]) {
    const [first] = args;
    if (first && typeof first === 'object' && 'host' in first) {
      const host = (first as { host?: string }).host;
      if (host === '0.0.0.0' || host === '::') args[0] = { ...first, host: '127.0.0.1' };
    }
    servers.push(this);
    return (listen as (...rest: unknown[]) => Server).apply(this, args);
  } as typeof listen;
  try {
    const started = await start();
    for (const server of servers) {
      requireAwsJsonSignature(server as HttpServer, credentials, SIGNED_QUEUE_API);
      serveOwnClientsOnly(server as HttpServer);
    }
    return started;
  } finally {
    Server.prototype.listen = listen;
  }
}

/**
 * Plays Lambda's SQS event source for the local service: it long-polls one of the queues (`queueUrl`) and hands its
 * messages, `batchSize` at most to an event and up to `concurrency` events at once, to the worker's handler as the
 * SQS events Lambda would build, deletes what it did not report failed, and keeps a message invisible while its
 * handler runs (a killed process stops doing so, and the message comes back).
 */
export function startQueuePoller(options: {
  queue: LocalQueue;
  queueUrl: string;
  handler: JobWorkerHandler;
  concurrency: number;
  batchSize?: number;
  /** How long a batch is gathered once its first message came (Lambda's MaximumBatchingWindowInSeconds). */
  batchingWindowMs?: number;
  visibilityTimeoutSeconds: number;
}) {
  const { client } = options.queue;
  const { queueUrl } = options;
  const batchSize = options.batchSize ?? 1;
  let stopped = false;
  const abort = new AbortController();

  /** The events being handled: at most `concurrency`. */
  const running = new Set<Promise<void>>();
  /** Wakes the receiver when a handler ends. */
  let freed: (() => void) | undefined;

  // One receiver asks for as many messages as the free places take, so an idle queue costs one long poll a second
  // whatever the concurrency.
  async function receive(): Promise<void> {
    while (!stopped) {
      const free = options.concurrency - running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          freed = resolve;
        });
        continue;
      }
      let messages: Message[] = [];
      try {
        messages = await receiveUpTo(free * batchSize);
      } catch (error) {
        if (stopped) return;
        logger.warn('Local queue not polled', { error: error as Error });
        await sleep(500);
        continue;
      }
      for (let at = 0; at < messages.length; at += batchSize) {
        const handled: Promise<void> = handle(messages.slice(at, at + batchSize)).finally(() => {
          running.delete(handled);
          freed?.();
        });
        running.add(handled);
      }
    }
  }

  /**
   * Up to `count` messages: a long poll of a second for the first, then, with a batching window, more until it ends
   * or `count` is reached, as Lambda gathers a batch.
   */
  async function receiveUpTo(count: number): Promise<Message[]> {
    const messages = await receiveOnce(count, 1);
    const until = Date.now() + (options.batchingWindowMs ?? 0);
    while (messages.length > 0 && messages.length < count && Date.now() < until) {
      const more = await receiveOnce(count - messages.length, 0);
      if (more.length === 0) await sleep(Math.min(50, Math.max(0, until - Date.now())));
      messages.push(...more);
    }
    return messages;
  }

  async function receiveOnce(count: number, waitSeconds: number): Promise<Message[]> {
    const answer = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(10, count),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'],
      }),
      { abortSignal: abort.signal },
    );
    return answer.Messages ?? [];
  }

  async function handle(messages: Message[]): Promise<void> {
    const keepHidden = setInterval(
      () => {
        for (const message of messages)
          client
            .send(
              new ChangeMessageVisibilityCommand({
                QueueUrl: queueUrl,
                ReceiptHandle: message.ReceiptHandle,
                VisibilityTimeout: options.visibilityTimeoutSeconds,
              }),
            )
            .catch(() => undefined);
      },
      (options.visibilityTimeoutSeconds * 1000) / 3,
    );
    try {
      const answer = await options.handler({
        Records: messages.map((message) => sqsRecord(message, queueUrl)),
      } satisfies SQSEvent);
      const failed = new Set(answer.batchItemFailures.map((failure) => failure.itemIdentifier));
      await Promise.all(
        messages
          .filter((message) => !failed.has(message.MessageId ?? ''))
          .map((message) =>
            client.send(
              new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
            ),
          ),
      );
    } catch (error) {
      logger.error('Local worker failed', { error: error as Error });
    } finally {
      clearInterval(keepHidden);
    }
  }

  const receiving = receive();
  return {
    /** Stops receiving and waits for the events being handled (their handlers end on their own). */
    async stop() {
      stopped = true;
      abort.abort();
      freed?.();
      await receiving;
      await Promise.all(running);
    },
  };
}

/** The record Lambda's SQS event source would give the worker for `message`. */
function sqsRecord(message: Message, queueUrl: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? '0',
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? '0',
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:${REGION}:000000000000:${queueUrl.split('/').pop()}`,
    awsRegion: REGION,
  };
}
