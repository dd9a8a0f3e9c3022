import type { App } from 'aws-cdk-lib';
import { EDGE_REGION, EdgeStack } from './edgeStack';
import type { DeploymentSettings } from './settings';
import { ScreenshotServiceStack } from './stack';

/** Stack id (and CloudFormation name) of an environment's us-east-1 companion. */
export const edgeStackName = (settings: DeploymentSettings) => `${settings.stackName}-edge`;

/**
 * One environment: its service stack and the us-east-1 stack of its dashboard's web ACL, both pinned to the
 * environment's account, so a deploy with another account's credentials stops before changing anything.
 */
export function addEnvironment(app: App, settings: DeploymentSettings) {
  const edge = new EdgeStack(app, edgeStackName(settings), {
    stackName: edgeStackName(settings),
    env: { account: settings.account, region: EDGE_REGION },
    description: `Screenshot service (${settings.environment}): the dashboard's CloudFront web ACL`,
    terminationProtection: true,
    crossRegionReferences: true,
    settings,
  });
  const service = new ScreenshotServiceStack(app, settings.stackName, {
    stackName: settings.stackName,
    env: { account: settings.account, region: settings.region },
    description: `Screenshot capture service (${settings.environment}): API Gateway REST, Lambda + Chromium, DynamoDB, Cognito`,
    terminationProtection: true,
    crossRegionReferences: true,
    settings,
    dashboardWebAclArn: edge.webAclArn,
  });
  return { edge, service };
}
