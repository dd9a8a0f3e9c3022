import { Match } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALARM_THRESHOLDS, pascal } from '../../infra/monitoring';
import { ALARMED_LOG_MESSAGES, METRIC } from '../../shared/metrics/names';
import { CAPTURE_BUDGET_MS, RESPONSE_RESERVE_MS, SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../../shared/timing';
import { asList, type Json, ofType, type SynthesizedStack, synthesizeStack, TEST_SETTINGS } from './synth';

// Templates only: alarms, filters and hooks need no bundle.
let synth: SynthesizedStack;
beforeAll(() => {
  synth = synthesizeStack(
    { ...TEST_SETTINGS, alarmEmails: ['ops@shots.example', 'oncall@shots.example'] },
    false,
  );
}, 120_000);
afterAll(() => synth?.cleanup());

const alarmIdOf = (id: string) =>
  synth.stack.getLogicalId(synth.stack.monitoring.node.findChild(id).node.defaultChild as never);
const alarm = (id: string) => synth.resources[alarmIdOf(id)]?.Properties ?? {};
/** The metric-math expressions and metric names an alarm reads. */
const readsOf = (id: string) => JSON.stringify(alarm(id).Metrics ?? [alarm(id)]);

describe('alarms on our own faults', () => {
  for (const id of ['ServerErrorCountAlarm', 'ServerErrorRateAlarm']) {
    it(`${id} takes the customer's page failures off API Gateway's 5xx`, () => {
      const reads = readsOf(id);
      expect(reads).toContain('FILL(gateway, 0) - FILL(pageFailures, 0)');
      // Never below 0: more page failures than 5xx in a period hide none of another route's.
      expect(reads).toContain('IF(FILL(gateway, 0) > FILL(pageFailures, 0), ');
      expect(reads).toContain(`"MetricName":"${METRIC.pageFailures}"`);
      expect(reads).toContain('"MetricName":"5XXError"');
    });
  }

  it('roll a new screenshot version back only on our faults', () => {
    const rollback = (synth.stack.monitoring.rollbackAlarms.get('screenshot') ?? []).map((a) =>
      synth.stack.getLogicalId(a.node.defaultChild as never),
    );
    expect(rollback).toContain(alarmIdOf('ServerErrorCountAlarm'));
    expect(rollback).toContain(alarmIdOf('HandledServerErrorsAlarm'));
    // The handled-errors metric is ours only; page failures never roll back.
    expect(alarm('HandledServerErrorsAlarm').MetricName).toBe(METRIC.serverErrors);
    // Where a rollback alarm reads customer-page failures at all, it is to take them off.
    for (const id of rollback) {
      const text = JSON.stringify(synth.resources[id]);
      if (text.includes(METRIC.pageFailures)) expect(text).toContain('- FILL(pageFailures, 0)');
    }
  });

  it('fire NearTimeout for the capturing functions (screenshot, MCP) only past the capture budget', () => {
    const threshold = Number(alarm('ScreenshotNearTimeoutAlarm').Threshold);
    expect(threshold).toBe(ALARM_THRESHOLDS.screenshotNearTimeoutMs);
    expect(Number(alarm('McpNearTimeoutAlarm').Threshold)).toBe(threshold);
    // A capture may rightly run its whole budget, capped at the timeout less the response reserve.
    expect(threshold).toBeGreaterThan(
      Math.min(CAPTURE_BUDGET_MS, SCREENSHOT_FUNCTION_TIMEOUT_MS - RESPONSE_RESERVE_MS),
    );
    expect(threshold).toBeLessThan(SCREENSHOT_FUNCTION_TIMEOUT_MS);
  });
});

describe('alarms on the renderers', () => {
  const rendererIds = () =>
    [synth.stack.renderer, synth.stack.headroomRenderer].map((renderer) =>
      synth.logicalId(renderer.fn as never),
    );

  for (const [id, metricName] of [
    ['RendererErrorsAlarm', 'Errors'],
    ['RendererThrottlesAlarm', 'Throttles'],
  ] as const) {
    it(`${id} sums the ${metricName} of both renderers, the shared and the headroom one`, () => {
      const reads = readsOf(id);
      for (const rendererId of rendererIds()) expect(reads).toContain(`{"Ref":"${rendererId}"}`);
      expect(reads).toContain(`"MetricName":"${metricName}"`);
      expect(alarm(id).AlarmActions).toBeDefined();
    });
  }

  it('keeps every alarm within CloudWatch’s 10 metrics per alarm', () => {
    for (const [id, resource] of ofType(synth.resources, 'AWS::CloudWatch::Alarm')) {
      const metrics = asList(resource.Properties.Metrics) as Json[];
      expect(metrics.filter((metric) => metric.MetricStat !== undefined).length, id).toBeLessThanOrEqual(10);
    }
  });
});

describe('alarms on the stores', () => {
  it('page on DynamoDB read and write throttle events of the table', () => {
    const reads = readsOf('DynamoThrottlesAlarm');
    expect(reads).toContain('"MetricName":"ReadThrottleEvents"');
    expect(reads).toContain('"MetricName":"WriteThrottleEvents"');
    expect(reads).toContain(
      `"TableName","Value":{"Ref":"${synth.logicalId(synth.stack.table as never)}"}`.slice(0, 20),
    );
    expect(alarm('DynamoThrottlesAlarm').AlarmActions).toBeDefined();
  });

  for (const [metricName, message] of Object.entries(ALARMED_LOG_MESSAGES)) {
    const metric = METRIC[metricName as keyof typeof ALARMED_LOG_MESSAGES];
    it(`count "${message}" log lines of every function as ${metric}, per service`, () => {
      const filters = ofType(synth.resources, 'AWS::Logs::MetricFilter').filter(([, f]) =>
        JSON.stringify(f.Properties).includes(`"MetricName":"${metric}"`),
      );
      // Every route's function, the job worker and the job sweeper.
      expect(filters).toHaveLength(synth.stack.functions.size + 2);
      for (const [, filter] of filters) {
        expect(filter.Properties.FilterPattern).toBe(`{ $.message = "${message}" }`);
        expect((asList(filter.Properties.MetricTransformations)[0] as Json).Dimensions).toEqual([
          { Key: 'service', Value: '$.service' },
        ]);
      }
      expect(alarm(`${pascal(metricName)}Alarm`)).toMatchObject({ MetricName: metric, Threshold: 1 });
    });
  }
});

describe('alarm subscribers', () => {
  it('subscribes every email address of the settings and sends to the existing topic too', () => {
    for (const address of ['ops@shots.example', 'oncall@shots.example']) {
      synth.template.hasResourceProperties('AWS::SNS::Subscription', {
        Protocol: 'email',
        Endpoint: address,
      });
    }
    expect(alarm('KmsFailuresAlarm').AlarmActions).toEqual(
      expect.arrayContaining([TEST_SETTINGS.alarmTopicArn]),
    );
  });
});

describe('the pre-traffic hook', () => {
  const hookFunctionId = () =>
    synth.stack.getLogicalId(
      synth.stack.node.findChild('ScreenshotPreTrafficHook').node.findChild('Function').node
        .defaultChild as never,
    );

  it('runs before the screenshot alias takes traffic', () => {
    const aliasId = synth.stack.getLogicalId(
      synth.stack.aliases.get('screenshot')?.node.defaultChild as never,
    );
    const update = (synth.template.toJSON().Resources[aliasId] as Json).UpdatePolicy as Json;
    expect(update.CodeDeployLambdaAliasUpdate).toMatchObject({
      BeforeAllowTrafficHook: { Ref: hookFunctionId() },
    });
  });

  it('is a small function without Chromium that invokes the new version with the dashboard as known page', () => {
    const hook = synth.resources[hookFunctionId()]?.Properties ?? {};
    expect(hook.MemorySize).toBe(256);
    expect(hook.Layers).toBeUndefined();
    const variables = (hook.Environment as Json).Variables as Json;
    expect(JSON.stringify(variables.FUNCTION_VERSION_ARN)).toContain('CurrentVersion');
    expect(JSON.stringify(variables.KNOWN_PAGE_URL)).toContain('DomainName');
    synth.template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Action: 'codedeploy:PutLifecycleEventHookExecutionStatus' }),
        ]),
      },
    });
  });
});
