import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLocalIdp } from '../../local/idp';
import { type PageServer, slowPage, startPageServer, unusedPort } from '../helpers/pageServer';

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON answers, read field by field
type Json = Record<string, any>;

/**
 * Never lost, never twice: `npm start` killed with SIGKILL (its whole process group: the service, the renderer
 * process and Chromium) while jobs are queued and running, then started again on the same data directory.
 */

const JOBS = 6;
const BALANCE = 50;

let dataDir: string;
let port: number;
let pages: PageServer;
let server: ChildProcess | undefined;

function startServer(): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/server.ts'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      ALLOW_PRIVATE_HOSTS: pages.hostPort,
      FREE_CREDITS: String(BALANCE),
      // A job whose process died comes back within seconds.
      LOCAL_QUEUE_VISIBILITY_SECONDS: '3',
      LOCAL_MAX_CAPTURES: '2',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    stdio: 'ignore',
    // Its own process group, so one signal reaches the renderer process and Chromium too.
    detached: true,
  });
  return child;
}

async function ready(): Promise<void> {
  const until = Date.now() + 90_000;
  while (Date.now() < until) {
    const status = await fetch(`http://127.0.0.1:${port}/api/openapi.json`)
      .then((response) => response.status)
      .catch(() => 0);
    if (status === 200) return;
    await sleep(250);
  }
  throw new Error('The local service did not start');
}

async function killGroup(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  process.kill(-(child.pid as number), 'SIGKILL');
  await exited;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'screenshot-restart-'));
  port = await unusedPort();
  pages = await startPageServer({
    // About 1.5 s to load: jobs are still running when the process is killed.
    ...slowPage(1_500),
  });
});

afterAll(async () => {
  if (server && server.exitCode === null) await killGroup(server).catch(() => undefined);
  await pages?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('a local service killed while jobs are queued and running', () => {
  it('finishes every job after a restart, each charged exactly once', async () => {
    server = startServer();
    await ready();
    const base = `http://127.0.0.1:${port}`;
    const token = (await loadLocalIdp(dataDir)).mintToken('restart');
    const key = (await (
      await fetch(`${base}/api/keys`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'restart' }),
      })
    ).json()) as { key: string };
    const api = (path: string, body?: unknown) =>
      fetch(`${base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          Authorization: `Bearer ${path === '/api/credits' ? token : key.key}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (response) => (await response.json()) as Json);

    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++)
      ids.push((await api('/api/screenshot', { url: `${pages.origin}/slow?${i}`, async: true })).id);
    // Kill it once a capture is under way: some jobs running, the rest still queued.
    const until = Date.now() + 60_000;
    while (
      !(await Promise.all(ids.map((id) => api(`/api/jobs/${id}`)))).some((job) => job.status === 'running')
    ) {
      if (Date.now() > until) throw new Error('No job started');
      await sleep(100);
    }
    const before = await Promise.all(ids.map((id) => api(`/api/jobs/${id}`)));
    expect(before.some((job) => job.status === 'queued' || job.status === 'running')).toBe(true);
    await killGroup(server);

    server = startServer();
    await ready();
    const done = Date.now() + 120_000;
    let jobs: Json[] = [];
    for (;;) {
      jobs = await Promise.all(ids.map((id) => api(`/api/jobs/${id}`)));
      if (jobs.every((job) => job.status === 'succeeded' || job.status === 'failed')) break;
      if (Date.now() > done) throw new Error(`Not finished: ${jobs.map((job) => job.status).join(', ')}`);
      await sleep(250);
    }
    expect(jobs.map((job) => job.status)).toEqual(ids.map(() => 'succeeded'));
    expect((await api('/api/credits')).balance).toBe(BALANCE - JOBS);
  }, 300_000);
});
