import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { STSClient } from '@aws-sdk/client-sts';
import { preflight } from '../infra/preflight';
import { ENVIRONMENTS_DIR } from '../infra/settings';

/**
 * `npm run preflight -- <environment>`: checks infra/environments/<environment>.json against the AWS account the
 * operator is signed in to (the usual AWS credentials), before `cdk deploy` (docs/deploy.md, "Preflight").
 * Exit code 0 when every check passes, 1 otherwise, 2 on bad usage.
 */
const [environment] = process.argv.slice(2);
if (!environment || !/^[\w-]+$/.test(environment)) {
  process.stderr.write('usage: npm run preflight -- <environment>   (a file of infra/environments/)\n');
  process.exit(2);
}
const file = path.join(ENVIRONMENTS_DIR, `${environment}.json`);
const json: unknown = JSON.parse(await readFile(file, 'utf8'));
const checks = await preflight(environment, json, (region) => ({
  sts: new STSClient({ region }),
  lambda: new LambdaClient({ region }),
}));
for (const check of checks)
  process.stdout.write(`${check.ok ? 'ok  ' : 'FAIL'} ${check.name}: ${check.detail}\n`);
process.exit(checks.every((check) => check.ok) ? 0 : 1);
