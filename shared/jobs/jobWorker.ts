import type { SQSRecord } from 'aws-lambda';
import { logger } from '../logger';
import { queueMessage } from './jobQueue';

/**
 * One SQS record into the use case it names: a capture to run, or a webhook attempt. An error goes up, so the
 * record is reported failed and delivered again (the batch's other records are not). A record that is not one of
 * our messages is dropped: no retry would make it one.
 */
export function jobWorker(deps: {
  runJob: (
    accountId: string,
    jobId: string,
    receiveCount: number,
    waited?: number,
    resume?: boolean,
  ) => Promise<void>;
  sendWebhook: (
    message: Extract<ReturnType<typeof queueMessage.parse>, { kind: 'webhook' }>,
  ) => Promise<void>;
}) {
  return async (record: SQSRecord): Promise<void> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(record.body);
    } catch {
      parsed = undefined;
    }
    const message = queueMessage.safeParse(parsed);
    if (!message.success) {
      logger.error('Queue message dropped: not one of ours', { messageId: record.messageId });
      return;
    }
    if (message.data.kind === 'capture') {
      const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
      const { accountId, jobId, waited, resume } = message.data;
      await deps.runJob(accountId, jobId, receiveCount, waited, resume);
    } else {
      await deps.sendWebhook(message.data);
    }
  };
}
