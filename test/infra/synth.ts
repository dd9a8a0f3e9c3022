import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { App, type CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { addEnvironment } from '../../infra/deployment';
import type { EdgeStack } from '../../infra/edgeStack';
import { type DeploymentSettings, parseSettings } from '../../infra/settings';
import { PROJECT_ROOT, type ScreenshotServiceStack } from '../../infra/stack';
import type { RouteDefinition } from '../../shared/routes';

/** Settings that differ from the defaults, so a test can tell a setting reached the template. */
export const TEST_SETTINGS: DeploymentSettings = parseSettings(
  'test',
  {
    stackName: 'ScreenshotServiceTest',
    account: '123456789012',
    region: 'eu-central-1',
    production: true,
    rateLimitPerHour: 250,
    freeCredits: 7,
    screenshotReservedConcurrency: 40,
    rendererProvisionedConcurrency: 2,
    wafRequestsPerIp: 900,
    wafRequestsPerCredential: 240,
    maxConcurrentCaptures: 6,
    alarmEmails: ['ops@example.com'],
    alarmTopicArn: 'arn:aws:sns:eu-central-1:123456789012:pager',
    dashboardDomainPrefix: 'shots-test',
    emailSender: { fromEmail: 'no-reply@shots.example', fromName: 'Screenshots' },
  },
  { placeholders: 'allow' },
);

/** The feature flags and settings of cdk.json, which `cdk synth` and `cdk deploy` give the app. */
const CDK_CONTEXT = (
  JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  }
).context;

/** Loosely typed CloudFormation: tests read it, the assertions library checks it. */
export type Json = Record<string, unknown>;
export interface Resource {
  Type: string;
  Properties: Json;
  Metadata?: Json;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}

export interface SynthesizedStack {
  stack: ScreenshotServiceStack;
  edge: EdgeStack;
  template: Template;
  edgeTemplate: Template;
  resources: Record<string, Resource>;
  /** The cloud assembly directory, where staged assets (bundles, the layer) can be inspected. */
  outdir: string;
  logicalId(construct: { node: { defaultChild?: unknown } }): string;
  functionId(handler: RouteDefinition['handler']): string;
  cleanup(): void;
}

/**
 * Builds and synthesizes one environment as infra/app.ts does, into a temporary directory: bundling for real unless
 * `bundle` is false (then only the templates are worth reading).
 */
export function synthesizeStack(
  settings: DeploymentSettings = TEST_SETTINGS,
  bundle = true,
): SynthesizedStack {
  const outdir = mkdtempSync(path.join(tmpdir(), 'screenshot-cdk-'));
  // Asset metadata names each resource's staged asset, so tests can open the bundles and the layer.
  const app = new App({
    outdir,
    context: {
      ...CDK_CONTEXT,
      'aws:cdk:enable-asset-metadata': true,
      ...(bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
    },
  });
  const { service: stack, edge } = addEnvironment(app, settings);
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, Resource>;

  const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as CfnResource);
  return {
    stack,
    edge,
    template,
    edgeTemplate: Template.fromStack(edge),
    resources,
    outdir,
    logicalId,
    functionId(handler) {
      const fn = stack.functions.get(handler);
      if (!fn) throw new Error(`no function for ${handler}`);
      return logicalId(fn);
    },
    cleanup: () => rmSync(outdir, { recursive: true, force: true }),
  };
}

/** Resources of one type, by logical id. */
export function ofType(resources: Record<string, Resource>, type: string): [string, Resource][] {
  return Object.entries(resources).filter(([, resource]) => resource.Type === type);
}

/** `{ Ref: id }` or `{ Fn::GetAtt: [id, ...] }` → id. */
export function referencedId(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const ref = (value as Json).Ref;
  if (typeof ref === 'string') return ref;
  const getAtt = (value as Json)['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  return undefined;
}

/** Full paths of the API's resources (`/api/keys/{id}`), by logical id, from their PathPart/ParentId chain. */
export function apiResourcePaths(resources: Record<string, Resource>): Map<string, string> {
  const apiResources = new Map(ofType(resources, 'AWS::ApiGateway::Resource'));
  const paths = new Map<string, string>();
  const pathOf = (id: string): string => {
    const known = paths.get(id);
    if (known !== undefined) return known;
    const resource = apiResources.get(id);
    if (!resource) return ''; // the root resource (a GetAtt on the RestApi)
    const parent = referencedId(resource.Properties.ParentId);
    const parentPath = parent && apiResources.has(parent) ? pathOf(parent) : '';
    const full = `${parentPath}/${String(resource.Properties.PathPart)}`;
    paths.set(id, full);
    return full;
  };
  for (const id of apiResources.keys()) pathOf(id);
  return paths;
}

/** A policy statement's actions or resources as a list, whichever form CloudFormation holds. */
export function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : value === undefined ? [] : [value];
}

/** The first cycle among the resources' Ref, GetAtt, Sub and DependsOn edges (as ids, closing on the first), if any. */
export function dependencyCycle(
  resources: Record<string, Resource & { DependsOn?: unknown }>,
): string[] | undefined {
  const edges = new Map<string, string[]>();
  for (const [id, resource] of Object.entries(resources)) {
    const targets = new Set<string>(asList(resource.DependsOn).map(String));
    collectReferences(resource.Properties, targets);
    edges.set(
      id,
      [...targets].filter((target) => target !== id && target in resources),
    );
  }
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (done.has(id)) return undefined;
    const seen = path.indexOf(id);
    if (seen >= 0) return [...path.slice(seen), id];
    path.push(id);
    for (const next of edges.get(id) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(id);
    return undefined;
  };
  for (const id of edges.keys()) {
    const cycle = visit(id);
    if (cycle) return cycle;
  }
  return undefined;
}

/** Ref, GetAtt and the `${Id}` / `${Id.Attr}` placeholders of Fn::Sub, anywhere below `node`. */
function collectReferences(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) {
    for (const item of node) collectReferences(item, into);
  } else if (node !== null && typeof node === 'object') {
    const id = referencedId(node);
    if (id) into.add(id);
    const sub = (node as Json)['Fn::Sub'];
    const text = Array.isArray(sub) ? sub[0] : sub;
    if (typeof text === 'string') {
      for (const match of text.matchAll(/\$\{(\w+)(?:\.[\w.]+)?\}/g)) into.add(match[1] ?? '');
    }
    for (const value of Object.values(node)) collectReferences(value, into);
  }
}
