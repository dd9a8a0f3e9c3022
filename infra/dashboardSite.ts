import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  CfnOutput,
  DefaultStackSynthesizer,
  Duration,
  RemovalPolicy,
  Stack,
  Token,
  Validations,
} from 'aws-cdk-lib';
import type * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct, type IConstruct } from 'constructs';
import { SESSION_TOKEN_LIFETIME_SECONDS } from '../shared/timing';
import { DASHBOARD_HEADERS, dashboardContentSecurityPolicy } from '../web/securityHeaders';
import { vendorFiles } from '../web/vendorFiles';
import { apiResponseHeadersPolicy, COMMON_SECURITY_HEADERS } from './responseHeaders';

/** The dashboard's files, deployed as they are (no build step). */
const DASHBOARD_SOURCE = fileURLToPath(new URL('../web/public', import.meta.url));

/** The header that marks a request CloudFront sent the API on a client's behalf. */
export const ORIGIN_VERIFY_HEADER = 'x-origin-verify';

/**
 * A header CloudFront adds to every request it sends the API (ORIGIN_VERIFY_HEADER, its value a secret of the stack):
 * the regional web ACL counts those requests per client at the edge, not per CloudFront address (infra/webAcl.ts).
 */
export interface OriginVerifyHeader {
  name: string;
  value: string;
}

/**
 * The API stage as a CloudFront origin. Built from the RestApi id, not `api.url`, which would depend on the stage
 * (see DashboardSiteProps.stageName).
 */
export function apiStageOrigin(
  api: apigateway.IRestApi,
  stageName: string,
  originVerify: OriginVerifyHeader,
): origins.HttpOrigin {
  const stack = Stack.of(api);
  return new origins.HttpOrigin(`${api.restApiId}.execute-api.${stack.region}.${stack.urlSuffix}`, {
    originPath: `/${stageName}`,
    customHeaders: { [originVerify.name]: originVerify.value },
    protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
    originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
    // CloudFront's most without a quota increase. A capture that sends nothing for longer (a 30 s delay on a slow
    // page) times out here with 504; the API's own URL allows the full capture time.
    readTimeout: Duration.seconds(60),
    // One attempt: CloudFront sends a GET again after that timeout (up to 3 times by default), and a signed link's
    // capture still running would be started twice and charged twice (review of the deployed stack, round 25).
    connectionAttempts: 1,
  });
}

/** How long the distribution's access logs are kept. */
export const ACCESS_LOG_DAYS = 90;

/** OAuth scopes the dashboard asks for; its access token only has to identify the account owner. */
const SCOPES = [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL];

/**
 * Props of {@link DashboardSite}.
 *
 * Wiring in infra/stack.ts, after `this.api` and `this.userPool` exist:
 *
 *   const dashboard = new DashboardSite(this, 'Dashboard', {
 *     api: this.api,
 *     stageName: STAGE_NAME,
 *     userPool: this.userPool,
 *     domainPrefix: settings.dashboardDomainPrefix,
 *     webAclArn: edge.webAclArn,
 *   });
 *
 * The session-token functions must accept this construct's app client (`userPoolClient`): make it the
 * SESSION_CLIENT_ID, or let the verifier accept several client ids. Nothing here depends on the API's deployment or
 * functions, only on the RestApi resource, so a function environment may reference
 * `dashboard.userPoolClient.userPoolClientId` without a dependency cycle (test/infra/dashboardSite.test.ts).
 */
export interface DashboardSiteProps {
  /** The service's REST API. CloudFront sends `/api/*` to it, so the page calls the API on its own origin. */
  api: apigateway.IRestApi;
  /**
   * The API's stage, given as a plain string: reading it from the RestApi would make the distribution depend on
   * the deployment, hence on every function. Default 'prod'.
   */
  stageName?: string;
  /** The user pool account owners sign in to (its hosted sign-in page, OAuth code flow with PKCE). */
  userPool: cognito.IUserPool;
  /**
   * Prefix of the hosted sign-in domain, `https://<prefix>.auth.<region>.amazoncognito.com`: lowercase letters,
   * digits and hyphens, unique in the region across all AWS accounts. A user pool has at most one such domain.
   */
  domainPrefix: string;
  /** A web ACL of scope CLOUDFRONT (created in us-east-1) for the distribution: infra/edgeStack.ts. */
  webAclArn: string;
  /**
   * Where the page points the signed links it builds (the signed-link CDN, `https://…` without a trailing slash):
   * written to config.json, and allowed as an image source so the page can show the link's image. Without it, links
   * point at the dashboard's own origin.
   */
  signedLinkBaseUrl?: string;
  /**
   * The origin of the stored files (`https://<image bucket's regional domain>`): a signed link's large cached image
   * is a redirect there (docs/api.md 15.3), so the page may show images from it too.
   */
  imageFilesOrigin?: string;
  /** Added to every request sent to the API (apiStageOrigin). */
  originVerify: OriginVerifyHeader;
}

/**
 * The account dashboard, deployed: a private S3 bucket of web/public (read only by CloudFront, through origin
 * access control), a CloudFront distribution with the same security headers the local server sends, `/api/*`
 * routed to API Gateway on the same origin (no CORS) with the API's own Content-Security-Policy, a generated
 * `config.json` telling the page to sign in through Cognito, and the app client and hosted sign-in domain that
 * sign-in needs.
 */
export class DashboardSite extends Construct {
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  /** The distribution's access logs (standard logging), kept 90 days. */
  readonly accessLogs: s3.Bucket;
  /** The dashboard's address, `https://<distribution>.cloudfront.net/` (also its OAuth redirect URI). */
  readonly url: string;
  /**
   * The dashboard's public app client (no secret, authorization code grant only). Its id must be one of the
   * client ids the session verifier accepts, or the API refuses the dashboard's tokens with 401.
   */
  readonly userPoolClient: cognito.UserPoolClient;
  readonly signInDomain: cognito.UserPoolDomain;

  constructor(scope: Construct, id: string, props: DashboardSiteProps) {
    super(scope, id);

    this.signInDomain = new cognito.UserPoolDomain(this, 'SignInDomain', {
      userPool: props.userPool,
      cognitoDomain: { domainPrefix: props.domainPrefix },
      // The classic hosted UI needs no branding resource and is available on every feature plan.
      managedLoginVersion: cognito.ManagedLoginVersion.CLASSIC_HOSTED_UI,
    });
    const signInOrigin = this.signInDomain.baseUrl();

    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // Nothing in it that a deploy does not recreate from web/public.
      removalPolicy: RemovalPolicy.DESTROY,
    });

    const securityHeaders = new cloudfront.ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Dashboard: the CSP and headers of web/securityHeaders.ts',
      securityHeadersBehavior: {
        // The token endpoint of the hosted sign-in is the one other origin the page fetches from.
        contentSecurityPolicy: {
          contentSecurityPolicy: dashboardContentSecurityPolicy(
            [signInOrigin],
            [props.signedLinkBaseUrl, props.imageFilesOrigin].filter((origin) => origin !== undefined),
          ),
          override: true,
        },
        ...COMMON_SECURITY_HEADERS,
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
      },
      customHeadersBehavior: {
        customHeaders: ['Cross-Origin-Opener-Policy', 'Permissions-Policy'].map((header) => ({
          header,
          value: DASHBOARD_HEADERS[header] ?? '',
          override: true,
        })),
      },
    });

    const apiOrigin = apiStageOrigin(props.api, props.stageName ?? 'prod', props.originVerify);
    // Not the page's policy: its CSP would replace the `sandbox` the API gives a captured document, which would then
    // run script on this origin. Nothing on this origin is meant to be framed.
    const apiHeaders = apiResponseHeadersPolicy(this, 'ApiSecurityHeaders', {
      comment: "Dashboard /api/*: the API's own Content-Security-Policy, common security headers",
      frameOption: cloudfront.HeadersFrameOption.DENY,
    });

    // CloudFront's standard logging writes with an ACL, so this bucket (unlike the site's) keeps ACLs enabled.
    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.OBJECT_WRITER,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(ACCESS_LOG_DAYS) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Screenshot API dashboard',
      // Cookies stay out of the logs; a line names the path and query, never a header (no Authorization).
      enableLogging: true,
      logBucket: this.accessLogs,
      logFilePrefix: 'cloudfront/',
      logIncludesCookies: false,
      webAclId: props.webAclArn,
      defaultRootObject: 'index.html',
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: securityHeaders,
        compress: true,
      },
      additionalBehaviors: {
        '/api/*': {
          origin: apiOrigin,
          viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
          allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
          // Every answer depends on its credential, and with caching disabled this origin request policy may
          // forward Authorization (and everything else the viewer sent except Host, which API Gateway needs as its own).
          cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
          originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
          responseHeadersPolicy: apiHeaders,
          compress: false,
        },
      },
    });
    this.url = `https://${this.distribution.distributionDomainName}/`;

    this.userPoolClient = new cognito.UserPoolClient(this, 'AppClient', {
      userPool: props.userPool,
      userPoolClientName: 'dashboard',
      // A browser cannot keep a secret: PKCE protects the code instead.
      generateSecret: false,
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: SCOPES,
        callbackUrls: [this.url],
        logoutUrls: [this.url],
      },
      supportedIdentityProviders: [cognito.UserPoolClientIdentityProvider.COGNITO],
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      accessTokenValidity: Duration.seconds(SESSION_TOKEN_LIFETIME_SECONDS),
      idTokenValidity: Duration.seconds(SESSION_TOKEN_LIFETIME_SECONDS),
      // The page keeps no refresh token; the shortest lifetime Cognito allows.
      refreshTokenValidity: Duration.hours(1),
    });

    new s3deploy.BucketDeployment(this, 'Deployment', {
      destinationBucket: this.bucket,
      // Its function's logs, kept a month as every other function's (else a group of its own Lambda keeps forever).
      logGroup: new logs.LogGroup(this, 'DeploymentLogs', { retention: logs.RetentionDays.ONE_MONTH }),
      sources: [
        s3deploy.Source.asset(DASHBOARD_SOURCE),
        // The npm packages' files the page loads, from node_modules (web/vendorFiles.ts).
        ...vendorFiles().map(({ name, path }) => s3deploy.Source.data(name, readFileSync(path, 'utf8'))),
        s3deploy.Source.jsonData('config.json', {
          mode: 'cognito',
          cognito: {
            domain: signInOrigin,
            clientId: this.userPoolClient.userPoolClientId,
            redirectUri: this.url,
            scope: SCOPES.map((scope) => scope.scopeName).join(' '),
          },
          ...(props.signedLinkBaseUrl === undefined ? {} : { signedLinkBaseUrl: props.signedLinkBaseUrl }),
        }),
      ],
      // Files removed from web/public are removed from the bucket; a stack deletion empties it.
      prune: true,
      retainOnDelete: false,
      distribution: this.distribution,
      distributionPaths: ['/*'],
    });

    new CfnOutput(this, 'DashboardUrl', { value: this.url, description: 'The account dashboard' });

    acknowledgeAll(this);
  }
}

/** Why AwsSolutions (cdk-nag) findings on this construct's resources do not apply, next to the resources. */
function acknowledgeAll(site: DashboardSite): void {
  const acknowledge = (scope: IConstruct | undefined, rule: string, reason: string) => {
    if (scope) Validations.of(scope).acknowledge({ id: `AwsSolutions-${rule}`, reason });
  };
  acknowledge(
    site.bucket,
    'S1',
    'The bucket only holds the public dashboard files, written by the deployment and read by CloudFront through ' +
      'origin access control; API requests are logged by API Gateway access logs.',
  );
  acknowledge(
    site.distribution,
    'CFR1',
    'The dashboard is for customers anywhere; the API it calls applies authentication and per-account limits.',
  );
  acknowledge(
    site.accessLogs,
    'S1',
    'The bucket is itself the access-log destination of the distribution; logging its own reads would recurse.',
  );
  acknowledge(
    site.distribution,
    'CFR4',
    'The default *.cloudfront.net certificate cannot set a minimum TLS version; with a custom domain, set ' +
      'TLSv1.2_2021. Viewers are redirected to HTTPS and the API origin is reached over TLS 1.2 only.',
  );
  // BucketDeployment's singleton function and its role live at the stack level, not under this construct. Its grants
  // come from aws-cdk-lib: read the CDK asset bucket, read/write/delete objects of the dashboard bucket, and create
  // invalidations (CloudFront has no resource-level permissions for that on a distribution created here).
  const stack = Stack.of(site);
  const bucketArn = `<${stack.resolve(stack.getLogicalId(site.bucket.node.defaultChild as s3.CfnBucket))}.Arn>`;
  const qualifier = stack.synthesizer.bootstrapQualifier ?? DefaultStackSynthesizer.DEFAULT_QUALIFIER;
  // A stack pinned to an account and region names its asset bucket literally; an agnostic one through pseudo-parameters.
  const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
  const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
  const wildcards = [
    'Action::s3:GetObject*',
    'Action::s3:GetBucket*',
    'Action::s3:List*',
    'Action::s3:DeleteObject*',
    'Action::s3:Abort*',
    `Resource::${bucketArn}/*`,
    `Resource::arn:<AWS::Partition>:s3:::cdk-${qualifier}-assets-${account}-${region}/*`,
    'Resource::*',
  ];
  for (const child of stack.node.children) {
    if (!child.node.id.startsWith('Custom::CDKBucketDeployment')) continue;
    acknowledge(
      child,
      'L1',
      'The runtime of the CDK-managed BucketDeployment handler is chosen by aws-cdk-lib.',
    );
    acknowledge(
      child,
      'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'The CDK-managed BucketDeployment handler role uses the AWS-managed basic execution policy for its logs.',
    );
    for (const finding of wildcards) {
      acknowledge(
        child,
        `IAM5[${finding}]`,
        'Generated by BucketDeployment: object-level access to the CDK asset bucket and the dashboard bucket only, ' +
          'and CloudFront invalidations after each deploy.',
      );
    }
  }
}
