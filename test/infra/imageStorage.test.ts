import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { CACHE_EXPIRY_DAYS, ImageStorage, LINKED_EXPIRY_DAYS } from '../../infra/imageStorage';
import {
  EXPIRY_DAYS,
  EXPIRY_TAG,
  expiryDays,
  IMAGE_KINDS,
  IMAGE_PREFIX,
} from '../../shared/delivery/imageStore';
import { CACHE_TTL } from '../../shared/screenshot/schema';
import { type Json, ofType } from './synth';

/**
 * The delivery storage on its own, beside two stand-in functions: no bundling, so it synthesizes in milliseconds.
 * test/infra/stack.test.ts checks the whole stack (cdk-nag included) with it in place.
 */

let stack: Stack;
let template: Template;
let storage: ImageStorage;
let screenshot: lambda.Function;
let mcp: lambda.Function;
let createKey: lambda.Function;
let webhooks: lambda.Function;
/** Signing secrets are sealed under their key id: the grants on them name that context. */
const ONLY_SIGNING_SECRETS = { StringLike: { 'kms:EncryptionContext:keyId': 'key_*' } };

beforeAll(() => {
  stack = new Stack(new App(), 'ImageStorageTest');
  const stub = (id: string) =>
    new lambda.Function(stack, id, {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('export const handler = async () => undefined;'),
    });
  screenshot = stub('Screenshot');
  mcp = stub('Mcp');
  createKey = stub('CreateKey');
  webhooks = stub('Webhooks');
  storage = new ImageStorage(stack, 'ImageStorage', { screenshot, mcp, createKey });
  storage.grantSealed(webhooks, 'webhookSecrets', ['kms:Encrypt', 'kms:Decrypt']);
  template = Template.fromStack(stack);
});

const idOf = (construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never);

/** Every policy statement attached to the function's role. */
function statementsOf(fn: lambda.Function): Json[] {
  const roleId = idOf(fn.role as never);
  return ofType(template.toJSON().Resources, 'AWS::IAM::Policy')
    .filter(([, policy]) => JSON.stringify(policy.Properties.Roles).includes(roleId))
    .flatMap(([, policy]) => (policy.Properties.PolicyDocument as { Statement: Json[] }).Statement);
}

describe('the image bucket', () => {
  it('is private, encrypted, TLS-only and logged', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LoggingConfiguration: { DestinationBucketName: { Ref: idOf(storage.accessLogs) } },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: idOf(storage.bucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('expires cache entries after the longest TTL and linked images after their link', () => {
    expect(CACHE_EXPIRY_DAYS * 86_400).toBeGreaterThan(CACHE_TTL.max);
    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Prefix: IMAGE_KINDS.cache,
            ExpirationInDays: CACHE_EXPIRY_DAYS,
            Status: 'Enabled',
          }),
          Match.objectLike({
            Prefix: IMAGE_KINDS.linked,
            ExpirationInDays: LINKED_EXPIRY_DAYS,
            Status: 'Enabled',
          }),
        ]),
      },
    });
  });
});

describe("expiry by each object's own cacheTtl", () => {
  it('has a lifecycle rule per expiry tag value, over every stored image', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith(
          EXPIRY_DAYS.map((days) =>
            Match.objectLike({
              Prefix: IMAGE_PREFIX,
              TagFilters: [{ Key: EXPIRY_TAG, Value: String(days) }],
              ExpirationInDays: days,
              Status: 'Enabled',
            }),
          ),
        ),
      },
    });
  });

  it('removes no image sooner than the shortest class (a hit links to a copy written up to that long ago)', () => {
    const images = Object.values(template.findResources('AWS::S3::Bucket')).find((bucket) =>
      bucket.Properties?.LifecycleConfiguration?.Rules?.some(
        (rule: { Id?: string }) => rule.Id === 'LinkedImages',
      ),
    );
    const rules: { ExpirationInDays?: number }[] = images?.Properties.LifecycleConfiguration.Rules ?? [];
    const expirations = rules.map((rule) => rule.ExpirationInDays).filter((days) => days !== undefined);
    expect(expirations.length).toBeGreaterThan(EXPIRY_DAYS.length);
    expect(Math.min(...expirations)).toBe(EXPIRY_DAYS[0]);
  });

  it('tags an object with the first class that outlives its cacheTtl by a day', () => {
    const day = 86_400_000;
    expect(expiryDays(0, CACHE_TTL.min * 1000)).toBe(2);
    expect(expiryDays(0, CACHE_TTL.default * 1000)).toBe(2);
    expect(expiryDays(0, day + 1)).toBe(8);
    expect(expiryDays(0, 7 * day)).toBe(8);
    expect(expiryDays(0, 7 * day + 1)).toBe(31);
    expect(expiryDays(0, CACHE_TTL.max * 1000)).toBe(31);
    expect(Math.max(...EXPIRY_DAYS)).toBeLessThanOrEqual(CACHE_EXPIRY_DAYS);
  });
});

describe('least privilege', () => {
  /** A front's object grant: the cache and the linked images, never a job's result nor the whole prefix. */
  function expectFrontObjects(statements: Json[]) {
    const objects = statements.find((statement) => [statement.Action].flat().includes('s3:GetObject'));
    const resources = JSON.stringify(objects?.Resource);
    expect(resources).toContain(`/${IMAGE_KINDS.cache}*`);
    expect(resources).toContain(`/${IMAGE_KINDS.linked}*`);
    expect(resources).not.toContain(`/${IMAGE_KINDS.job}`);
    expect(resources).not.toContain('/images/*');
  }

  it("lets the screenshot function read and write the cache and linked images only (never a job's result), and decrypt with the key", () => {
    const statements = statementsOf(screenshot);
    const actions = statements.flatMap((statement) => [statement.Action].flat());
    expect(actions.sort()).toEqual([
      'kms:Decrypt',
      's3:GetObject',
      's3:ListBucket',
      's3:PutObject',
      's3:PutObjectTagging',
    ]);
    expectFrontObjects(statements);
    const kms = statements.find((statement) => statement.Action === 'kms:Decrypt');
    expect(kms?.Resource).toEqual({ 'Fn::GetAtt': [idOf(storage.signingKey), 'Arn'] });
    expect(kms?.Condition).toEqual(ONLY_SIGNING_SECRETS);
  });

  it('lets the MCP front store and read the same images (its tools answer with links), without the key', () => {
    const statements = statementsOf(mcp);
    const actions = statements.flatMap((statement) => [statement.Action].flat());
    expect(actions.sort()).toEqual(['s3:GetObject', 's3:ListBucket', 's3:PutObject', 's3:PutObjectTagging']);
    expectFrontObjects(statements);
  });

  it('lets key creation only encrypt with the key', () => {
    const statements = statementsOf(createKey);
    expect(statements).toEqual([
      expect.objectContaining({
        Action: 'kms:Encrypt',
        Resource: { 'Fn::GetAtt': [idOf(storage.signingKey), 'Arn'] },
        Condition: ONLY_SIGNING_SECRETS,
      }),
    ]);
  });

  it('lets a function given webhook secrets seal and open those only, and tells it the key', () => {
    const statements = statementsOf(webhooks);
    expect(statements).toEqual([
      expect.objectContaining({
        Action: ['kms:Encrypt', 'kms:Decrypt'],
        Resource: { 'Fn::GetAtt': [idOf(storage.signingKey), 'Arn'] },
        Condition: { StringLike: { 'kms:EncryptionContext:keyId': 'webhook-secret:*' } },
      }),
    ]);
    const variables = template.toJSON().Resources[idOf(webhooks)].Properties.Environment.Variables;
    expect(variables).toEqual({ SIGNING_KMS_KEY_ID: { 'Fn::GetAtt': [idOf(storage.signingKey), 'Arn'] } });
  });

  it('rotates the key and keeps it when the stack goes', () => {
    template.hasResource('AWS::KMS::Key', {
      Properties: Match.objectLike({ EnableKeyRotation: true }),
      DeletionPolicy: 'Retain',
    });
  });

  it('tells each function where its storage is', () => {
    const variables = (fn: lambda.Function) =>
      ((template.toJSON().Resources[idOf(fn)].Properties.Environment ?? {}) as Json).Variables as Json;
    expect(variables(screenshot)).toEqual({
      IMAGE_BUCKET: { Ref: idOf(storage.bucket) },
      SIGNING_KMS_KEY_ID: { 'Fn::GetAtt': [idOf(storage.signingKey), 'Arn'] },
    });
    expect(variables(mcp)).toEqual({ IMAGE_BUCKET: { Ref: idOf(storage.bucket) } });
    expect(variables(createKey)).toEqual({
      SIGNING_KMS_KEY_ID: { 'Fn::GetAtt': [idOf(storage.signingKey), 'Arn'] },
    });
  });
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the storage', () => {
    const report = new AwsSolutionsChecks().validateScope(storage);
    const findings = report.violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
    );
    expect(findings).toEqual([]);
  });
});
