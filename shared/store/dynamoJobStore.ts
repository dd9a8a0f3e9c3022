import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { type Batch, JOB_RETENTION_MS, type Job, type NewJob, type WebhookOutcome } from '../jobs/job';
import {
  type JobEnd,
  type JobStore,
  REFUND_CLAIM_MS,
  type SweepEntry,
  WEBHOOK_CLAIM_MS,
  type WebhookClaim,
} from '../jobs/jobStore';
import {
  ACCOUNT_PREFIX,
  conditionHeld,
  isConditionFailure,
  itemKey,
  JOB_PREFIX,
  QUEUED_JOBS_INDEX,
  queryItems,
  sweepShard,
  sweepShardOf,
} from './table';

/** DynamoDB's BatchGetItem bound. */
const BATCH_GET_LIMIT = 100;

/**
 * The largest request (as JSON) a job's item holds itself: with it the item stays within one strongly consistent read
 * unit (4 KB), so polling a job or listing 50 costs little; a larger one is written to an item of its own, read by
 * the worker alone.
 */
export const INLINE_REQUEST_BYTES = 2 * 1024;

/**
 * Jobs and batches under their account's partition (docs/data-model.md), each with the TTL of its retention. The
 * item holds the job as the domain sees it, beside its keys.
 */
export class DynamoJobStore implements JobStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(jobs: NewJob[], batch?: Batch): Promise<void> {
    const expiresAt = (createdAt: number) => Math.ceil((createdAt + JOB_RETENTION_MS) / 1000);
    const put = (key: Record<string, string>, item: object, createdAt: number) =>
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...key, ...item, expiresAt: expiresAt(createdAt) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    // The batch first: a job that runs and finishes at once must find it to count itself.
    if (batch) await put(itemKey.batch(batch.accountId, batch.id), batch, batch.createdAt);
    // A request kept apart is written before its job: a worker that finds the job finds its request (red team: one
    // read 75 ms after acceptance, before its request had landed, and ended the job for good). One whose job is then
    // not written is never read, and expires with the job's time.
    const apart = jobs.filter(
      ({ request }) => Buffer.byteLength(JSON.stringify(request)) > INLINE_REQUEST_BYTES,
    );
    await allWritten(
      apart.map((job) =>
        put(itemKey.jobRequest(job.accountId, job.id), { request: job.request }, job.createdAt),
      ),
    );
    // startedAt is left out until a worker sets it (`if_not_exists` would take a stored null for a value). A queued
    // job's sweep time puts it in the queued-jobs index, in its shard. Settled all before a failure goes up: the
    // intake then ends every item written, and none may land after it has.
    const keptApart = new Set(apart.map((job) => job.id));
    await allWritten(
      jobs.map(({ startedAt: _, request, ...job }) =>
        put(
          {
            ...itemKey.job(job.accountId, job.id),
            ...(job.sweepAt === undefined ? {} : { [QUEUED_JOBS_INDEX.partitionKey]: sweepShardOf(job.id) }),
          },
          keptApart.has(job.id) ? job : { ...job, request },
          job.createdAt,
        ),
      ),
    );
  }

  async request(accountId: string, jobId: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.jobRequest(accountId, jobId),
        ConsistentRead: true,
      }),
    );
    return Item?.request as Record<string, unknown> | undefined;
  }

  async get(accountId: string, jobId: string): Promise<Job | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.job(accountId, jobId), ConsistentRead: true }),
    );
    return Item && jobOf(Item);
  }

  async latest(accountId: string, limit: number): Promise<Job[]> {
    // Page by page: a job accepted before larger requests were kept apart holds its request (an `html` document of
    // up to 256 KiB), so one 1 MB page of the query may hold only a few (red team: the list showed 4 of "the latest 50").
    const items = await queryItems(
      this.db,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': itemKey.account(accountId).pk, ':prefix': JOB_PREFIX },
        ScanIndexForward: false,
      },
      limit,
    );
    return items.map(jobOf);
  }

  async getMany(accountId: string, jobIds: string[]): Promise<Job[]> {
    const found = new Map<string, Job>();
    for (let at = 0; at < jobIds.length; at += BATCH_GET_LIMIT) {
      let keys: Record<string, unknown>[] = jobIds
        .slice(at, at + BATCH_GET_LIMIT)
        .map((id) => itemKey.job(accountId, id));
      while (keys.length > 0) {
        const answer = await this.db.send(
          new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of answer.Responses?.[this.tableName] ?? []) found.set(item.id, jobOf(item));
        keys = answer.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return jobIds.flatMap((id) => found.get(id) ?? []);
  }

  async start(accountId: string, jobId: string, now: number, restart: boolean): Promise<Job | undefined> {
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.job(accountId, jobId),
          // Out of the queued-jobs index in the same write: a running job is the queue's to deliver again.
          UpdateExpression: `SET #status = :running, startedAt = if_not_exists(startedAt, :now) ADD runs :one ${LEAVE_SWEEP}`,
          ConditionExpression: restart ? '#status IN (:queued, :running)' : '#status = :queued',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':running': 'running', ':queued': 'queued', ':now': now, ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes && jobOf(Attributes);
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  async finish(accountId: string, jobId: string, end: JobEnd, now: number): Promise<Job | undefined> {
    const byCaller = end.status === 'failed' && end.refundedByCaller === true;
    const owed = end.status === 'failed' && !byCaller;
    try {
      const { Attributes } = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.job(accountId, jobId),
          UpdateExpression: `SET #status = :end, finishedAt = :now, #result = :result, #error = :error${
            owed ? ', refundOwed = :owed, refundClaimedUntil = :claimedUntil' : ''
          }${byCaller ? ', refundedByCaller = :byCaller, webhook = :none' : ''} ${LEAVE_SWEEP}`,
          ConditionExpression: '#status IN (:queued, :running)',
          ExpressionAttributeNames: { '#status': 'status', '#result': 'result', '#error': 'error' },
          ExpressionAttributeValues: {
            ':end': end.status,
            ':now': now,
            ':result': end.status === 'succeeded' ? end.result : null,
            ':error': end.status === 'failed' ? end.error : null,
            ':queued': 'queued',
            ':running': 'running',
            ...(owed ? { ':owed': true, ':claimedUntil': now + REFUND_CLAIM_MS } : {}),
            // A job never accepted (its id never answered) sends no webhook, as a refused batch sends none.
            ...(byCaller ? { ':byCaller': true, ':none': null } : {}),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes && jobOf(Attributes);
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }

  async dueForSweep(shard: number, now: number, limit: number): Promise<SweepEntry[]> {
    const items = await queryItems(
      this.db,
      {
        TableName: this.tableName,
        IndexName: QUEUED_JOBS_INDEX.name,
        KeyConditionExpression: '#shard = :shard AND #sweepAt <= :now',
        ExpressionAttributeNames: {
          '#shard': QUEUED_JOBS_INDEX.partitionKey,
          '#sweepAt': QUEUED_JOBS_INDEX.sortKey,
        },
        ExpressionAttributeValues: { ':shard': sweepShard(shard), ':now': now },
      },
      limit,
    );
    return items.map((item) => ({
      accountId: String(item.pk).slice(ACCOUNT_PREFIX.length),
      jobId: String(item.sk).slice(JOB_PREFIX.length),
      sweepAt: Number(item[QUEUED_JOBS_INDEX.sortKey]),
    }));
  }

  async moveSweep(accountId: string, jobId: string, from: number, to: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.job(accountId, jobId),
          UpdateExpression: 'SET #sweepAt = :to',
          ConditionExpression: '#status = :queued AND #sweepAt = :from',
          ExpressionAttributeNames: { '#status': 'status', '#sweepAt': QUEUED_JOBS_INDEX.sortKey },
          ExpressionAttributeValues: { ':queued': 'queued', ':from': from, ':to': to },
        }),
      ),
    );
  }

  async claimRefund(accountId: string, jobId: string, now: number): Promise<boolean> {
    // A job ended before claims existed owes its refund without one: the first claim takes it.
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.job(accountId, jobId),
          UpdateExpression: 'SET refundClaimedUntil = :until',
          ConditionExpression:
            'refundOwed = :owed AND (attribute_not_exists(refundClaimedUntil) OR refundClaimedUntil <= :now)',
          ExpressionAttributeValues: { ':owed': true, ':now': now, ':until': now + REFUND_CLAIM_MS },
        }),
      ),
    );
  }

  async refundGiven(accountId: string, jobId: string): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: itemKey.job(accountId, jobId),
        UpdateExpression: 'REMOVE refundOwed, refundClaimedUntil',
      }),
    );
  }

  async setWebhook(accountId: string, subjectId: string, webhook: WebhookOutcome): Promise<void> {
    const key = subjectKey(accountId, subjectId);
    // Attempts only grow: a delayed copy of an older attempt never writes over a newer outcome.
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET webhook = :webhook',
          ConditionExpression:
            'attribute_exists(pk) AND (webhook.attempts <= :attempts OR attribute_type(webhook, :null))',
          ExpressionAttributeValues: { ':webhook': webhook, ':attempts': webhook.attempts, ':null': 'NULL' },
        }),
      ),
    );
  }

  claimWebhookAttempt(accountId: string, subjectId: string, attempt: number, now: number) {
    return this.webhookClaim(accountId, subjectId, attempt, now, WEBHOOK_CLAIMS.attempt);
  }

  claimWebhookRequeue(accountId: string, subjectId: string, attempt: number, now: number) {
    return this.webhookClaim(accountId, subjectId, attempt, now, WEBHOOK_CLAIMS.requeue);
  }

  async webhookAttemptQueued(accountId: string, subjectId: string, attempt: number): Promise<void> {
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: subjectKey(accountId, subjectId),
          UpdateExpression: 'SET webhookQueued = :attempt',
          ConditionExpression: `attribute_exists(pk) AND ${NOT_NOTED_QUEUED}`,
          ExpressionAttributeValues: { ':attempt': attempt },
        }),
      ),
    );
  }

  /**
   * A claim on a subject's pending webhook (WEBHOOK_CLAIMS); when its condition fails, the item read again tells
   * `busy` (another delivery's claim holds) from `over` (dynalite returns no item with the failure).
   */
  private async webhookClaim(
    accountId: string,
    subjectId: string,
    attempt: number,
    now: number,
    claim: (typeof WEBHOOK_CLAIMS)[keyof typeof WEBHOOK_CLAIMS],
  ): Promise<WebhookClaim> {
    const Key = subjectKey(accountId, subjectId);
    const claimed = await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key,
          UpdateExpression: claim.update,
          ConditionExpression: `attribute_exists(pk) AND webhook.#status = :pending AND ${claim.condition}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':attempt': attempt,
            ':now': now,
            ':until': now + WEBHOOK_CLAIM_MS,
            ':pending': 'pending',
          },
        }),
      ),
    );
    if (claimed) return 'claimed';
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key, ConsistentRead: true }),
    );
    const webhook = Item?.webhook as WebhookOutcome | null | undefined;
    return Item && webhook?.status === 'pending' && claim.busy({ ...Item, webhook }, attempt, now)
      ? 'busy'
      : 'over';
  }

  async getBatch(accountId: string, batchId: string): Promise<Batch | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.batch(accountId, batchId),
        ConsistentRead: true,
      }),
    );
    return Item && batchOf(Item);
  }

  async batchRefused(accountId: string, batchId: string, jobIds: string[], now: number): Promise<void> {
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.batch(accountId, batchId),
          UpdateExpression:
            'SET #status = :completed, finishedAt = :now, finishedJobs = :jobs, webhook = :none',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':completed': 'completed',
            ':now': now,
            ':jobs': new Set(jobIds),
            ':none': null,
          },
        }),
      ),
    );
  }

  async batchReopened(
    accountId: string,
    batchId: string,
    takenIds: string[],
    webhook: WebhookOutcome | null,
  ): Promise<Batch> {
    const { Attributes } = await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: itemKey.batch(accountId, batchId),
        UpdateExpression:
          'SET #status = :running, finishedAt = :none, webhook = :webhook DELETE finishedJobs :taken',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':running': 'running',
          ':none': null,
          ':webhook': webhook,
          ':taken': new Set(takenIds),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (!Attributes) throw new Error('The batch was not written');
    return batchOf(Attributes);
  }

  async batchJobFinished(
    accountId: string,
    batchId: string,
    jobId: string,
    now: number,
  ): Promise<Batch | undefined> {
    const key = itemKey.batch(accountId, batchId);
    // A set of the finished jobs' ids, not a counter: a job counted again (its message delivered again after a
    // worker died past the job's end) changes nothing.
    const { Attributes } = await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: key,
        UpdateExpression: 'ADD finishedJobs :job',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':job': new Set([jobId]) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const batch = Attributes && batchOf(Attributes);
    if (!batch || batch.finished < batch.jobIds.length) return undefined;
    // Completed by an earlier delivery whose worker may have died before it queued batch.completed: reported
    // again while its webhook was never tried (the event's webhook-id lets a receiver drop a second copy).
    if (batch.status === 'completed')
      return batch.webhook?.status === 'pending' && batch.webhook.attempts === 0 ? batch : undefined;
    // Otherwise only the write that marks it completed reports it.
    try {
      const completed = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #status = :completed, finishedAt = :now',
          ConditionExpression: '#status = :running',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':completed': 'completed', ':running': 'running', ':now': now },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return completed.Attributes && batchOf(completed.Attributes);
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      throw error;
    }
  }
}

/** Takes a job out of the queued-jobs index (a REMOVE clause): the attributes that place it there. */
const LEAVE_SWEEP = `REMOVE ${QUEUED_JOBS_INDEX.partitionKey}, ${QUEUED_JOBS_INDEX.sortKey}`;

/** Waits for every write to settle, then throws the first refusal, if any: none lands after the failure goes up. */
async function allWritten(writes: Promise<unknown>[]): Promise<void> {
  const refused = (await Promise.allSettled(writes)).find((outcome) => outcome.status === 'rejected');
  if (refused) throw refused.reason;
}

/** A webhook attempt's message not noted queued yet (`:attempt`). */
const NOT_NOTED_QUEUED = '(attribute_not_exists(webhookQueued) OR webhookQueued < :attempt)';

type WebhookItem = Record<string, unknown> & { webhook: WebhookOutcome };

/**
 * The claims on a pending webhook, each a write (`:attempt`, `:now`, `:until`) and how to tell, from the item, that
 * another delivery's claim holds: making attempt `:attempt`, or queueing its message again (JobStore).
 */
const WEBHOOK_CLAIMS = {
  attempt: {
    update: 'SET webhookClaim = :attempt, webhookClaimedUntil = :until',
    condition:
      'webhook.attempts <= :attempt AND (attribute_not_exists(webhookClaim) OR webhookClaim < :attempt OR ' +
      '(webhookClaim = :attempt AND webhookClaimedUntil <= :now))',
    busy: (item: WebhookItem, attempt: number, now: number) =>
      Number(item.webhook.attempts) <= attempt &&
      item.webhookClaim === attempt &&
      Number(item.webhookClaimedUntil) > now,
  },
  requeue: {
    update: 'SET webhookClaimedUntil = :until',
    condition: `webhook.attempts = :attempt AND ${NOT_NOTED_QUEUED} AND (attribute_not_exists(webhookClaimedUntil) OR webhookClaimedUntil <= :now)`,
    busy: (item: WebhookItem, attempt: number) =>
      Number(item.webhook.attempts) === attempt && Number(item.webhookQueued ?? -1) < attempt,
  },
};

/** The item of a webhook's subject: a batch (`bat_…`) or a job. */
function subjectKey(accountId: string, subjectId: string) {
  return subjectId.startsWith('bat_')
    ? itemKey.batch(accountId, subjectId)
    : itemKey.job(accountId, subjectId);
}

function jobOf(item: Record<string, unknown>): Job {
  const { pk: _pk, sk: _sk, expiresAt: _expiresAt, [QUEUED_JOBS_INDEX.partitionKey]: _shard, ...job } = item;
  return { startedAt: null, ...job } as unknown as Job;
}

function batchOf(item: Record<string, unknown>): Batch {
  const { pk: _pk, sk: _sk, expiresAt: _expiresAt, finishedJobs, ...batch } = item;
  return { ...batch, finished: (finishedJobs as Set<string> | undefined)?.size ?? 0 } as unknown as Batch;
}
