import { readdir, readFile, readlink } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ownPorts } from '../../shared/egress/ownPorts';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, slowPage, solidPage, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 20): under ALLOW_PRIVATE_HOSTS='*', a webhook was accepted (202) and delivered to a port of the
 * renderer process's egress proxy: each capture's own route (a listener per capture), which only the renderer
 * process's registry of own ports knew. The front, whose gate checks webhook URLs, learnt only the Invoke API's and
 * the browser-wide proxy's ports when the process started. Fixed: the renderer process tells the front of each port
 * it opens and closes over its IPC channel (ownPorts.watch in local/renderer/rendererProcess.ts, followed in
 * local/renderer/localRenderer.ts), and the front refuses it while it listens.
 */

/** How long the page's image takes: the capture, and its route, last that long. */
const SLOW_MS = 6_000;

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({
    '/plain': solidPage('#0000ff'),
    ...slowPage(SLOW_MS),
  });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: '*', POWERTOOLS_LOG_LEVEL: 'SILENT' });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

/** The TCP ports the process listens on: its sockets' inodes, found among the listening rows of /proc/net/tcp. */
async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const rows = (await readFile(`/proc/${pid}/net/tcp`, 'utf8')).trim().split('\n').slice(1);
  return rows
    .map((row) => row.trim().split(/\s+/))
    .filter((fields) => fields[3] === '0A' && inodes.has(fields[9] ?? ''))
    .map((fields) => Number.parseInt(fields[1]?.split(':')[1] ?? '', 16));
}

const shoot = (apiKey: string, body: unknown) => service.request('/api/screenshot', { bearer: apiKey, body });

describe("a capture's egress route", () => {
  it('is refused as a webhook URL while it listens, as the renderer process’s other ports are', async () => {
    const { apiKey } = await service.newAccount();
    // The renderer process and its Chromium are up.
    expect((await shoot(apiKey, { url: `${pages.origin}/plain` })).status).toBe(200);
    const renderer = await service.renderer.processInfo();

    const capture = shoot(apiKey, { url: `${pages.origin}/slow` });
    const route = await vi.waitFor(
      async () => {
        const opened = (await listeningPorts(renderer.pid)).filter(
          (port) => !renderer.ownPorts.includes(port),
        );
        expect(opened).toHaveLength(1);
        return opened[0] as number;
      },
      { timeout: 20_000, interval: 20 },
    );
    const refused = await shoot(apiKey, {
      url: `${pages.origin}/plain`,
      async: true,
      webhookUrl: `http://127.0.0.1:${route}/hook`,
    });
    // Before the fix: 202, and the delivery reached the route (its answer, 400, recorded as the last status).
    expect(refused.status).toBe(400);
    expect((await refused.json()).details).toEqual([
      expect.objectContaining({ code: 'url_not_allowed', path: ['webhookUrl'] }),
    ]);

    expect((await capture).status).toBe(200);
    // Closed with its capture, the port leaves the front's list too.
    await vi.waitFor(() => expect(ownPorts.has(route)).toBe(false), { timeout: 5_000, interval: 50 });
  }, 60_000);
});
