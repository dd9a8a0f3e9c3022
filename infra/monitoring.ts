import { Duration, Stack } from 'aws-cdk-lib';
import type * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  ALARMED_LOG_MESSAGES,
  METRIC,
  METRICS_NAMESPACE,
  SERVICE_DIMENSION,
  STATUS_DIMENSION,
} from '../shared/metrics/names';
import { ROUTES, type RouteDefinition } from '../shared/routes';
import { RESPONSE_RESERVE_MS, SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../shared/timing';

type Handler = RouteDefinition['handler'];

/** Alarm thresholds, per 5 minutes unless named otherwise; docs/deploy.md says what each one means for an operator. */
export const ALARM_THRESHOLDS = {
  /** Share of API answers that were 5xx, once there are enough requests for a share to mean something. */
  serverErrorShare: 0.05,
  serverErrorShareMinRequests: 20,
  /**
   * 5xx answers counted by API Gateway, at any traffic (the share above reads 0 below 20 requests). Both count only
   * our faults: captures the customer's page made fail (CustomerPageFailures) are taken off.
   */
  serverErrors: 5,
  /** 500/503 answers the screenshot handler gave itself for our faults (the browser, DynamoDB out of reach). */
  handledServerErrors: 3,
  /** Credits owed to a customer: every one. */
  refundFailures: 1,
  /** Invocations Lambda refused (the screenshot function's reserved concurrency is full, or the account's). */
  throttles: 5,
  /** Renderer invocations Lambda refused: captures answered 429 (or moved to the headroom) for capacity. */
  rendererThrottles: 20,
  /** Crashes and timeouts of any function (handled errors are answered, not thrown). */
  functionErrors: 5,
  /** A single invocation of a management function that ran this share of its timeout. */
  timeoutShare: 0.8,
  /**
   * A capturing invocation (screenshot or MCP) this long: a capture's budget may rightly run to the function's timeout less the
   * response reserve (shared/timing.ts), so only a run halfway into that reserve means our own answer is late.
   */
  screenshotNearTimeoutMs: SCREENSHOT_FUNCTION_TIMEOUT_MS - RESPONSE_RESERVE_MS / 2,
  /** DynamoDB read and write throttle events on the table. */
  dynamoThrottles: 5,
  /** Usage records that could not be written: each is a line an operator adds back by hand. */
  usageWriteFailures: 1,
  /** KMS calls that failed (signed links and new keys answer 503 meanwhile). */
  kmsFailures: 1,
  /** Screenshot p90 duration, three periods running: captures heading for the timeout. */
  screenshotP90Ms: 60_000,
} as const;

export interface MonitoringProps {
  api: apigateway.RestApi;
  functions: ReadonlyMap<Handler, lambda.Function>;
  /** Functions that serve no route (the job worker): their errors, throttles and alarmed log lines count too. */
  workers?: Readonly<Record<string, lambda.Function>>;
  aliases: ReadonlyMap<Handler, lambda.Alias>;
  /** The renderers the screenshot front invokes: the shared one and the headroom one (docs/api.md 6.5). */
  renderers: readonly lambda.Function[];
  /** The table whose throttle events page. */
  table: dynamodb.ITable;
  /** The `service` dimension of the business metrics: the stack sets POWERTOOLS_SERVICE_NAME to it. */
  serviceName: string;
  /** Name and region of the API's web ACL, for its blocked-requests chart. */
  webAclName: string;
  alarmActions: cloudwatch.IAlarmAction[];
  /** The job queue's dead-letter queue: a message there is a job nobody could end. */
  deadLetterQueue?: sqs.IQueue;
  /** The webhook queue's: a message there is a webhook of an ended job nobody could send. */
  webhookDeadLetterQueue?: sqs.IQueue;
}

/**
 * The service's alarms (sent to the alarm actions), the canary gates CodeDeploy watches, and the operations
 * dashboard. Business metrics come from shared/metrics/names.ts, the module the functions emit them with.
 */
/** CloudWatch's bound on the metrics of one alarm's math expression. */
const MAX_ALARM_METRICS = 10;

export class Monitoring extends Construct {
  /** Alarms that page: every one sends to the alarm actions. */
  readonly alarms: cloudwatch.Alarm[] = [];
  /** Per function: what rolls a new version back (its own crashes, its duration near the timeout, and more). */
  readonly rollbackAlarms = new Map<Handler, cloudwatch.IAlarm[]>();
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const fiveMinutes = Duration.minutes(5);
    const stage = props.api.deploymentStage;
    const business = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { [SERVICE_DIMENSION]: props.serviceName },
        statistic,
        period: fiveMinutes,
      });
    const page = (alarm: cloudwatch.Alarm) => {
      alarm.addAlarmAction(...props.alarmActions);
      this.alarms.push(alarm);
      return alarm;
    };
    const atLeast = (
      alarmId: string,
      metric: cloudwatch.Metric | cloudwatch.MathExpression,
      threshold: number,
      alarmDescription: string,
    ) =>
      page(
        metric.createAlarm(this, alarmId, {
          alarmDescription,
          threshold,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
      );
    const t = ALARM_THRESHOLDS;

    const deadLetters = (id: string, queue: sqs.IQueue | undefined, description: string) => {
      if (queue)
        atLeast(
          id,
          queue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }),
          1,
          `${description} (docs/deploy.md, "When an alarm fires").`,
        );
    };
    deadLetters(
      'JobDeadLettersAlarm',
      props.deadLetterQueue,
      'A job message reached the dead-letter queue: the worker could not even end it',
    );
    deadLetters(
      'WebhookDeadLettersAlarm',
      props.webhookDeadLetterQueue,
      'A webhook attempt reached its dead-letter queue: the worker could not make it (never refund its job)',
    );

    // API Gateway's 5xx less the 500s answered for captures the customer's page made fail: our faults only. Never
    // below 0, so that page failures counted in another period (or any other way) cannot hide a real 5xx.
    const ourServerErrors = {
      gateway: stage.metricServerError({ period: fiveMinutes, statistic: 'Sum' }),
      pageFailures: business(METRIC.pageFailures, 'Sum'),
    };
    const ourFaults =
      'IF(FILL(gateway, 0) > FILL(pageFailures, 0), FILL(gateway, 0) - FILL(pageFailures, 0), 0)';
    page(
      new cloudwatch.MathExpression({
        label: '5xx share of requests (our faults)',
        expression: `IF(requests >= ${t.serverErrorShareMinRequests}, (${ourFaults}) / requests, 0)`,
        usingMetrics: {
          ...ourServerErrors,
          requests: stage.metricCount({ period: fiveMinutes, statistic: 'Sum' }),
        },
        period: fiveMinutes,
      }).createAlarm(this, 'ServerErrorRateAlarm', {
        alarmDescription: `More than ${t.serverErrorShare * 100}% of API requests answered 5xx (twice in 15 minutes).`,
        threshold: t.serverErrorShare,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    const serverErrors = atLeast(
      'ServerErrorCountAlarm',
      new cloudwatch.MathExpression({
        label: '5xx answers (our faults)',
        expression: ourFaults,
        usingMetrics: ourServerErrors,
        period: fiveMinutes,
      }),
      t.serverErrors,
      `${t.serverErrors} or more API answers were 5xx in 5 minutes for our faults, whatever the traffic ` +
        "(captures the customer's page made fail are not counted).",
    );
    const handledServerErrors = atLeast(
      'HandledServerErrorsAlarm',
      business(METRIC.serverErrors, 'Sum'),
      t.handledServerErrors,
      `${t.handledServerErrors} or more screenshot answers were 500/503 for our faults in 5 minutes (the browser ` +
        "failed, DynamoDB out of reach; never the customer's page): they are answers, not Lambda errors.",
    );
    const refundFailures = atLeast(
      'RefundFailuresAlarm',
      business(METRIC.refundFailures, 'Sum'),
      t.refundFailures,
      'A refund could not be written: credits are owed. Return them with `npm run credits -- refunds list|return`.',
    );

    const functions = [...props.functions.entries()];
    const watched: [string, lambda.Function][] = [...functions, ...Object.entries(props.workers ?? {})];
    // An alarm's expression may hold at most 10 metrics: the functions are summed in groups of that size, one alarm
    // per group (the first keeps the plain id).
    const groups: lambda.Function[][] = [];
    for (let at = 0; at < watched.length; at += MAX_ALARM_METRICS)
      groups.push(watched.slice(at, at + MAX_ALARM_METRICS).map(([, fn]) => fn));
    const sumOver = (
      label: string,
      group: readonly lambda.Function[],
      metricOf: (fn: lambda.Function) => cloudwatch.Metric,
    ) => {
      const usingMetrics = Object.fromEntries(group.map((fn, index) => [`m${index}`, metricOf(fn)]));
      return new cloudwatch.MathExpression({
        label,
        // FILL: a function nobody called has no datapoints, which would otherwise blank the whole sum.
        expression: Object.keys(usingMetrics)
          .map((metricId) => `FILL(${metricId}, 0)`)
          .join(' + '),
        usingMetrics,
        period: fiveMinutes,
      });
    };
    groups.forEach((group, index) => {
      const suffix = index === 0 ? '' : String(index + 1);
      atLeast(
        `FunctionErrorsAlarm${suffix}`,
        sumOver('Function errors', group, (fn) => fn.metricErrors({ period: fiveMinutes, statistic: 'Sum' })),
        t.functionErrors,
        `${t.functionErrors} or more Lambda invocation errors (crashes, timeouts) in 5 minutes.`,
      );
      atLeast(
        `ThrottlesAlarm${suffix}`,
        sumOver('Function throttles', group, (fn) =>
          fn.metricThrottles({ period: fiveMinutes, statistic: 'Sum' }),
        ),
        t.throttles,
        `${t.throttles} or more invocations refused by Lambda in 5 minutes (reserved or account concurrency full).`,
      );
    });
    atLeast(
      'RendererErrorsAlarm',
      sumOver('Renderer errors', props.renderers, (fn) =>
        fn.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
      ),
      t.functionErrors,
      `${t.functionErrors} or more renderer invocation errors (Chromium crashes, timeouts) in 5 minutes.`,
    );
    atLeast(
      'RendererThrottlesAlarm',
      sumOver('Renderer throttles', props.renderers, (fn) =>
        fn.metricThrottles({ period: fiveMinutes, statistic: 'Sum' }),
      ),
      t.rendererThrottles,
      `${t.rendererThrottles} or more renderer invocations refused in 5 minutes: the capture capacity is full ` +
        '(captures answered 429); raise screenshotReservedConcurrency if it stays so.',
    );

    atLeast(
      'DynamoThrottlesAlarm',
      new cloudwatch.MathExpression({
        label: 'DynamoDB throttle events',
        expression: 'FILL(reads, 0) + FILL(writes, 0)',
        usingMetrics: Object.fromEntries(
          (['reads', 'writes'] as const).map((id) => [
            id,
            new cloudwatch.Metric({
              namespace: 'AWS/DynamoDB',
              metricName: id === 'reads' ? 'ReadThrottleEvents' : 'WriteThrottleEvents',
              dimensionsMap: { TableName: props.table.tableName },
              statistic: 'Sum',
              period: fiveMinutes,
            }),
          ]),
        ),
        period: fiveMinutes,
      }),
      t.dynamoThrottles,
      `${t.dynamoThrottles} or more DynamoDB requests throttled in 5 minutes: answers turn into 503s.`,
    );
    // Counted from the functions' structured logs (ALARMED_LOG_MESSAGES): the code already logs each failure.
    for (const [metricName, message] of Object.entries(ALARMED_LOG_MESSAGES)) {
      for (const [handler, fn] of watched) {
        new logs.MetricFilter(this, `${pascal(handler)}${pascal(metricName)}Filter`, {
          logGroup: fn.logGroup,
          metricNamespace: METRICS_NAMESPACE,
          metricName: METRIC[metricName as keyof typeof ALARMED_LOG_MESSAGES],
          filterPattern: logs.FilterPattern.stringValue('$.message', '=', message),
          metricValue: '1',
          // Powertools writes the service (the stack's name) on every line, so environments stay apart.
          dimensions: { [SERVICE_DIMENSION]: `$.${SERVICE_DIMENSION}` },
        });
      }
    }
    atLeast(
      'UsageWriteFailuresAlarm',
      business(METRIC.usageWriteFailures, 'Sum'),
      t.usageWriteFailures,
      `A usage record could not be written: find "${ALARMED_LOG_MESSAGES.usageWriteFailures}" in the logs and add it back.`,
    );
    atLeast(
      'KmsFailuresAlarm',
      business(METRIC.kmsFailures, 'Sum'),
      t.kmsFailures,
      'A KMS call failed: signed links and new keys answer 503 until KMS answers again.',
    );

    for (const [handler, fn] of functions) {
      const timeout = fn.timeout ?? Duration.seconds(3);
      // The streaming routes capture (screenshot and MCP): their budget runs to the response reserve.
      const nearTimeoutMs = ROUTES.some((route) => route.handler === handler && route.streaming)
        ? t.screenshotNearTimeoutMs
        : Math.round(timeout.toMilliseconds() * t.timeoutShare);
      const nearTimeout = atLeast(
        `${pascal(handler)}NearTimeoutAlarm`,
        fn.metricDuration({ period: fiveMinutes, statistic: 'Maximum' }),
        nearTimeoutMs,
        `An invocation of ${handler} ran ${nearTimeoutMs / 1000} s of its ${timeout.toSeconds()} s timeout.`,
      );
      const alias = props.aliases.get(handler);
      if (!alias) throw new Error(`No alias for ${handler}`);
      // Not paging: CodeDeploy watches it while a new version takes its share of traffic.
      const aliasErrors = alias
        .metricErrors({ period: Duration.minutes(1), statistic: 'Sum' })
        .createAlarm(this, `${pascal(handler)}CanaryErrorsAlarm`, {
          alarmDescription: `Any invocation error of ${handler} through its live alias: rolls a new version back.`,
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        });
      this.rollbackAlarms.set(handler, [
        aliasErrors,
        nearTimeout,
        serverErrors,
        ...(handler === 'screenshot' ? [handledServerErrors, refundFailures] : []),
      ]);
    }

    const screenshot = props.functions.get('screenshot');
    if (!screenshot) throw new Error('No screenshot function');
    page(
      screenshot
        .metricDuration({ period: fiveMinutes, statistic: 'p90' })
        .createAlarm(this, 'ScreenshotLatencyAlarm', {
          alarmDescription: `Screenshot function p90 duration above ${t.screenshotP90Ms / 1000} s for 15 minutes.`,
          threshold: t.screenshotP90Ms,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 3,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
    );

    const region = Stack.of(this).region;
    const graph = (title: string, left: cloudwatch.IMetric[], width = 6) =>
      new cloudwatch.GraphWidget({ title, left, width, height: 6 });
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `${props.serviceName}-operations`,
      defaultInterval: Duration.hours(3),
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 4 })],
        [
          graph('Captures by status', [
            new cloudwatch.MathExpression({
              label: '',
              expression:
                `SEARCH('{${METRICS_NAMESPACE},${SERVICE_DIMENSION},${STATUS_DIMENSION}} ` +
                `MetricName="${METRIC.requestsByStatus}" ${SERVICE_DIMENSION}="${props.serviceName}"', 'Sum', 300)`,
              usingMetrics: {},
              period: fiveMinutes,
            }),
          ]),
          graph('Credits charged', [business(METRIC.creditsCharged, 'Sum')]),
          graph('Capture duration (ms)', [
            business(METRIC.captureDuration, 'p50'),
            business(METRIC.captureDuration, 'p90'),
            business(METRIC.captureDuration, 'Maximum'),
          ]),
          graph('500/503 answers: our faults and customer pages', [
            business(METRIC.serverErrors, 'Sum'),
            business(METRIC.pageFailures, 'Sum'),
          ]),
        ],
        [
          graph('Cache hits', [business(METRIC.cacheHits, 'Sum')]),
          graph('Refund failures', [business(METRIC.refundFailures, 'Sum')]),
          graph('API answers', [
            stage.metricCount({ period: fiveMinutes, statistic: 'Sum' }),
            stage.metricClientError({ period: fiveMinutes, statistic: 'Sum' }),
            stage.metricServerError({ period: fiveMinutes, statistic: 'Sum' }),
          ]),
          graph('Screenshot and renderer concurrency, throttles', [
            ...[screenshot, ...props.renderers].flatMap((fn) => [
              fn.metric('ConcurrentExecutions', { period: fiveMinutes, statistic: 'Maximum' }),
              fn.metricThrottles({ period: fiveMinutes, statistic: 'Sum' }),
            ]),
          ]),
        ],
        [
          graph(
            'Requests blocked by the web ACL',
            [
              new cloudwatch.Metric({
                namespace: 'AWS/WAFV2',
                metricName: 'BlockedRequests',
                dimensionsMap: { WebACL: props.webAclName, Region: region, Rule: 'ALL' },
                statistic: 'Sum',
                period: fiveMinutes,
              }),
            ],
            12,
          ),
          graph(
            'Function errors',
            functions.map(([, fn]) => fn.metricErrors({ period: fiveMinutes, statistic: 'Sum' })),
            12,
          ),
        ],
      ],
    });
  }
}

export const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);
