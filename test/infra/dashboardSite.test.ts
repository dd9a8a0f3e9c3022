import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardSite } from '../../infra/dashboardSite';
import { dashboardContentSecurityPolicy } from '../../web/securityHeaders';
import { vendorFiles } from '../../web/vendorFiles';
import { dependencyCycle } from './synth';

/**
 * The dashboard construct in a small stack shaped like the service's: a user pool, a RestApi whose method calls a
 * function, and that function accepting the dashboard's app client id, as the real stack must (the wiring the
 * construct documents). Synthesised once, offline (BucketDeployment needs no Docker), with cdk-nag's AwsSolutions
 * checks as the real app runs them.
 */
const CACHING_DISABLED = '4135ea2d-6df8-44a3-9df3-4b5a84be39ad';
const ALL_VIEWER_EXCEPT_HOST_HEADER = 'b689b0a8-53d0-40ab-baf2-68738e2966ac';
const WEB_ACL_ARN = 'arn:aws:wafv2:us-east-1:111111111111:global/webacl/dashboard/0123abcd';

function serviceLikeStack(app: App) {
  const stack = new Stack(app, 'Service');
  const userPool = new cognito.UserPool(stack, 'UserPool');
  const fn = new lambda.Function(stack, 'ListKeysFunction', {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async () => ({ statusCode: 200, body: "{}" });'),
  });
  const api = new apigateway.RestApi(stack, 'Api', { deployOptions: { stageName: 'prod' } });
  api.root.resourceForPath('/api/keys').addMethod('GET', new apigateway.LambdaIntegration(fn));
  const site = new DashboardSite(stack, 'Dashboard', {
    api,
    stageName: 'prod',
    userPool,
    domainPrefix: 'shots-test',
    webAclArn: WEB_ACL_ARN,
    originVerify: { name: 'x-origin-verify', value: 'test-origin-secret' },
  });
  fn.addEnvironment('SESSION_CLIENT_ID', site.userPoolClient.userPoolClientId);
  return { stack, site, api };
}

/** Findings on the stand-ins, which are not under test; the construct's own must all be acknowledged in it. */
const STAND_IN_FINDINGS = [
  'COG1',
  'COG2',
  'COG4',
  'COG8',
  'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
  'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
  'L1',
  'APIG1',
  'APIG2',
  'APIG3',
  'APIG4',
  'APIG6',
];

let stack: Stack;
let site: DashboardSite;
let api: apigateway.RestApi;
let template: Template;
let outdir: string;
/** What synthesis threw: cdk-nag stops it on any finding nobody acknowledged. */
let synthError: unknown;

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'dashboard-site-'));
  const app = new App({ outdir });
  ({ stack, site, api } = serviceLikeStack(app));
  for (const standIn of [stack.node.findChild('UserPool'), stack.node.findChild('ListKeysFunction'), api]) {
    for (const id of STAND_IN_FINDINGS) {
      Validations.of(standIn).acknowledge({ id: `AwsSolutions-${id}`, reason: 'A stand-in, not under test' });
    }
  }
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch (error) {
    synthError = error;
  }
  // Written before validation runs, so the assertions below work even when cdk-nag objected.
  template = Template.fromJSON(
    JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), 'utf8')),
  );
});

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
  stack.resolve(stack.getLogicalId(construct.node.defaultChild as never)) as string;

/** The response headers policy a behavior refers to, by its `Ref`. */
function policyOf(behavior: { ResponseHeadersPolicyId?: { Ref?: string } }) {
  const id = behavior.ResponseHeadersPolicyId?.Ref ?? '';
  return template.findResources('AWS::CloudFront::ResponseHeadersPolicy')[id]?.Properties
    .ResponseHeadersPolicyConfig;
}

function distributionConfig() {
  const [distribution] = Object.values(template.findResources('AWS::CloudFront::Distribution'));
  return distribution?.Properties.DistributionConfig;
}

describe('the dashboard bucket', () => {
  it('is private: public access blocked, objects owned by the bucket, encrypted, TLS only', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      BucketEncryption: Match.objectLike({}),
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('can be read by this distribution only, through origin access control', () => {
    template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 's3:GetObject',
            Principal: { Service: 'cloudfront.amazonaws.com' },
            Condition: {
              StringEquals: { 'AWS:SourceArn': Match.anyValue() },
            },
          }),
        ]),
      },
    });
  });
});

describe('the dashboard distribution', () => {
  it('is guarded by the given web ACL', () => {
    expect(distributionConfig().WebACLId).toBe(WEB_ACL_ARN);
  });

  it('serves index.html at / and redirects plain HTTP to HTTPS', () => {
    const config = distributionConfig();
    expect(config.DefaultRootObject).toBe('index.html');
    expect(config.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('redirect-to-https');
    expect(config.DefaultCacheBehavior.AllowedMethods).toEqual(['GET', 'HEAD']);
  });

  it('routes /api/* to the API stage over HTTPS, uncached, with the viewer headers but Host', () => {
    const config = distributionConfig();
    const [behavior] = config.CacheBehaviors;
    expect(config.CacheBehaviors).toHaveLength(1);
    expect(behavior).toMatchObject({
      PathPattern: '/api/*',
      ViewerProtocolPolicy: 'https-only',
      CachePolicyId: CACHING_DISABLED,
      OriginRequestPolicyId: ALL_VIEWER_EXCEPT_HOST_HEADER,
    });
    expect(behavior.AllowedMethods).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'DELETE']));
    const origin = config.Origins.find((o: { Id: string }) => o.Id === behavior.TargetOriginId);
    expect(origin.OriginPath).toBe('/prod');
    expect(origin.CustomOriginConfig).toMatchObject({
      OriginProtocolPolicy: 'https-only',
      OriginReadTimeout: 60,
    });
    expect(JSON.stringify(origin.DomainName)).toContain(logicalId(api));
  });

  it('sends the Content-Security-Policy the local server sends, allowing the sign-in domain for fetch', () => {
    template.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: Match.objectLike({
        SecurityHeadersConfig: Match.objectLike({
          ContentSecurityPolicy: {
            ContentSecurityPolicy: stack.resolve(
              dashboardContentSecurityPolicy([site.signInDomain.baseUrl()]),
            ),
            Override: true,
          },
          ContentTypeOptions: { Override: true },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
          StrictTransportSecurity: Match.objectLike({ AccessControlMaxAgeSec: 31_536_000, Override: true }),
        }),
      }),
    });
  });

  it("sends the page's Content-Security-Policy with the files, over whatever S3 says", () => {
    const files = policyOf(distributionConfig().DefaultCacheBehavior);
    expect(files.SecurityHeadersConfig.ContentSecurityPolicy).toMatchObject({ Override: true });
    expect(JSON.stringify(files.SecurityHeadersConfig.ContentSecurityPolicy)).toContain("script-src 'self'");
  });

  it("leaves the API's answers their own Content-Security-Policy (the sandbox of a captured document)", () => {
    const config = distributionConfig();
    const [api] = config.CacheBehaviors;
    expect(api.ResponseHeadersPolicyId).not.toEqual(config.DefaultCacheBehavior.ResponseHeadersPolicyId);
    const policy = policyOf(api);
    // Neither replaced nor added: CloudFront passes the origin's header as it is.
    expect(policy.SecurityHeadersConfig.ContentSecurityPolicy).toBeUndefined();
    expect(policy.CustomHeadersConfig).toBeUndefined();
    expect(policy.RemoveHeadersConfig).toBeUndefined();
    expect(policy.SecurityHeadersConfig).toEqual({
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
      StrictTransportSecurity: {
        AccessControlMaxAgeSec: 31_536_000,
        IncludeSubdomains: true,
        Override: true,
      },
    });
  });

  it('outputs the dashboard URL', () => {
    const outputs = Object.values(template.findOutputs('*'));
    expect(outputs).toContainEqual(
      expect.objectContaining({
        Description: 'The account dashboard',
        Value: {
          'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalId(site.distribution), 'DomainName'] }, '/']],
        },
      }),
    );
  });
});

describe('the deployment of the files', () => {
  it('copies web/public, the vendor files and a generated config.json, prunes old files and invalidates the cache', () => {
    template.hasResourceProperties('Custom::CDKBucketDeployment', {
      SourceObjectKeys: Array(2 + vendorFiles().length).fill(Match.anyValue()),
      Prune: true,
      RetainOnDelete: false,
      DistributionPaths: ['/*'],
      DestinationBucketName: { Ref: logicalId(site.bucket) },
    });
  });

  it('fills config.json with the hosted sign-in domain, the app client and the dashboard URL', () => {
    const [deployment] = Object.values(template.findResources('Custom::CDKBucketDeployment'));
    const markers = JSON.stringify(deployment?.Properties.SourceMarkers);
    expect(markers).toContain(logicalId(site.userPoolClient));
    expect(markers).toContain(logicalId(site.distribution));
    expect(markers).toContain(logicalId(site.signInDomain));
  });
});

describe('the sign-in for the dashboard', () => {
  it('is a public app client with the authorization code flow, returning to the dashboard only', () => {
    const dashboardUrl = {
      'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [logicalId(site.distribution), 'DomainName'] }, '/']],
    };
    template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: false,
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthScopes: ['openid', 'email'],
      CallbackURLs: [dashboardUrl],
      LogoutURLs: [dashboardUrl],
      SupportedIdentityProviders: ['COGNITO'],
      PreventUserExistenceErrors: 'ENABLED',
    });
  });

  it('has a hosted sign-in domain with the given prefix on the classic hosted UI', () => {
    template.hasResourceProperties('AWS::Cognito::UserPoolDomain', {
      Domain: 'shots-test',
      ManagedLoginVersion: 1,
    });
  });
});

describe('the construct in a stack', () => {
  it('finds cycles with the check used below', () => {
    expect(
      dependencyCycle({
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub placeholder, not JavaScript
        A: { Type: 'T', Properties: { X: { 'Fn::Sub': 'arn:${B.Arn}' } } },
        B: { Type: 'T', Properties: {}, DependsOn: 'A' },
      }),
    ).toEqual(['A', 'B', 'A']);
  });

  it('leaves no dependency cycle when the functions accept the dashboard app client', () => {
    expect(dependencyCycle(template.toJSON().Resources)).toBeUndefined();
  });

  it('passes the AWS Solutions checks (cdk-nag) for everything it creates', () => {
    const report = synthError ? readFileSync(join(outdir, 'validation-report.json'), 'utf8') : '';
    expect(synthError, report).toBeUndefined();
  });
});
