import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { addEnvironment } from './deployment';
import { loadEnvironments } from './settings';

const app = new App();

// Every environment of infra/environments/ is in the app, each pinned to its own account and region: `cdk deploy
// <stackName>` picks one (and its us-east-1 companion), and nothing depends on the caller's default profile.
// `npm run synth` (context placeholders=allow) renders the committed example settings offline; `cdk deploy` (and
// `npm run preflight`) refuses placeholder account ids and example addresses, so a copied example never deploys.
const placeholders = app.node.tryGetContext('placeholders') === 'allow' ? 'allow' : 'refuse';
for (const settings of loadEnvironments(undefined, { placeholders })) addEnvironment(app, settings);

// cdk-nag's AwsSolutions pack runs on every synth: an unacknowledged finding stops `cdk synth` and `cdk deploy`.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));

app.synth();
