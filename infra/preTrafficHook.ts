import path from 'node:path';
import { Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { functionBundling } from './functionBundling';

export interface PreTrafficHookProps {
  projectRoot: string;
  runtime: lambda.Runtime;
  architecture: lambda.Architecture;
  /** The screenshot function's version being deployed. */
  version: lambda.IVersion;
  /** A page we own that the new version must capture: the dashboard's. */
  knownPageUrl: string;
}

/**
 * The CodeDeploy BeforeAllowTraffic hook of the screenshot function (shared/rollout/preTrafficHook.ts): a small
 * function without Chromium that invokes the new version with a self-test and fails the deployment if the known page
 * does not capture. Its only grants: invoke that version, and report to CodeDeploy (added by the deployment group).
 */
export class PreTrafficHook extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, props: PreTrafficHookProps) {
    super(scope, id);
    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH });
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Pre-traffic check of the screenshot function',
    });
    logGroup.grantWrite(role);
    this.fn = new NodejsFunction(this, 'Function', {
      entry: path.join(props.projectRoot, 'functions', 'preTrafficHook.ts'),
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: path.join(props.projectRoot, 'package-lock.json'),
      description: 'CodeDeploy pre-traffic check: the new screenshot version captures a known page',
      runtime: props.runtime,
      architecture: props.architecture,
      memorySize: 256,
      // The self-test's 30 s budget, a cold start of the front and of the renderer with its browser, and the report.
      timeout: Duration.minutes(2),
      environment: {
        FUNCTION_VERSION_ARN: props.version.functionArn,
        KNOWN_PAGE_URL: props.knownPageUrl,
      },
      role,
      logGroup,
      bundling: functionBundling(false),
    });
    props.version.grantInvoke(this.fn);
  }
}
