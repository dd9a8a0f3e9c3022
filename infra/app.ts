import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readSettings } from './settings';
import { ScreenshotServiceStack } from './stack';

const app = new App();

// Environment-agnostic on purpose: synthesis needs no credentials or account lookups, and `cdk deploy` targets the
// account and region of the caller's AWS profile.
new ScreenshotServiceStack(app, 'ScreenshotService', {
  description: 'Screenshot capture service: API Gateway REST, Lambda + Chromium, DynamoDB, Cognito',
  settings: readSettings((key) => app.node.tryGetContext(key)),
});

// cdk-nag's AwsSolutions pack runs on every synth: an unacknowledged finding stops `cdk synth` and `cdk deploy`.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));

app.synth();
