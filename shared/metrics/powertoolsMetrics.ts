import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DEFAULT_SERVICE_NAME, METRIC, METRICS_NAMESPACE, STATUS_DIMENSION } from './names';
import type { CaptureOutcome, ServiceMetrics } from './serviceMetrics';

/**
 * ServiceMetrics as CloudWatch embedded metric format (EMF) lines on stdout: Lambda ships them with the logs, so a
 * metric costs no API call and still arrives when DynamoDB or the network is down (a failed refund, above all).
 * The service dimension comes from POWERTOOLS_SERVICE_NAME, which the stack sets to its own name.
 */
export class PowertoolsServiceMetrics implements ServiceMetrics {
  private readonly metrics: Metrics;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.metrics = new Metrics({
      namespace: METRICS_NAMESPACE,
      serviceName: env.POWERTOOLS_SERVICE_NAME || DEFAULT_SERVICE_NAME,
    });
  }

  captureFinished(outcome: CaptureOutcome): void {
    // The status series goes out on its own: a dimension added to the shared buffer would apply to every metric.
    this.metrics
      .singleMetric()
      .addDimension(STATUS_DIMENSION, String(outcome.status))
      .addMetric(METRIC.requestsByStatus, MetricUnit.Count, 1);
    const failed = outcome.status >= 500;
    this.metrics.addMetric(METRIC.serverErrors, MetricUnit.Count, failed && !outcome.pageFault ? 1 : 0);
    // Only those answered 5xx: the alarms take them off API Gateway's 5xx.
    const pageFailure = failed && outcome.pageFault && outcome.inToolResult !== true;
    this.metrics.addMetric(METRIC.pageFailures, MetricUnit.Count, pageFailure ? 1 : 0);
    this.metrics.addMetric(METRIC.creditsCharged, MetricUnit.Count, outcome.creditsCharged);
    this.metrics.addMetric(METRIC.captureDuration, MetricUnit.Milliseconds, outcome.durationMs);
    this.metrics.addMetric(METRIC.cacheHits, MetricUnit.Count, outcome.cacheHit ? 1 : 0);
  }

  refundFailed(): void {
    this.metrics.addMetric(METRIC.refundFailures, MetricUnit.Count, 1);
  }

  flush(): void {
    // Powertools warns on an empty flush; an invocation that recorded nothing (a warm-up) has nothing to say.
    if (this.metrics.hasStoredMetrics()) this.metrics.publishStoredMetrics();
  }
}
