import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, ofType, type SynthesizedStack, synthesizeStack } from './synth';

/**
 * The fixed monthly cost the runbook (docs/deploy.md, "Costs") and docs/performance.md state, computed from the
 * synthesized templates (both stacks of an environment) at list prices: what is billed whether or not anyone calls
 * the service.
 */
const PRICES = {
  /** WAF: per web ACL and per rule, a month. */
  webAcl: 5,
  webAclRule: 1,
  /** CloudWatch: per standard-resolution alarm metric (a math alarm pays for each metric it reads), a month. */
  alarmMetric: 0.1,
  /** CloudWatch: per dashboard, a month (beyond an account's first three). */
  dashboard: 3,
  /** KMS: per customer managed key, a month (before its rotations, each of the first two adding as much). */
  kmsKey: 1,
  /** Secrets Manager: per secret, a month. */
  secret: 0.4,
};

const DOCS = path.join(import.meta.dirname, '..', '..', 'docs');

let synth: SynthesizedStack;
beforeAll(() => {
  synth = synthesizeStack(undefined, false);
}, 120_000);
afterAll(() => synth?.cleanup());

function fixedCosts() {
  const resources = {
    ...synth.resources,
    ...(synth.edgeTemplate.toJSON().Resources as typeof synth.resources),
  };
  const acls = ofType(resources, 'AWS::WAFv2::WebACL').map(
    ([, acl]) => (acl.Properties.Rules as Json[]).length,
  );
  const alarms = ofType(resources, 'AWS::CloudWatch::Alarm').map(([, alarm]) => {
    const metrics = alarm.Properties.Metrics as Json[] | undefined;
    return metrics ? metrics.filter((metric) => metric.MetricStat !== undefined).length : 1;
  });
  const dashboards = ofType(resources, 'AWS::CloudWatch::Dashboard').length;
  // Review of the deployed stack (round 25): the key and the secret were billed and left out.
  const keysAndSecrets =
    ofType(resources, 'AWS::KMS::Key').length * PRICES.kmsKey +
    ofType(resources, 'AWS::SecretsManager::Secret').length * PRICES.secret;
  const metrics = alarms.reduce((sum, count) => sum + count, 0);
  const waf = acls.reduce((sum, rules) => sum + PRICES.webAcl + rules * PRICES.webAclRule, 0);
  const alarmCost = metrics * PRICES.alarmMetric;
  const dashboardCost = dashboards * PRICES.dashboard;
  return {
    acls,
    alarms: alarms.length,
    metrics,
    waf,
    alarmCost,
    dashboardCost,
    keysAndSecrets,
    total: waf + alarmCost + dashboardCost + keysAndSecrets,
  };
}

describe('the fixed monthly cost, computed from the template', () => {
  it('is what the runbook and docs/performance.md state', () => {
    const costs = fixedCosts();
    const runbook = readFileSync(path.join(DOCS, 'deploy.md'), 'utf8');
    const performance = readFileSync(path.join(DOCS, 'performance.md'), 'utf8');
    expect(costs.acls.length).toBe(2);
    expect(runbook).toContain(`${costs.acls.length} web ACLs`);
    expect(new Set(costs.acls).size).toBe(1);
    expect(runbook).toContain(`${costs.acls[0]} rules each`);
    expect(runbook).toContain(`${costs.alarms} alarms`);
    expect(runbook).toContain(`${costs.metrics} metrics`);
    expect(runbook).toContain(`| ${costs.waf.toFixed(2)} |`);
    expect(runbook).toContain(`| ${costs.alarmCost.toFixed(2)} |`);
    const total = `about ${Math.round(costs.total)} USD`;
    expect(runbook).toContain(total);
    expect(performance).toContain(`${costs.alarms} alarms reading ${costs.metrics} metrics`);
    expect(performance).toContain(total);
  });

  it('comes with the same per-1,000 figures in both documents', () => {
    const runbook = readFileSync(path.join(DOCS, 'deploy.md'), 'utf8').replaceAll(/\s+/g, ' ');
    const performance = readFileSync(path.join(DOCS, 'performance.md'), 'utf8').replaceAll(/\s+/g, ' ');
    for (const figure of [
      'captures (2 s each',
      'cache hits through the API',
      'signed `<img>` loads served from the edge',
    ]) {
      const stated = (text: string) =>
        new RegExp(`${figure.replace(/[()`<>]/g, '\\$&')}[^|]*?(?:\\| |: )about ([\\d.]+) USD`, 'i').exec(
          text,
        )?.[1];
      expect(stated(runbook), figure).toBeDefined();
      expect(stated(runbook), figure).toBe(stated(performance));
    }
  });
});
