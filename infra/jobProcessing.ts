import path from 'node:path';
import { type CfnResource, Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { IMAGE_KINDS } from '../shared/delivery/imageStore';
import { MAX_RECEIVE_COUNT } from '../shared/jobs/runJob';
import { WEBHOOK_BATCH_SIZE, WEBHOOK_BATCHING_WINDOW_MS } from '../shared/jobs/sendWebhook';
import { SWEEP_PERIOD_MS } from '../shared/jobs/sweepStrandedJobs';
import { QUEUED_JOBS_INDEX } from '../shared/store/table';
import { JOB_WORKER_TIMEOUT_MS } from '../shared/timing';
import { functionBundling } from './functionBundling';
import type { ImageStorage } from './imageStorage';
import { invokingRenderers, type Renderers } from './rendererFunction';
import { WORKER_TABLE_ACTIONS } from './tableAccess';

export const WORKER_TIMEOUT = Duration.millis(JOB_WORKER_TIMEOUT_MS);
/** SQS's advice: six times the function's timeout, so a message is not delivered again while a retry runs. */
export const JOB_VISIBILITY_TIMEOUT = Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6);
export const WORKER_MEMORY_MB = 1024;
/**
 * How many worker instances may deliver webhooks at once, apart from those that run captures: an attempt waits up
 * to 10 s on the receiver and does nothing else, so a receiver that never answers holds only these.
 */
export const WEBHOOK_WORKER_CONCURRENCY = 20;
/** The sweep reads keys and sends names: no image ever passes through it. */
export const SWEEPER_MEMORY_MB = 256;
/** Sixteen shards, each a Query, at most a hundred conditional writes and ten message batches: seconds. */
export const SWEEPER_TIMEOUT = Duration.minutes(1);

export interface JobProcessingProps {
  projectRoot: string;
  runtime: lambda.Runtime;
  architecture: lambda.Architecture;
  environment: Record<string, string>;
  table: dynamodb.ITable;
  /** The shared renderer, and the headroom one a newcomer may use when the shared one is full (docs/api.md 6.5). */
  renderers: Renderers;
  images: ImageStorage;
  sourceMaps: boolean;
  /**
   * How many worker instances may run at once, each on one message: at most the shared renderer's capacity, which
   * its captures use (at least 2, Lambda's least for an SQS source).
   */
  workerConcurrency: number;
  /** Functions that queue jobs (async captures, batches). */
  senders: NodejsFunction[];
  /** Functions that show jobs, with a fresh link to each result. */
  readers: lambda.IFunction[];
}

/**
 * Async captures (docs/api.md, "Async captures"): the job queue, its dead-letter queue, and the worker that
 * consumes it. The worker holds no browser (no Chromium layer): it asks the renderer function, as the screenshot
 * front does. Each grant is the least its user needs.
 */
export class JobProcessing extends Construct {
  readonly queue: sqs.Queue;
  /** Webhook attempts, consumed apart from the captures (WEBHOOK_WORKER_CONCURRENCY). */
  readonly webhookQueue: sqs.Queue;
  /** Capture messages the worker could not end a job with: their credits may still be reserved. */
  readonly deadLetterQueue: sqs.Queue;
  /** Webhook attempts it could not make: for jobs that have ended, charged or refunded already. */
  readonly webhookDeadLetterQueue: sqs.Queue;
  readonly worker: NodejsFunction;
  /** Queues again, on a schedule, the jobs an accepting function wrote and died before queueing. */
  readonly sweeper: NodejsFunction;

  constructor(scope: Construct, id: string, props: JobProcessingProps) {
    super(scope, id);
    // Apart: what an operator does with a dead letter differs. A capture's job may hold reserved credits to give
    // back; a webhook's job has ended, charged or refunded, and must never be refunded again (red team, round 31: they
    // shared one queue, whose runbook said to refund).
    const deadLetters = (id: string) => {
      const queue = new sqs.Queue(this, id, {
        retentionPeriod: Duration.days(14),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      Validations.of(queue).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason: 'A dead-letter queue: a queue for its messages would have none to catch.',
      });
      return queue;
    };
    this.deadLetterQueue = deadLetters('DeadLetters');
    this.webhookDeadLetterQueue = deadLetters('WebhookDeadLetters');
    // Both alike: a message is kept as long as a job may wait for it (one delayed by webhook backoff still finds its
    // job), is not delivered again while a run goes on, and goes to its dead-letter queue after a bounded number of
    // deliveries.
    const workQueue = (id: string, deadLetterQueue: sqs.Queue) =>
      new sqs.Queue(this, id, {
        visibilityTimeout: JOB_VISIBILITY_TIMEOUT,
        retentionPeriod: Duration.days(4),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: MAX_RECEIVE_COUNT },
      });
    this.queue = workQueue('Jobs', this.deadLetterQueue);
    this.webhookQueue = workQueue('Webhooks', this.webhookDeadLetterQueue);

    const { role, logGroup } = this.functionRole('Worker', 'The job queue worker');
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'TableAccess',
        actions: [...WORKER_TABLE_ACTIONS],
        resources: [props.table.tableArn],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'JobResults',
        actions: ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging'],
        // Job results only: the cache under the same prefix is served to other captures, and the worker takes
        // bytes from the renderer.
        resources: [`${props.images.bucket.bucketArn}/${IMAGE_KINDS.job}*`],
      }),
    );
    // Without ListBucket, S3 answers a missing object with 403 instead of 404: the page metadata of a job still
    // listed after its objects expired (the table's TTL runs late) would make the job's view fail instead of leaving
    // the metadata out (shared/jobs/jobView.ts). It lets them list names, never read another kind's bytes.
    const resultLookups = () =>
      new iam.PolicyStatement({
        sid: 'JobResultLookups',
        actions: ['s3:ListBucket'],
        resources: [props.images.bucket.bucketArn],
      });
    role.addToPolicy(resultLookups());
    this.worker = new NodejsFunction(this, 'Worker', {
      entry: path.join(props.projectRoot, 'functions', 'jobWorker.ts'),
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: path.join(props.projectRoot, 'package-lock.json'),
      description: 'Runs queued captures (through the renderer) and sends webhooks',
      runtime: props.runtime,
      architecture: props.architecture,
      memorySize: WORKER_MEMORY_MB,
      timeout: WORKER_TIMEOUT,
      environment: {
        ...props.environment,
        JOB_QUEUE_URL: this.queue.queueUrl,
        WEBHOOK_QUEUE_URL: this.webhookQueue.queueUrl,
        ...invokingRenderers(props.renderers, role),
        IMAGE_BUCKET: props.images.bucket.bucketName,
      },
      role,
      logGroup,
      // No layer and no native encoder: Chromium and AVIF are the renderer's alone.
      bundling: functionBundling(props.sourceMaps),
      tracing: lambda.Tracing.ACTIVE,
    });
    this.worker.addEventSource(
      // One message per invocation: an invocation lasts as long as its slowest message, so in batches one tenant's
      // slow or failing captures would hold the capacity of everyone's messages beside them, and ten renderer answers
      // at once would not fit the worker's memory.
      new SqsEventSource(this.queue, {
        batchSize: 1,
        reportBatchItemFailures: true,
        maxConcurrency: Math.max(2, props.workerConcurrency),
      }),
    );
    this.worker.addEventSource(
      new SqsEventSource(this.webhookQueue, {
        batchSize: WEBHOOK_BATCH_SIZE,
        maxBatchingWindow: Duration.millis(WEBHOOK_BATCHING_WINDOW_MS),
        reportBatchItemFailures: true,
        maxConcurrency: WEBHOOK_WORKER_CONCURRENCY,
      }),
    );
    // Webhook secrets, on their encryption context only: signing opens them, an account's first delivery seals one.
    props.images.grantSealed(this.worker, 'webhookSecrets', ['kms:Encrypt', 'kms:Decrypt']);
    // A queued request's credentials: the worker opens them, the functions that accept jobs seal them.
    props.images.grantSealed(this.worker, 'jobCredentials', ['kms:Decrypt']);
    // Sends again: a job with no free slot; and webhook attempts, the first after a job ends and the retries.
    this.queue.grantSendMessages(role);
    this.webhookQueue.grantSendMessages(role);

    for (const sender of props.senders) {
      this.queue.grantSendMessages(sender);
      props.images.grantSealed(sender, 'jobCredentials', ['kms:Encrypt']);
      sender.addEnvironment('JOB_QUEUE_URL', this.queue.queueUrl);
    }
    for (const reader of props.readers) {
      // A pre-signed link works only if its signer may read the object.
      reader.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'JobResultLinks',
          actions: ['s3:GetObject'],
          resources: [`${props.images.bucket.bucketArn}/${IMAGE_KINDS.job}*`],
        }),
      );
      reader.addToRolePolicy(resultLookups());
      if (reader instanceof NodejsFunction)
        reader.addEnvironment('IMAGE_BUCKET', props.images.bucket.bucketName);
    }

    this.sweeper = this.createSweeper(props);

    const bucketId = props.images.bucket.stack.getLogicalId(
      props.images.bucket.node.defaultChild as CfnResource,
    );
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${IMAGE_KINDS.job}*]`,
      reason:
        "Result objects are named by account and job at run time; the grant is limited to the jobs' prefix.",
    });
    for (const reader of props.readers) {
      if (!reader.role) continue;
      Validations.of(reader.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${IMAGE_KINDS.job}*]`,
        reason:
          "Job results are named by account and job at run time; the grant is read-only, on the jobs' prefix.",
      });
    }
  }

  /**
   * The sweep of stranded jobs (shared/jobs/sweepStrandedJobs.ts), every SWEEP_PERIOD_MS. Its role reads the
   * queued-jobs index, moves sweep times (UpdateItem: the sweep's writes are conditional on the job being queued) and
   * sends messages; no GetItem, no S3, no KMS, no renderer.
   */
  private createSweeper(props: JobProcessingProps): NodejsFunction {
    const { role, logGroup } = this.functionRole('Sweeper', 'The sweep of stranded jobs');
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'QueuedJobsIndex',
        actions: ['dynamodb:Query'],
        resources: [`${props.table.tableArn}/index/${QUEUED_JOBS_INDEX.name}`],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'SweepTimes',
        actions: ['dynamodb:UpdateItem'],
        resources: [props.table.tableArn],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'JobMessages',
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queueArn],
      }),
    );
    const sweeper = new NodejsFunction(this, 'Sweeper', {
      entry: path.join(props.projectRoot, 'functions', 'jobSweeper.ts'),
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: path.join(props.projectRoot, 'package-lock.json'),
      description: 'Queues again the jobs an accepting function wrote and died before queueing',
      runtime: props.runtime,
      architecture: props.architecture,
      memorySize: SWEEPER_MEMORY_MB,
      timeout: SWEEPER_TIMEOUT,
      environment: { ...props.environment, JOB_QUEUE_URL: this.queue.queueUrl },
      role,
      logGroup,
      bundling: functionBundling(props.sourceMaps),
      tracing: lambda.Tracing.ACTIVE,
      // The next run comes in five minutes; a retry would only run beside it (harmless, its claims are conditional).
      retryAttempts: 0,
    });
    new events.Rule(this, 'SweepSchedule', {
      description: 'Runs the sweep of stranded jobs',
      schedule: events.Schedule.rate(Duration.millis(SWEEP_PERIOD_MS)),
      targets: [new eventTargets.LambdaFunction(sweeper, { retryAttempts: 0 })],
    });
    return sweeper;
  }

  /** A function's own role and log group (one month): the role writes that group's logs, and nothing yet. */
  private functionRole(name: string, description: string) {
    const logGroup = new logs.LogGroup(this, `${name}Logs`, { retention: logs.RetentionDays.ONE_MONTH });
    const role = new iam.Role(this, `${name}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description,
    });
    logGroup.grantWrite(role);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only the X-Ray statement that active tracing adds (xray:PutTraceSegments, xray:PutTelemetryRecords) uses "*": ' +
        'those actions have no resource-level permissions.',
    });
    return { role, logGroup };
  }
}
