import {
  type CodeDeployClient,
  type LifecycleEventStatus,
  PutLifecycleEventHookExecutionStatusCommand,
} from '@aws-sdk/client-codedeploy';
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { logger } from '../logger';
import type { SelfTestEvent, SelfTestResult } from './selfTest';

/** What CodeDeploy sends a BeforeAllowTraffic hook. */
export interface PreTrafficEvent {
  DeploymentId: string;
  LifecycleEventHookExecutionId: string;
}

export interface PreTrafficHookDeps {
  lambda: Pick<LambdaClient, 'send'>;
  codeDeploy: Pick<CodeDeployClient, 'send'>;
  /** The new version's ARN (not the alias, which still points at the old one until traffic shifts). */
  functionVersionArn: string;
  /** A page we own that must capture: the dashboard's. */
  knownPageUrl: string;
}

/**
 * CodeDeploy's BeforeAllowTraffic hook: the new version of the screenshot function captures a known page (a
 * self-test event, so no key, credit or usage is involved), and the deployment goes on only if it did. A version that
 * cannot start its browser never takes a single request, even when the canary would have seen no traffic.
 */
export function preTrafficHook(deps: PreTrafficHookDeps) {
  return async (event: PreTrafficEvent): Promise<LifecycleEventStatus> => {
    const status = await check(deps);
    await deps.codeDeploy.send(
      new PutLifecycleEventHookExecutionStatusCommand({
        deploymentId: event.DeploymentId,
        lifecycleEventHookExecutionId: event.LifecycleEventHookExecutionId,
        status,
      }),
    );
    return status;
  };
}

async function check(deps: PreTrafficHookDeps): Promise<LifecycleEventStatus> {
  const payload: SelfTestEvent = { selfTest: { url: deps.knownPageUrl } };
  try {
    const answer = await deps.lambda.send(
      new InvokeCommand({ FunctionName: deps.functionVersionArn, Payload: JSON.stringify(payload) }),
    );
    const text = Buffer.from(answer.Payload ?? new Uint8Array()).toString('utf8');
    if (answer.FunctionError) {
      logger.error('Pre-traffic check: the new version failed', { functionError: answer.FunctionError });
      return 'Failed';
    }
    const result = JSON.parse(text) as SelfTestResult;
    if (result.ok === true) {
      logger.info('Pre-traffic check passed', { bytes: result.bytes });
      return 'Succeeded';
    }
    logger.error('Pre-traffic check: the known page did not capture', { reason: result.reason });
    return 'Failed';
  } catch (error) {
    logger.error('Pre-traffic check could not run', { error: error as Error });
    return 'Failed';
  }
}
