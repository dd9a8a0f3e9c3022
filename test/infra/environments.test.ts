import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeStackName } from '../../infra/deployment';
import { type DeploymentSettings, loadEnvironments, SETTING_KEYS } from '../../infra/settings';
import { PROJECT_ROOT } from '../../infra/stack';
import { type Json, type SynthesizedStack, synthesizeStack } from './synth';

/**
 * The committed environments, synthesized as `cdk deploy <stackName>` would (templates only, no bundling), in one
 * account and region, the hardest case for living side by side.
 */
// The committed files are examples: their account ids are placeholders, which a real synth refuses.
const environments = loadEnvironments(undefined, { placeholders: 'allow' });
const [dev, prod] = ['dev', 'prod'].map((name) => {
  const settings = environments.find((e) => e.environment === name);
  if (!settings) throw new Error(`infra/environments/${name}.json is missing`);
  return settings;
}) as [DeploymentSettings, DeploymentSettings];

let synthesized: SynthesizedStack[] = [];
beforeAll(() => {
  const sameAccount = { account: prod.account, region: prod.region };
  synthesized = [
    // Only one stack per account and region may own the API Gateway logging role (docs/deploy.md).
    synthesizeStack({ ...dev, ...sameAccount, apiGatewayLoggingRole: false }, false),
    synthesizeStack({ ...prod, ...sameAccount }, false),
  ];
});
afterAll(() => {
  for (const stack of synthesized) stack.cleanup();
});

/** Properties that name a resource in the account or region (or globally), where two stacks must not meet. */
const PHYSICAL_NAME = new Set([
  'TableName',
  'FunctionName',
  'LayerName',
  'RoleName',
  'ManagedPolicyName',
  'LogGroupName',
  'TopicName',
  'BucketName',
  'UserPoolName',
  'Domain',
  'AlarmName',
  'DashboardName',
  'ApplicationName',
  'DeploymentGroupName',
  // Web ACLs, REST APIs and CloudFront policies (inside their *Config).
  'Name',
]);
/** Scoped to their function: every function has its `live` alias. */
const NOT_PHYSICAL = new Set(['AWS::Lambda::Alias Name']);

/** Every literal physical name in a template, as `Type Property=value`. */
function physicalNames(stack: SynthesizedStack): Set<string> {
  const names = new Set<string>();
  const visit = (type: string, node: unknown, depth: number) => {
    if (node === null || typeof node !== 'object' || depth > 2) return;
    for (const [key, value] of Object.entries(node as Json)) {
      if (typeof value === 'string' && PHYSICAL_NAME.has(key) && !NOT_PHYSICAL.has(`${type} ${key}`)) {
        names.add(`${type} ${key}=${value}`);
      } else if (!Array.isArray(value)) {
        visit(type, value, depth + 1);
      }
    }
  };
  for (const template of [stack.template, stack.edgeTemplate]) {
    for (const resource of Object.values(template.toJSON().Resources as Record<string, Json>)) {
      visit(String(resource.Type), resource.Properties, 0);
    }
  }
  return names;
}

describe('two environments', () => {
  it('are separate stacks with their own names, in the app as committed', () => {
    const [devStacks, prodStacks] = synthesized.map((s) => [s.stack.stackName, s.edge.stackName]);
    expect(devStacks).toEqual([dev.stackName, edgeStackName(dev)]);
    expect(prodStacks).toEqual([prod.stackName, edgeStackName(prod)]);
    expect(new Set([...(devStacks ?? []), ...(prodStacks ?? [])]).size).toBe(4);
  });

  it('share no physical resource name, so neither can touch the other', () => {
    const [devNames, prodNames] = synthesized.map(physicalNames) as [Set<string>, Set<string>];
    expect(devNames.size).toBeGreaterThan(3);
    expect([...devNames].filter((name) => prodNames.has(name))).toEqual([]);
  });

  it('keep their business metrics apart through the service dimension', () => {
    const services = synthesized.map((s) => s.stack.stackName);
    expect(new Set(services).size).toBe(2);
    for (const stack of synthesized) {
      const [, fn] =
        Object.entries(stack.resources).find(
          ([, r]) =>
            r.Type === 'AWS::Lambda::Function' &&
            JSON.stringify(r.Properties).includes('POWERTOOLS_SERVICE_NAME'),
        ) ?? [];
      expect(JSON.stringify(fn?.Properties)).toContain(
        `"POWERTOOLS_SERVICE_NAME":"${stack.stack.stackName}"`,
      );
    }
  });

  it('leave the account-wide API Gateway logging role to one of them', () => {
    const owners = synthesized.filter((s) =>
      Object.values(s.resources).some((r) => r.Type === 'AWS::ApiGateway::Account'),
    );
    expect(owners).toHaveLength(1);
  });

  it('are pinned to their account and region, and the edge stacks to us-east-1', () => {
    for (const [stack, settings] of [
      [synthesized[0], dev],
      [synthesized[1], prod],
    ] as const) {
      expect(stack?.stack.account).toBe(prod.account);
      expect(stack?.stack.region).toBe(prod.region);
      expect(stack?.stack.stackName).toBe(settings.stackName);
      expect(stack?.edge.region).toBe('us-east-1');
    }
    for (const settings of environments) expect(settings.account).toMatch(/^\d{12}$/);
  });
});

describe('the runbook (docs/deploy.md)', () => {
  const runbook = readFileSync(path.join(PROJECT_ROOT, 'docs', 'deploy.md'), 'utf8');
  const stackNames = new Set(environments.flatMap((e) => [e.stackName, edgeStackName(e)]));

  it('names only stacks the app synthesizes in its cdk and CloudFormation commands', () => {
    const named = runbook.split('\n').flatMap((line) => {
      // Shell lines only (prose may mention `cdk deploy`), without their comment.
      const after = /^\s*npx cdk (?:deploy|destroy|diff)\s+([^#]*)/.exec(line)?.[1] ?? '';
      const words = after.split(/\s+/).filter(Boolean);
      const flag = words.findIndex((word) => word.startsWith('-') || word === '\\');
      return flag < 0 ? words : words.slice(0, flag);
    });
    const viaStackName = [...runbook.matchAll(/--stack-name\s+([\w-]+)/g)].map((match) => match[1] ?? '');
    expect(named.length).toBeGreaterThan(3);
    expect(viaStackName.length).toBeGreaterThan(0);
    for (const name of [...named, ...viaStackName]) expect(stackNames, name).toContain(name);
  });

  it('documents every setting an environment file may hold', () => {
    for (const key of SETTING_KEYS) expect(runbook, key).toContain(`\`${key}\``);
  });
});

describe('re-attaching a restored table and a kept user pool', () => {
  let attached: SynthesizedStack;
  beforeAll(() => {
    attached = synthesizeStack(
      {
        ...prod,
        existingTableName: 'ScreenshotService-prod-restored',
        existingUserPoolId: 'eu-west-1_AbCdEf123',
      },
      false,
    );
  });
  afterAll(() => attached?.cleanup());

  it('creates neither a table nor a user pool', () => {
    attached.template.resourceCountIs('AWS::DynamoDB::Table', 0);
    attached.template.resourceCountIs('AWS::Cognito::UserPool', 0);
  });

  it('points every function, its grant and the sign-in at them', () => {
    // Every function but the renderers, which hold no table or pool by design (docs/architecture.md).
    const functions = Object.values(attached.resources).filter(
      (r) =>
        JSON.stringify(r.Properties).includes('POWERTOOLS_SERVICE_NAME') &&
        !String(r.Properties.Description).startsWith('Renderer ('),
    );
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) {
      const text = JSON.stringify(fn.Properties);
      expect(text).toContain('"TABLE_NAME":"ScreenshotService-prod-restored"');
      expect(text).toContain('eu-west-1_AbCdEf123');
    }
    const grants = JSON.stringify(
      Object.values(attached.resources).filter((r) => r.Type === 'AWS::IAM::Policy'),
    );
    expect(grants).toContain(':table/ScreenshotService-prod-restored');
    attached.template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      UserPoolId: 'eu-west-1_AbCdEf123',
    });
  });
});
