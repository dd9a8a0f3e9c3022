import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalService } from '../../local/localService';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';

/**
 * Red team (round 6): `npm start` listens on 127.0.0.1:<PORT> only, and takes `localhost:<PORT>` for its own name
 * (local/dashboardRoutes.ts accepts that Host). Chromium resolves `localhost` to ::1 first, whatever /etc/hosts says,
 * and [::1]:<PORT> is free for anyone: another user of the machine binds it while `npm start` runs (no conflict), and
 * the developer who types http://localhost:3000/ gets their page instead of the dashboard (checked by hand and
 * below: Chromium showed the [::1] server's page, Node's fetch the 127.0.0.1 one). That page is a dashboard look-alike
 * that collects the API keys typed into "Try a capture", the account id, or a pasted sign-in link.
 *
 * Passes once the local server also holds [::1]:<PORT> (or listens on `localhost`'s every address, failing to
 * start when one is taken), so the name the developer types cannot lead to someone else's server.
 */

let service: TestLocalService;
let browser: Browser;
let squatter: Server | undefined;

beforeAll(async () => {
  [service, browser] = await Promise.all([
    startTestLocalService(),
    launchChromium().then((launched) => launched.browser),
  ]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  squatter?.close();
  await service?.close();
});

describe("the local server's name against another user of the machine", () => {
  it('serves http://localhost:<PORT>/ itself while it runs, never a server someone else put on [::1]', async () => {
    const port = Number(new URL(service.url).port);
    // Another user's server on the IPv6 loopback address, same port: refused once the service holds it.
    const server = createServer((_req, res) =>
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<title>look-alike</title>'),
    );
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '::1', () => resolve(true));
    });
    if (bound) squatter = server;
    const tab = await browser.newPage();
    await tab.goto(`http://localhost:${port}/`, { waitUntil: 'load' });
    expect(await tab.title()).toBe('Screenshot API dashboard');
    await tab.close();
    if (squatter) {
      squatter.close();
      await once(squatter, 'close');
      squatter = undefined;
    }
  }, 60_000);

  it('will not start on a port whose [::1] another program holds, and leaves 127.0.0.1 free again', async () => {
    // A free port of 127.0.0.1, taken on [::1] by someone else first.
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const other = createServer((_req, res) => res.end('look-alike'));
    const held = await new Promise<boolean>((resolve) => {
      other.once('error', () => resolve(false));
      other.listen(port, '::1', () => resolve(true));
    });
    const dataDir = await mkdtemp(join(tmpdir(), 'ipv6-squat-'));
    try {
      const starting = startLocalService({ dataDir, port, inMemoryStore: true, env: { ...process.env } });
      if (!held) {
        // No IPv6 loopback on this machine: nothing to squat, and the service starts.
        await (await starting).close();
        return;
      }
      await expect(starting).rejects.toThrow(`Another program holds [::1]:${port}`);
      // The 127.0.0.1 port it had taken is given back.
      const again = createServer();
      again.listen(port, '127.0.0.1');
      await once(again, 'listening');
      await new Promise((resolve) => again.close(resolve));
    } finally {
      other.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
