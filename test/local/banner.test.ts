import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_SUMMARY } from '../../shared/capture/chromiumSandbox';
import { unusedPort } from '../helpers/pageServer';

/** What `npm start` prints once it is ready, with a DATA_DIR of its own. */

let dataDir: string;
let server: ChildProcess | undefined;
let banner = '';

/** `npm start` (its entry, as npm runs it) on a free port with this file's DATA_DIR, and `extra` in its environment. */
async function startServer(extra: NodeJS.ProcessEnv, stderr: 'inherit' | 'pipe'): Promise<ChildProcess> {
  return spawn(process.execPath, ['--import', 'tsx', 'local/server.ts'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(await unusedPort()),
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      ...extra,
    },
    stdio: ['ignore', 'pipe', stderr],
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'screenshot-banner-'));
  server = await startServer({}, 'inherit');
  server.stdout?.setEncoding('utf8');
  for await (const chunk of server.stdout as AsyncIterable<string>) {
    banner += chunk;
    if (banner.includes('Create an API key')) break;
  }
}, 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
  await rm(dataDir, { recursive: true, force: true });
});

describe('the npm start banner', () => {
  it('says how to raise the hourly limit for local trials', () => {
    expect(banner).toMatch(/100 screenshot requests per account per hour.*RATE_LIMIT_PER_HOUR=\d+ npm start/);
  });

  it("says whether pages run in Chromium's own sandbox", () => {
    // As root (CI) Chromium refuses its sandbox; any other user gets it where the machine allows it.
    expect(banner).toContain(
      `Chromium sandbox: ${SANDBOX_SUMMARY[process.getuid?.() === 0 ? 'off' : 'auto']}`,
    );
  });

  it('gives the token command with the DATA_DIR the server uses', () => {
    expect(banner).toContain(`DATA_DIR=${dataDir} npm run --silent token -- <accountId>`);
  });
});

describe('npm start with a setting it does not take', () => {
  it.each([
    [{ CHROMIUM_SANDBOX: 'maybe' }, 'CHROMIUM_SANDBOX must be on, off or auto, not "maybe"'],
    // Red team (round 31): a JSON dump of zod's issues under a stack, the variable's name inside it.
    [
      { RATE_LIMIT_PER_HOUR: '0' },
      'a setting is not valid:\n✖ Too small: expected number to be >=1\n  → at RATE_LIMIT_PER_HOUR',
    ],
  ])(
    'stops before serving, and says what it takes, without a stack (%o)',
    async (setting, reason) => {
      const child = await startServer(setting, 'pipe');
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).not.toBe(0);
      expect(output).toContain(`npm start stopped: ${reason}`);
      expect(output).not.toMatch(/listening|\n\s+at /);
    },
    60_000,
  );
});
