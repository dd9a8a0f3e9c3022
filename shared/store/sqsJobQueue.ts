import { SendMessageBatchCommand, SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { StoreUnavailableError } from '../errors';
import type { JobQueue, QueueMessage } from '../jobs/jobQueue';
import { MAX_QUEUE_DELAY_SECONDS } from '../jobs/jobQueue';
import { logger } from '../logger';
import { isServiceOutage } from './storeUnavailable';

/** SQS's answers that mean "not now" rather than "no". */
const TRANSIENT_SQS_ERRORS = new Set([
  'RequestThrottled',
  'ThrottlingException',
  'KmsThrottled',
  'InternalFailure',
  'ServiceUnavailable',
  'TimeoutError',
]);

/** SendMessageBatch's bound. */
const SEND_BATCH_LIMIT = 10;

/**
 * The job queue on SQS (or the local SQS API): messages in batches of ten, entries that failed sent again. Webhook
 * attempts go to a queue of their own when one is given (`webhookQueueUrl`), consumed by workers of their own: a
 * receiver that never answers holds a worker for the 10 s of each attempt, and must not hold the ones that run
 * other accounts' captures. Every message names its account as its message group: on a standard queue that makes
 * SQS a fair queue, which serves quiet accounts first while one account holds more than its share of the workers
 * (in flight or in processing time), so one account's backlog of slow captures or hanging receivers does not keep
 * everyone else's messages waiting behind it.
 */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly webhookQueueUrl = queueUrl,
  ) {}

  /**
   * A queue out of reach, throttling or failing on its side is an outage to the caller, as DynamoDB's are
   * (storeUnavailable.ts): the intake answers `503` with `Retry-After`, not a bare 500 (red team, round 27: the local
   * queue's full disk). Its other answers (a queue that does not exist, access denied) go up as they are.
   */
  async send(messages: QueueMessage[], delaySeconds = 0): Promise<void> {
    try {
      await this.sendAll(messages, delaySeconds);
    } catch (error) {
      // Messages still refused after three rounds are an outage already told (sendAll).
      if (error instanceof StoreUnavailableError || !isServiceOutage(error, TRANSIENT_SQS_ERRORS))
        throw error;
      logger.error('Job queue unavailable', { error: error instanceof Error ? error : String(error) });
      throw new StoreUnavailableError();
    }
  }

  private async sendAll(messages: QueueMessage[], delaySeconds: number): Promise<void> {
    const delay = Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds)));
    const chunks: { queueUrl: string; messages: QueueMessage[] }[] = [];
    for (const queueUrl of new Set([this.queueUrl, this.webhookQueueUrl])) {
      const bound = messages.filter((message) => this.queueOf(message) === queueUrl);
      for (let at = 0; at < bound.length; at += SEND_BATCH_LIMIT)
        chunks.push({ queueUrl, messages: bound.slice(at, at + SEND_BATCH_LIMIT) });
    }
    await Promise.all(
      chunks.map(async (chunk) => {
        let entries = chunk.messages.map((message, index) => ({
          Id: String(index),
          MessageBody: JSON.stringify(message),
          MessageGroupId: message.accountId,
          DelaySeconds: delay,
        }));
        for (let round = 0; entries.length > 0; round++) {
          const answer = await this.client.send(
            new SendMessageBatchCommand({ QueueUrl: chunk.queueUrl, Entries: entries }),
          );
          const failed = new Set((answer.Failed ?? []).map((entry) => entry.Id));
          if (failed.size > 0 && round >= 2) {
            logger.error('Queue messages not sent', { count: failed.size });
            throw new StoreUnavailableError();
          }
          entries = entries.filter((entry) => failed.has(entry.Id));
        }
      }),
    );
  }

  private queueOf(message: QueueMessage): string {
    return message.kind === 'webhook' ? this.webhookQueueUrl : this.queueUrl;
  }
}

/**
 * The SQS client of the functions that queue: bounded waits, as for DynamoDB (shared/store/dynamoClient.ts). The SDK's
 * defaults wait minutes on a silent socket; a function that accepts jobs would be stopped at its timeout with their
 * items written and no message sent (never run, their credits never given back), where a send that fails in time
 * lets the intake end them and the caller refund them. A send retried after a timeout at worst sends a message twice,
 * which the worker takes as it takes any copy. Two tries of 2 s fit the 10 s functions.
 */
export function createSqsClient(config: SQSClientConfig = {}): SQSClient {
  return new SQSClient({
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000, throwOnRequestTimeout: true },
    ...config,
  });
}
