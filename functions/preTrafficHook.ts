import { CodeDeployClient } from '@aws-sdk/client-codedeploy';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { preTrafficHook } from '../shared/rollout/preTrafficHook';

const required = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

export const handler = preTrafficHook({
  lambda: new LambdaClient({}),
  codeDeploy: new CodeDeployClient({}),
  functionVersionArn: required('FUNCTION_VERSION_ARN'),
  knownPageUrl: required('KNOWN_PAGE_URL'),
});
