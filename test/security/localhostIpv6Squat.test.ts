import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
