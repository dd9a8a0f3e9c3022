import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Size, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct, IConstruct } from 'constructs';
import { ROUTES, type RouteDefinition } from '../shared/routes';
import { TABLE_SCHEMA } from '../shared/store/table';
import { captureAssetHooks } from './captureAssets';
import { CHROMIUM_PACKAGE, ChromiumLayer } from './chromiumLayer';
import { DashboardSite } from './dashboardSite';
import type { DeploymentSettings } from './settings';
import { TABLE_ACTIONS } from './tableAccess';

/** The repository root: functions/, shared/, package-lock.json and node_modules/ live here. */
export const PROJECT_ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

/** nodejs22.x: the AWS SDK's supported line beyond 2026 (environment.md), and what the tests run against. */
export const RUNTIME = lambda.Runtime.NODEJS_22_X;
/** The @sparticuz/chromium npm package ships only the x86_64 browser (bin/chromium.br); arm64 would not start. */
export const ARCHITECTURE = lambda.Architecture.X86_64;

/**
 * The screenshot function's size. Lambda gives CPU in proportion to memory (one vCPU at 1,769 MB), and Chromium
 * renders, rasterises and encodes on several threads: at 3,008 MB it gets about 1.7 vCPUs and room for the largest
 * bitmap the spec allows (3,840 x 16,384 px full page is ~250 MB raw, held more than once while encoding). 3,008 MB
 * is also the most a new account may configure without a quota increase, so the stack deploys everywhere.
 */
export const SCREENSHOT_MEMORY_MB = 3008;
/**
 * 90 s: the spec's longest delay (30 s) comes after the page's load event, which itself may take up to the
 * navigation timeout, plus the browser's first-start unpack (~1.5 s), a large full-page encode and the DynamoDB
 * writes before and after. The local server gives captures the same 90 s (local/httpAdapter.ts).
 */
export const SCREENSHOT_TIMEOUT = Duration.seconds(90);
/**
 * API Gateway's wait for the streamed response: the function's timeout plus Lambda's up-to-10 s init phase, which
 * the function timeout does not count. Streaming (STREAM transfer mode) allows up to 15 minutes; buffered routes
 * stay at the default 29 s.
 */
export const SCREENSHOT_INTEGRATION_TIMEOUT = Duration.seconds(100);
/** Key-management functions: a JWKS fetch on a cold start and a handful of single-item DynamoDB calls. */
export const MANAGEMENT_MEMORY_MB = 512;
export const MANAGEMENT_TIMEOUT = Duration.seconds(10);

const STAGE_NAME = 'prod';

export interface ScreenshotServiceStackProps extends StackProps {
  settings: DeploymentSettings;
}

/**
 * The whole service: API Gateway REST (one Lambda per route in shared/routes.ts), one DynamoDB table, a Cognito
 * user pool for session tokens, the Chromium layer, the account dashboard (infra/dashboardSite.ts), logs, alarms
 * and their topic.
 */
export class ScreenshotServiceStack extends Stack {
  readonly api: apigateway.RestApi;
  readonly table: dynamodb.Table;
  readonly userPool: cognito.UserPool;
  /** The client whose access tokens the functions accept (the dashboard's, also used by the CLI). */
  readonly userPoolClient: cognito.UserPoolClient;
  readonly dashboard: DashboardSite;
  readonly functions: ReadonlyMap<RouteDefinition['handler'], NodejsFunction>;

  constructor(scope: Construct, id: string, props: ScreenshotServiceStackProps) {
    super(scope, id, props);
    const { settings } = props;

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.sortKey, type: dynamodb.AttributeType.STRING },
      // Rate-limit windows expire by themselves (docs/data-model.md); no other item carries the attribute.
      timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      // The table holds customers' credits and keys: neither a stack deletion nor a console click may drop it.
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.userPool = new cognito.UserPool(this, 'UserPool', {
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
      mfa: cognito.Mfa.OPTIONAL,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
      featurePlan: cognito.FeaturePlan.ESSENTIALS,
      // A user's `sub` is their account id in the table: recreating the pool would orphan every account.
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    acknowledge(
      this.userPool,
      'COG2',
      'MFA is optional (TOTP) rather than required so an operator can get an access token with ' +
        '`aws cognito-idp initiate-auth` (docs/deploy.md); users are created by operators only, never self sign-up.',
    );
    acknowledge(
      this.userPool,
      'COG8',
      'Threat protection needs the Cognito Plus feature plan, billed per monthly active user; the pool has no ' +
        'self sign-up and tokens only manage API keys, so the cost is not justified by default.',
    );

    this.api = this.createRestApi(settings);

    // The dashboard (S3 + CloudFront, Cognito hosted sign-in) calls the API on its own origin.
    this.dashboard = new DashboardSite(this, 'Dashboard', {
      api: this.api,
      stageName: STAGE_NAME,
      userPool: this.userPool,
      domainPrefix: settings.dashboardDomainPrefix ?? `screenshots-${this.account}`,
    });
    // One public app client for every sign-in: the dashboard's code flow (hosted sign-in, PKCE) and, added here, the
    // operator's CLI (USER_PASSWORD_AUTH) and SRP. The session verifier accepts one client id (shared/config.ts), so
    // tokens from both kinds of sign-in must come from this one client.
    this.userPoolClient = this.dashboard.userPoolClient;
    const cfnClient = this.userPoolClient.node.defaultChild as cognito.CfnUserPoolClient;
    cfnClient.explicitAuthFlows = [
      'ALLOW_USER_PASSWORD_AUTH',
      'ALLOW_USER_SRP_AUTH',
      'ALLOW_REFRESH_TOKEN_AUTH',
    ];

    // Exactly what aws-jwt-verify compares against the token's `iss` (shared/auth/sessionVerifier.ts).
    const issuer = `https://cognito-idp.${this.region}.${this.urlSuffix}/${this.userPool.userPoolId}`;
    const environment: Record<string, string> = {
      TABLE_NAME: this.table.tableName,
      RATE_LIMIT_PER_HOUR: String(settings.rateLimitPerHour),
      FREE_CREDITS: String(settings.freeCredits),
      SESSION_ISSUER: issuer,
      SESSION_CLIENT_ID: this.userPoolClient.userPoolClientId,
      SESSION_JWKS_URI: `${issuer}/.well-known/jwks.json`,
      // Stack traces point at the TypeScript sources, not the minified bundle.
      NODE_OPTIONS: '--enable-source-maps',
      // ALLOW_PRIVATE_HOSTS is deliberately absent: a deployment refuses every private address (decisions.md).
    };

    const chromium = new ChromiumLayer(this, 'Chromium', {
      projectRoot: PROJECT_ROOT,
      runtime: RUNTIME,
      architecture: ARCHITECTURE,
    });

    const functions = new Map<RouteDefinition['handler'], NodejsFunction>();
    for (const route of ROUTES) {
      functions.set(route.handler, this.routeFunction(route, environment, chromium.layer));
    }
    this.functions = functions;

    const alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'Screenshot service alarms',
      enforceSSL: true,
    });
    if (settings.alarmEmail)
      alarmTopic.addSubscription(new snsSubscriptions.EmailSubscription(settings.alarmEmail));

    this.addRoutes(functions);
    this.alarms(functions, alarmTopic);

    const baseUrl = `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${STAGE_NAME}`;
    new CfnOutput(this, 'ApiUrl', { value: baseUrl, description: 'Base URL: POST <ApiUrl>/api/screenshot' });
    new CfnOutput(this, 'UserPoolId', { value: this.userPool.userPoolId, description: 'Cognito user pool' });
    new CfnOutput(this, 'UserPoolClientId', {
      value: this.userPoolClient.userPoolClientId,
      description: 'App client of the dashboard and of initiate-auth (USER_PASSWORD_AUTH)',
    });
    new CfnOutput(this, 'TableName', {
      value: this.table.tableName,
      description: 'TABLE_NAME for npm run credits',
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: alarmTopic.topicArn,
      description: 'Subscribe to get alarms',
    });
  }

  /** One function per route: its own role, log group and table grant. */
  private routeFunction(
    route: RouteDefinition,
    environment: Record<string, string>,
    chromiumLayer: lambda.ILayerVersion,
  ): NodejsFunction {
    const id = route.handler.charAt(0).toUpperCase() + route.handler.slice(1);
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
      // Chromium unpacks itself (~250 MB with fonts and libraries) into /tmp and keeps a disk cache there.
      ...(isScreenshot ? { ephemeralStorageSize: Size.mebibytes(1024) } : {}),
      layers: isScreenshot ? [chromiumLayer] : [],
      environment,
      role,
      logGroup,
      tracing: lambda.Tracing.ACTIVE,
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        logLevel: LogLevel.WARNING,
        // Bundled CommonJS dependencies call require(); ESM output has none unless the banner provides it.
        banner:
          "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
        // Everything is bundled, including the AWS SDK (the exact version the tests ran, not the runtime's copy),
        // except the Chromium package, which the layer provides.
        externalModules: isScreenshot ? [CHROMIUM_PACKAGE] : [],
        ...(isScreenshot ? { commandHooks: captureAssetHooks } : {}),
      },
    });
    acknowledge(
      fn,
      'L1',
      `${RUNTIME.name} on purpose: the closest Lambda runtime to the Node 20 the project is tested on, and one the AWS ` +
        'SDK supports past 2026 (environment.md). nodejs24.x changes handler semantics and has not been exercised ' +
        'with the pinned @sparticuz/chromium and puppeteer-core; move all routes together once it has.',
    );
    return fn;
  }

  /** The REST API and its stage, without routes: the dashboard needs the API before the functions exist. */
  private createRestApi(settings: DeploymentSettings): apigateway.RestApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: logs.RetentionDays.THREE_MONTHS,
    });
    const streamingRoutes = ROUTES.filter((route) => route.streaming);

    const api = new apigateway.RestApi(this, 'Api', {
      restApiName: `${this.stackName}-api`,
      description: 'Screenshot capture service',
      // Regional, not edge-optimized: an edge endpoint cuts a stream that is idle for 30 s, and a capture with the
      // spec's 30 s delay sends nothing until the image is ready. Regional allows 5 minutes of idle stream.
      endpointConfiguration: { types: [apigateway.EndpointType.REGIONAL] },
      // Execution logs (errors only) need the account-level CloudWatch role. It is retained on stack deletion
      // because it is a per-region account setting other APIs may rely on.
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: STAGE_NAME,
        throttlingRateLimit: settings.apiRateLimit,
        throttlingBurstLimit: settings.apiBurstLimit,
        methodOptions: Object.fromEntries(
          streamingRoutes.map((route) => [
            `${route.path}/${route.method}`,
            {
              throttlingRateLimit: settings.screenshotRateLimit,
              throttlingBurstLimit: settings.screenshotBurstLimit,
              // A method override replaces the stage defaults, so logging is restated here.
              loggingLevel: apigateway.MethodLoggingLevel.ERROR,
              dataTraceEnabled: false,
            },
          ]),
        ),
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

    // Errors API Gateway answers itself keep the API's JSON shape: `{ "message": ... }` (decisions.md).
    const jsonMessage = { 'application/json': '{"message":$context.error.messageString}' };
    api.addGatewayResponse('Default4xx', {
      type: apigateway.ResponseType.DEFAULT_4XX,
      templates: jsonMessage,
    });
    api.addGatewayResponse('Default5xx', {
      type: apigateway.ResponseType.DEFAULT_5XX,
      templates: jsonMessage,
    });
    // No method uses IAM auth, so "Missing Authentication Token" only ever means "no such route": say so, with 404.
    api.addGatewayResponse('UnknownRoute', {
      type: apigateway.ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: '404',
      templates: { 'application/json': '{"message":"Not found: no route for this method and path"}' },
    });

    acknowledge(
      api,
      'APIG2',
      'Every handler validates its request with zod and answers 400 with the details the spec defines; a gateway ' +
        'validator would answer in a different shape first.',
    );
    acknowledge(
      api,
      'APIG3',
      'No WAF by default: stage and method throttling cap floods and every request is authenticated and rate limited ' +
        'per account in the handler. An operator can associate a web ACL with the stage without changing the stack.',
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

  /** One method per route, each integrated with its own function; the screenshot route streams. */
  private addRoutes(functions: ReadonlyMap<RouteDefinition['handler'], NodejsFunction>): void {
    for (const route of ROUTES) {
      const fn = functions.get(route.handler);
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

  private alarms(
    functions: ReadonlyMap<RouteDefinition['handler'], NodejsFunction>,
    topic: sns.ITopic,
  ): void {
    const action = new cloudwatchActions.SnsAction(topic);
    const stage = this.api.deploymentStage;
    const fiveMinutes = Duration.minutes(5);

    // Share of requests answered 5xx, once there are enough requests for a share to mean something.
    const serverErrorRate = new cloudwatch.MathExpression({
      label: '5xx share of requests',
      expression: 'IF(requests >= 20, errors / requests, 0)',
      usingMetrics: {
        errors: stage.metricServerError({ period: fiveMinutes, statistic: 'Sum' }),
        requests: stage.metricCount({ period: fiveMinutes, statistic: 'Sum' }),
      },
      period: fiveMinutes,
    });
    serverErrorRate
      .createAlarm(this, 'ServerErrorRateAlarm', {
        alarmDescription: 'More than 5% of API requests answered 5xx (twice in 15 minutes).',
        threshold: 0.05,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })
      .addAlarmAction(action);

    const screenshot = functions.get('screenshot');
    if (screenshot) {
      // A legitimate capture takes at most the 30 s delay plus the page's load; p90 above 60 s means captures are
      // heading for the 90 s timeout (slow pages, starved CPU, a struggling browser).
      screenshot
        .metricDuration({ period: fiveMinutes, statistic: 'p90' })
        .createAlarm(this, 'ScreenshotLatencyAlarm', {
          alarmDescription: 'Screenshot function p90 duration above 60 s for 15 minutes.',
          threshold: 60_000,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 3,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        })
        .addAlarmAction(action);
    }

    // Crashes and timeouts of any route's function (handled errors are answered, not thrown, so they do not count).
    const errorMetrics = Object.fromEntries(
      [...functions.values()].map((fn, index) => [
        `e${index}`,
        fn.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
      ]),
    );
    new cloudwatch.MathExpression({
      label: 'Function errors',
      // FILL: a function nobody called has no datapoints, which would otherwise blank the whole sum.
      expression: Object.keys(errorMetrics)
        .map((id) => `FILL(${id}, 0)`)
        .join(' + '),
      usingMetrics: errorMetrics,
      period: fiveMinutes,
    })
      .createAlarm(this, 'FunctionErrorsAlarm', {
        alarmDescription: 'Five or more Lambda invocation errors (crashes, timeouts) in 5 minutes.',
        threshold: 5,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })
      .addAlarmAction(action);
  }
}

/**
 * Why no route uses an API Gateway authorizer (cdk-nag APIG4, COG4): the handlers authenticate, and answer 401 in the
 * API's own shape, which an authorizer's rejection would not.
 */
const GATEWAY_AUTH_REASON: Record<RouteDefinition['auth'], string> = {
  apiKey:
    'The handler authenticates the API key (SHA-256 lookup in DynamoDB, revocation effective on the next request) ' +
    'and answers 401 in the spec shape; neither IAM nor a Cognito authorizer can check these keys.',
  session:
    'The handler verifies the Cognito access token with aws-jwt-verify (signature, expiry, issuer, token_use, ' +
    'client_id) and answers 401 as { message }; a gateway authorizer would duplicate that with another error shape.',
  none: 'The API description (OpenAPI document) is public on purpose, like any paid API reference; it holds no data.',
};

/** Records why an AwsSolutions (cdk-nag) rule does not apply to a construct, next to the construct itself. */
function acknowledge(scope: IConstruct, rule: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${rule}`, reason });
}
