import path from 'node:path';
import { Duration, Size, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { SCREENSHOT_FUNCTION_TIMEOUT_MS } from '../shared/timing';
import { captureAssetHooks } from './captureAssets';
import { CHROMIUM_PACKAGE } from './chromiumLayer';
import { SHARP_PACKAGE } from './encoderAssets';
import { functionBundling, sourceMapEnvironment } from './functionBundling';

/**
 * The renderer's size. Lambda gives CPU in proportion to memory (one vCPU at 1,769 MB), and Chromium renders,
 * rasterises and encodes on several threads: at 3,008 MB it gets about 1.7 vCPUs and room for the largest bitmap the
 * spec allows (3,840 x 16,384 px full page is ~250 MB raw, held more than once while encoding). 3,008 MB is also the
 * most a new account may configure without a quota increase, so the stack deploys everywhere.
 */
export const RENDERER_MEMORY_MB = 3008;
/** As long as the front may wait for it: the front's deadline, not this, ends a capture. */
export const RENDERER_TIMEOUT = Duration.millis(SCREENSHOT_FUNCTION_TIMEOUT_MS);

export interface RendererFunctionProps {
  projectRoot: string;
  runtime: lambda.Runtime;
  architecture: lambda.Architecture;
  chromiumLayer: lambda.ILayerVersion;
  /** The `service` dimension of its logs. */
  serviceName: string;
  /** What this renderer is for, in its description and its role's (the shared capacity, or the headroom). */
  purpose: string;
  /** Captures it runs at once: its part of the capture capacity (docs/api.md 6.5). */
  reservedConcurrency: number;
  /** Instances of its live alias Lambda keeps initialised (browser launched): none when 0. */
  provisionedConcurrency: number;
  sourceMaps: boolean;
  liveAlias: string;
}

/**
 * A renderer function: Chromium (the layer) and the egress proxy, and nothing worth stealing. The stack makes two
 * from the same code and layer, whose reserved concurrencies are the shared capacity and the headroom. Its role may write
 * its own log group and nothing else (no table, bucket, key or X-Ray); its environment names no resource and holds
 * no secret. Only the screenshot front may invoke it, through its live alias, with response streaming.
 */
export class RendererFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly alias: lambda.Alias;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: RendererFunctionProps) {
    super(scope, id);
    // Infrequent Access: CloudWatch keeps and queries these logs, but makes no metric of them (no embedded metric
    // format, no metric filter). The business metrics the alarms read are log lines in that format; a renderer taken
    // over by a page writes its own log group, and would otherwise forge them (red team: silence the 5xx alarms by
    // raising CustomerPageFailures, or page and roll every deploy back). It has no metric of its own to lose.
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      logGroupClass: logs.LogGroupClass.INFREQUENT_ACCESS,
    });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Renderer (${props.purpose}): writes its own logs, nothing else`,
    });
    logGroup.grantWrite(this.role);

    this.fn = new NodejsFunction(this, 'Function', {
      entry: path.join(props.projectRoot, 'functions', 'renderer.ts'),
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: path.join(props.projectRoot, 'package-lock.json'),
      description: `Renderer (${props.purpose}): Chromium, invoked by the screenshot front`,
      runtime: props.runtime,
      architecture: props.architecture,
      memorySize: RENDERER_MEMORY_MB,
      timeout: RENDERER_TIMEOUT,
      // /tmp holds Chromium's profile, font cache and the files backing shared memory (no /dev/shm on Lambda), which
      // a 3840 x 16384 full-page bitmap makes large.
      ephemeralStorageSize: Size.mebibytes(1024),
      reservedConcurrentExecutions: props.reservedConcurrency,
      layers: [props.chromiumLayer],
      environment: {
        POWERTOOLS_SERVICE_NAME: props.serviceName,
        ...sourceMapEnvironment(props.sourceMaps),
      },
      role: this.role,
      logGroup,
      // Active tracing would add X-Ray permissions to the role; the front's trace covers the invocation.
      tracing: lambda.Tracing.DISABLED,
      bundling: functionBundling(props.sourceMaps, {
        externalModules: [CHROMIUM_PACKAGE, SHARP_PACKAGE],
        commandHooks: captureAssetHooks,
      }),
    });
    this.alias = new lambda.Alias(this, 'Live', {
      aliasName: props.liveAlias,
      version: this.fn.currentVersion,
      ...(props.provisionedConcurrency > 0
        ? { provisionedConcurrentExecutions: props.provisionedConcurrency }
        : {}),
    });
    Validations.of(this.fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason: `${props.runtime.name} on purpose, the same runtime as every other function of the stack.`,
    });
  }
}

/** The two renderers: the shared capacity, and the headroom for newcomers (docs/api.md 6.5). */
export interface Renderers {
  shared: RendererFunction;
  headroom: RendererFunction;
}

/**
 * What a function that captures is told of the renderers, and allowed: their live aliases. The versions those point at
 * are read by nothing: they make a change to the renderers alone (a Chromium release among them) a change to every
 * function that invokes them, so that the fronts publish new versions and it passes their pre-traffic self-test and
 * canary, whose alarms roll the stack back (red team, round 31: it went to every capture with neither).
 */
export function invokingRenderers(renderers: Renderers, role: iam.IGrantable): Record<string, string> {
  renderers.shared.alias.grantInvoke(role);
  renderers.headroom.alias.grantInvoke(role);
  return {
    RENDERER_FUNCTION_NAME: renderers.shared.alias.functionArn,
    RENDERER_HEADROOM_FUNCTION_NAME: renderers.headroom.alias.functionArn,
    RENDERER_VERSIONS: [renderers.shared, renderers.headroom]
      .map((renderer) => renderer.fn.currentVersion.version)
      .join(','),
  };
}
