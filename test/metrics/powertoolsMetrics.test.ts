import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keyManagement } from '../../shared/keys/keyManagement';
import { METRIC, METRICS_NAMESPACE, SERVICE_DIMENSION, STATUS_DIMENSION } from '../../shared/metrics/names';
import { PowertoolsServiceMetrics } from '../../shared/metrics/powertoolsMetrics';
import { captureScreenshot } from '../../shared/screenshot/captureScreenshot';
import { InMemoryServiceMetrics } from '../helpers/inMemoryMetrics';
import {
  fakeSessions,
  MemoryCreditLedger,
  MemoryKeyStore,
  memoryScreenshotDeps,
} from '../helpers/memoryPorts';

interface EmfLine {
  _aws: {
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [key: string]: unknown;
}

/** The EMF documents written to stdout while `run` runs. */
function emitted(run: () => void): EmfLine[] {
  const lines: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    run();
  } finally {
    write.mockRestore();
  }
  return lines
    .join('')
    .split('\n')
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line) as EmfLine);
}

const metricNames = (line: EmfLine) =>
  line._aws.CloudWatchMetrics.flatMap((d) => d.Metrics.map((m) => m.Name));

describe('PowertoolsServiceMetrics', () => {
  const env = { POWERTOOLS_SERVICE_NAME: 'ScreenshotService-test' };
  beforeEach(() => vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false'));
  afterEach(() => vi.unstubAllEnvs());

  it("counts an MCP tool's page failure, answered inside a 200, as no page failure to take off API Gateway's 5xx", () => {
    const metrics = new PowertoolsServiceMetrics(env);
    const failure = { status: 500, durationMs: 40, creditsCharged: 0, cacheHit: false, pageFault: true };
    const lines = emitted(() => {
      metrics.captureFinished({ ...failure, inToolResult: true });
      metrics.captureFinished(failure);
      metrics.flush();
    });
    // A metric recorded more than once in a flush is written as the list of its values.
    const counted = (name: string) =>
      lines
        .filter((line) => metricNames(line).includes(name))
        .flatMap((line) => [line[name]].flat())
        .reduce((sum: number, value) => sum + Number(value), 0);
    // Review of the deployed stack (round 25): each MCP page failure cancelled one real 5xx of the alarms.
    expect(counted(METRIC.pageFailures)).toBe(1);
    expect(counted(METRIC.serverErrors)).toBe(0);
  });

  it('publishes a finished capture under the shared namespace, with the service as dimension', () => {
    const metrics = new PowertoolsServiceMetrics(env);
    const lines = emitted(() => {
      metrics.captureFinished({
        status: 200,
        durationMs: 812,
        creditsCharged: 2,
        cacheHit: false,
        pageFault: false,
      });
      metrics.flush();
    });
    const buffered = lines.find((line) => metricNames(line).includes(METRIC.creditsCharged));
    expect(buffered?._aws.CloudWatchMetrics[0]?.Namespace).toBe(METRICS_NAMESPACE);
    expect(buffered?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([[SERVICE_DIMENSION]]);
    expect(buffered).toMatchObject({
      [SERVICE_DIMENSION]: 'ScreenshotService-test',
      [METRIC.serverErrors]: 0,
      [METRIC.creditsCharged]: 2,
      [METRIC.captureDuration]: 812,
      [METRIC.cacheHits]: 0,
    });
  });

  it('counts each answer by status in a series of its own', () => {
    const metrics = new PowertoolsServiceMetrics(env);
    const lines = emitted(() => {
      metrics.captureFinished({
        status: 503,
        durationMs: 40,
        creditsCharged: 0,
        cacheHit: false,
        pageFault: false,
      });
      metrics.flush();
    });
    const byStatus = lines.find((line) => metricNames(line).includes(METRIC.requestsByStatus));
    expect(byStatus?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([[SERVICE_DIMENSION, STATUS_DIMENSION]]);
    expect(byStatus).toMatchObject({ [STATUS_DIMENSION]: '503', [METRIC.requestsByStatus]: 1 });
    expect(metricNames(byStatus as EmfLine)).toEqual([METRIC.requestsByStatus]);
    const buffered = lines.find((line) => metricNames(line).includes(METRIC.serverErrors));
    expect(buffered?.[METRIC.serverErrors]).toBe(1);
  });

  it('publishes a failed refund', () => {
    const metrics = new PowertoolsServiceMetrics(env);
    const lines = emitted(() => {
      metrics.refundFailed();
      metrics.flush();
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.[METRIC.refundFailures]).toBe(1);
  });

  it('writes nothing, not even a warning, when nothing was recorded', () => {
    const metrics = new PowertoolsServiceMetrics(env);
    const write = vi.spyOn(process.stdout, 'write');
    const warn = vi.spyOn(console, 'warn');
    try {
      metrics.flush();
      expect(write).not.toHaveBeenCalled();
      expect(warn).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
      warn.mockRestore();
    }
  });
});

describe('InMemoryServiceMetrics', () => {
  it('keeps what each flush published', () => {
    const metrics = new InMemoryServiceMetrics();
    metrics.captureFinished({
      status: 200,
      durationMs: 5,
      creditsCharged: 1,
      cacheHit: true,
      pageFault: false,
    });
    metrics.refundFailed();
    metrics.flush();
    metrics.flush();
    expect(metrics.published).toEqual([
      {
        captures: [{ status: 200, durationMs: 5, creditsCharged: 1, cacheHit: true, pageFault: false }],
        refundFailures: 1,
      },
    ]);
  });
});

describe('the screenshot use case', () => {
  it('says a capture asked through MCP was answered inside a tool result', async () => {
    const keys = new MemoryKeyStore();
    const credits = new MemoryCreditLedger();
    const metrics = new InMemoryServiceMetrics();
    const deps = memoryScreenshotDeps({ keys, credits, metrics });
    const manage = keyManagement({
      sessions: fakeSessions,
      keys,
      credits,
      cipher: deps.cipher,
      freeCredits: 0,
    });
    const { key } = await manage.createKey('session:acct', () => ({ name: 'k' }));
    await credits.set('acct', 5);
    const capture = captureScreenshot(deps);
    const request = () => ({ url: 'https://a.test/pagefault' });
    await capture({ apiKey: key, request, deadline: Date.now() + 60_000 });
    await capture({ apiKey: key, request, deadline: Date.now() + 60_000, via: 'mcp' });
    expect(metrics.pending.captures.map((c) => [c.status, c.pageFault, c.inToolResult])).toEqual([
      [500, true, undefined],
      [500, true, true],
    ]);
  });
});
