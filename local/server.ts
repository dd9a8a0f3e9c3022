import { resolve } from 'node:path';
import { SANDBOX_SUMMARY, sandboxChoice } from '../shared/capture/chromiumSandbox';
import { readServiceConfig } from '../shared/config';
import { isDiskFull } from './diskSpace';
import { startupFailure } from './startupFailure';
import { exitUnlessSupportedNode } from './supportedNode';

// Checked before the service's modules load: on an older Node they may fail to load at all, with a less clear error.
exitUnlessSupportedNode();
const { startLocalService } = await import('./localService');

/** `npm start`: serves the whole API locally. Settings come from the environment (see README). */
const dataDir = resolve(process.env.DATA_DIR || '.data');
// Everything the service writes is its user's alone (every account's images, the table, the queue): a folder of an
// older run that another user still holds open gets no readable file either (red team).
process.umask(0o077);
// Business metrics are CloudWatch EMF lines, for Lambda's log shipping; on a terminal they would only be noise.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const port = Number(process.env.PORT || 3000);

/** Ends `npm start` with why it could not start. */
function stopped(error: unknown): never {
  process.stderr.write(`\nnpm start stopped: ${startupFailure(error)}\n\n`);
  process.exit(1);
}

// Read before anything starts: a setting the service refuses (a CHROMIUM_SANDBOX that is not on, off or auto, a rate
// limit of 0) stops npm start with its reason.
let sandbox: ReturnType<typeof sandboxChoice>;
let rateLimitPerHour: number;
try {
  sandbox = sandboxChoice(process.env, process.getuid?.());
  ({ rateLimitPerHour } = readServiceConfig(process.env));
} catch (error) {
  stopped(error);
}

// A write that finds the disk full ends the process from inside dynalite or s3rver (diskSpace.ts): say why first.
process.on('uncaughtExceptionMonitor', (error) => {
  if (isDiskFull(error))
    process.stderr.write(
      `\nnpm start stopped: the disk of ${dataDir} is full. Free some space and start again.\n\n`,
    );
});

const service = await startLocalService({ dataDir, port }).catch(stopped);
const demoToken = service.idp.mintToken('demo');
// Tokens are signed with the key under DATA_DIR: the token command must be given the same one.
const tokenCommand = `${process.env.DATA_DIR ? `DATA_DIR=${dataDir} ` : ''}npm run --silent token -- <accountId>`;

process.stdout.write(`Screenshot service listening on ${service.url}
Node.js:          ${process.version}
Dashboard:        ${service.signInLink}
                  (open this link, whose key lets you sign in with any account id; keep it to yourself)
API description:  ${service.url}/api/openapi.json
Data:             ${dataDir}
Chromium sandbox: ${SANDBOX_SUMMARY[sandbox]}

Rate limit:       ${rateLimitPerHour} screenshot requests per account per hour (for local trials, raise it: RATE_LIMIT_PER_HOUR=10000 npm start)

Session token for account "demo" (valid 1 hour; mint more with: ${tokenCommand}):
${demoToken}

Create an API key:
printf 'Authorization: Bearer %s\\n' '${demoToken}' | curl -s -X POST ${service.url}/api/keys -H @- -H "Content-Type: application/json" -d '{"name":"my first key"}'
`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    if (stopping) process.exit(1);
    stopping = true;
    await service.close();
    process.exit(0);
  });
}
