import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unusedPort } from '../helpers/pageServer';

/**
 * Red team (round 23): SIGTERM to `npm start`'s whole process group (what `kill -- -<pgid>`, systemd and most
 * supervisors send) left Chromium's temp folder and profile behind at every stop: the renderer process's handler ran
 * once, for the group's signal, and the front's own SIGTERM a moment later killed it before they were removed.
 */

let dataDir: string;
let tempDir: string;

/** What Chromium and puppeteer keep in the temp folder (tsx keeps its cache there too). */
const chromiumFolders = async () =>
  (await readdir(tempDir)).filter((name) => /^(chromium-|puppeteer_dev_chrome_profile-)/.test(name));

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'screenshot-sigterm-data-'));
  tempDir = await mkdtemp(join(tmpdir(), 'screenshot-sigterm-tmp-'));
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
  await rm(tempDir, { recursive: true, force: true });
});

describe('SIGTERM to the whole process group of npm start', () => {
  it("stops it and leaves nothing of Chromium's in its temp folder", async () => {
    const server = spawn(process.execPath, ['--import', 'tsx', 'local/server.ts'], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        TMPDIR: tempDir,
        PORT: String(await unusedPort()),
        POWERTOOLS_LOG_LEVEL: 'SILENT',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    let banner = '';
    server.stdout?.setEncoding('utf8');
    for await (const chunk of server.stdout as AsyncIterable<string>) {
      banner += chunk;
      if (banner.includes('Create an API key')) break;
    }
    server.stdout?.resume();
    // Chromium is up once its folders are there (the renderer launches it at start).
    for (let i = 0; i < 100 && (await chromiumFolders()).length < 2; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await chromiumFolders()).length).toBeGreaterThan(0);
    const exited = once(server, 'exit');
    process.kill(-(server.pid ?? 0), 'SIGTERM');
    await exited;
    // Every process of the group ends, the renderer last.
    for (let i = 0; i < 50 && (await chromiumFolders()).length > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await chromiumFolders()).toEqual([]);
  }, 90_000);
});
