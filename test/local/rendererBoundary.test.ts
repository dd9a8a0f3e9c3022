import { existsSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSigningKeyFile } from '../../local/embeddedS3';
import { RENDERER_ENV_ALLOW_LIST } from '../../local/renderer/localRenderer';
import { STATE_FILE } from '../../local/stateFile';
import { OWN_PORTS_VARIABLE } from '../../shared/egress/ownPorts';
import { chromiumBelow } from '../helpers/chromiumProcesses';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { decodeImage, GREEN, near, RED } from '../helpers/screenshotHarness';

/**
 * The renderer is a separate OS process (as deployed it is a separate function): these tests read what the kernel
 * says it holds, let a page try the service's files, and kill it under a capture.
 */
let service: TestLocalService;
let pages: PageServer;
let account: Awaited<ReturnType<TestLocalService['newAccount']>>;
/** Resolves once the slow page has been asked for, so the test knows the capture is inside the renderer. */
let slowRequested: () => void = () => undefined;

/** Variables that would hand an exploited renderer the service's data, keys or cloud account. */
const PLANTED = {
  AWS_ACCESS_KEY_ID: 'AKIAPLANTEDFORTEST00',
  AWS_SECRET_ACCESS_KEY: 'planted-secret-access-key',
  AWS_SESSION_TOKEN: 'planted-session-token',
  AWS_PROFILE: 'planted-profile',
  DATA_DIR: '/planted/data/dir',
};

beforeAll(async () => {
  pages = await startPageServer({
    '/green': solidPage('#00ff00'),
    '/slow': () => slowRequested(),
  });
  // The table on disk, as `npm start` keeps it: its files are what the renderer must not hold.
  service = await startTestLocalService(
    { ...PLANTED, ALLOW_PRIVATE_HOSTS: pages.hostPort },
    { inMemoryStore: false },
  );
  account = await service.newAccount();
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

const shoot = (body: Record<string, unknown>) =>
  service.request('/api/screenshot', { bearer: account.apiKey, body });
const balance = async () =>
  ((await (await service.request('/api/credits', { bearer: account.token })).json()) as { balance: number })
    .balance;

async function environmentOf(pid: number): Promise<Map<string, string>> {
  const raw = await readFile(`/proc/${pid}/environ`, 'utf8');
  return new Map(
    raw
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

/** Where each open descriptor of a process leads (files, and pipe:/socket: names). */
async function openFilesOf(pid: number): Promise<string[]> {
  const descriptors = await readdir(`/proc/${pid}/fd`).catch(() => []);
  const targets = await Promise.all(
    descriptors.map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')),
  );
  return targets.filter(Boolean);
}

/** Whether the process is gone, or ended and not reaped yet. */
async function ended(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat === undefined || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}

describe('the renderer process', () => {
  it('runs apart from the front, with only the allow-listed variables: no data dir, key material or AWS credentials', async () => {
    const { pid } = await service.renderer.processInfo();
    expect(pid).not.toBe(process.pid);
    const env = await environmentOf(pid);
    expect(env.size).toBeGreaterThan(0);
    // Node itself adds the IPC channel's two variables (the channel the process reports its endpoint on).
    const allowed = new Set<string>([
      ...RENDERER_ENV_ALLOW_LIST,
      'NODE_CHANNEL_FD',
      'NODE_CHANNEL_SERIALIZATION_MODE',
      // The front's port numbers, for the renderer's egress gate to refuse: not a secret.
      OWN_PORTS_VARIABLE,
      // tsx compiles without its shared-temp cache (test/security/tsxCache.test.ts).
      'TSX_DISABLE_CACHE',
    ]);
    expect([...env.keys()].filter((name) => !allowed.has(name))).toEqual([]);
    for (const name of [
      ...Object.keys(PLANTED),
      'SIGNING_KEY_FILE',
      'TABLE_NAME',
      'IMAGE_BUCKET',
      'SESSION_ISSUER',
    ]) {
      expect(env.has(name), name).toBe(false);
    }
    // No value names the service's data either (the store, the sealing key, the identity provider's key).
    for (const [name, value] of env) expect(value, name).not.toContain(service.dataDir);
    for (const value of Object.values(PLANTED)) expect([...env.values()]).not.toContain(value);
  });

  it('holds no file of the data dir open, nor does its Chromium (red team, round 21)', async () => {
    // The table's LevelDB files are opened without close-on-exec in the front, and a spawn kept them: the renderer and
    // its browser held the table's log, lock and manifest, some writable.
    // A capture first, so that the browser is surely up.
    expect((await shoot({ url: `${pages.origin}/green` })).status).toBe(200);
    const { pid } = await service.renderer.processInfo();
    const browsers = await chromiumBelow(pid);
    expect(browsers.length).toBeGreaterThan(0);
    const read: number[] = [];
    for (const holder of [pid, ...browsers]) {
      const open = await openFilesOf(holder);
      // A renderer of the context the capture closed may end while we look (CI, loaded): it then holds nothing.
      if (open.length === 0 && (await ended(holder))) continue;
      expect(open.length, `pid ${holder}`).toBeGreaterThan(0);
      expect(
        open.filter((path) => path.startsWith(service.dataDir)),
        `pid ${holder}`,
      ).toEqual([]);
      read.push(holder);
    }
    expect(read).toContain(pid);
    expect(read.length).toBeGreaterThan(1);
  });

  it("gives a page whose script reads the data dir's files through file:// nothing", async () => {
    const secrets = [
      localSigningKeyFile(service.dataDir),
      join(service.dataDir, 'idp', 'signing-key.json'),
      join(service.dataDir, STATE_FILE),
    ];
    // The files are there to be read, so a green image means the page could not, not that nothing was there.
    for (const file of secrets) expect(existsSync(file), file).toBe(true);
    const urls = JSON.stringify(secrets.map((file) => `file://${file}`));
    const js = `
      document.body.style.background = '#00ff00';
      const leaked = () => { document.body.style.background = '#ff0000'; };
      for (const url of ${urls}) {
        try { const x = new XMLHttpRequest(); x.open('GET', url, false); x.send(); if (x.responseText) leaked(); } catch {}
        fetch(url).then((r) => r.text()).then((t) => { if (t) leaked(); }, () => {});
        const frame = document.createElement('iframe');
        frame.src = url;
        frame.onload = () => { try { if (frame.contentDocument?.body?.textContent) leaked(); } catch {} };
        document.body.appendChild(frame);
      }`;
    const response = await shoot({ url: `${pages.origin}/green`, js, delay: 1_000, width: 400, height: 400 });
    expect(response.status).toBe(200);
    const image = await decodeImage(Buffer.from(await response.arrayBuffer()));
    expect(near(image.pixel(395, 395), GREEN)).toBe(true);
    expect(near(image.pixel(395, 395), RED)).toBe(false);
  });

  it('answers 500 and refunds a capture whose renderer process is killed, then a new process takes the next one', async () => {
    const before = await balance();
    const { pid, ownPorts } = await service.renderer.processInfo();
    const browsers = await chromiumBelow(pid);
    expect(browsers.length).toBeGreaterThan(0);
    const requested = new Promise<void>((resolve) => {
      slowRequested = resolve;
    });
    const pending = shoot({ url: `${pages.origin}/slow` });
    await requested;
    // As the kernel's OOM killer or a renderer exploit's crash would.
    process.kill(pid, 'SIGKILL');
    const failed = await pending;
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({
      error: 'Screenshot capture failed',
      url: `${pages.origin}/slow`,
    });
    expect(await balance()).toBe(before);

    const next = await shoot({ url: `${pages.origin}/green`, width: 400, height: 400 });
    expect(next.status, next.status === 200 ? '' : await next.clone().text()).toBe(200);
    expect(near((await decodeImage(Buffer.from(await next.arrayBuffer()))).pixel(10, 10), GREEN)).toBe(true);
    const restarted = await service.renderer.processInfo();
    expect(restarted.pid).not.toBe(pid);
    // The killed process's ports are not handed on as the service's: another server may take them now (red team,
    // round 26: the new process refused them to pages for good).
    const handed = (await environmentOf(restarted.pid)).get(OWN_PORTS_VARIABLE)?.split(',').map(Number);
    expect(handed?.length).toBeGreaterThan(0);
    expect(handed?.filter((port) => ownPorts.includes(port))).toEqual([]);
    expect(await balance()).toBe(before - 1);
    // The killed process's Chromium went with it (its DevTools pipe closed): nothing is left running.
    await expect
      .poll(() => browsers.filter((browser) => existsSync(`/proc/${browser}`)), { timeout: 15_000 })
      .toEqual([]);
  });
});
