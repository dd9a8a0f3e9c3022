import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { DeploymentSettings } from './settings';
import { ServiceWebAcl } from './webAcl';

/** CloudFront only accepts web ACLs of scope CLOUDFRONT, and those exist only in us-east-1. */
export const EDGE_REGION = 'us-east-1';

/**
 * The dashboard distribution's web ACL, in us-east-1 whatever the service's region. The service stack reads its ARN
 * through a cross-region reference (CDK keeps it in SSM parameters), so deploying the service deploys this first.
 */
export class EdgeStack extends Stack {
  readonly webAclArn: string;

  constructor(scope: Construct, id: string, props: StackProps & { settings: DeploymentSettings }) {
    super(scope, id, props);
    const { settings } = props;
    this.webAclArn = new ServiceWebAcl(this, 'DashboardFirewall', {
      scope: 'CLOUDFRONT',
      requestsPerIp: settings.wafRequestsPerIp,
      requestsPerCredential: settings.wafRequestsPerCredential,
      name: `${settings.stackName}-dashboard`,
    }).acl.attrArn;
  }
}
