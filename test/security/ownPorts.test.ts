import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownPorts } from '../../shared/egress/ownPorts';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, startPageServer } from '../helpers/pageServer';
import { decodeImage, GREEN, near } from '../helpers/screenshotHarness';

/**
 * Under ALLOW_PRIVATE_HOSTS='*' (the README's suggestion for local trials) a captured page may reach any private
 * address, but never the service's own ports: the local API, the embedded DynamoDB, the local S3 API and the s3rver
 * behind it, the renderer process's Invoke API and its egress proxy. Through the local server as `npm start` runs it,
 * with real Chromium in its renderer process.
 */

let service: TestLocalService;
let site: PageServer;
let apiKey: string;
/** The ports the service listens on: the front's, and the renderer process's (its Invoke API and egress proxy). */
let targets: string[];
/** The renderer process's Invoke API. */
let invokeEndpoint: string;
/** The renderer process's egress proxy: the one port of the service the front has no listener of its own for. */
let proxyEndpoint: string;
/** How often the page's own loopback origin answered its script. */
let ownOriginHits = 0;

/**
 * A script that fetches every target (any answer, even opaque, counts as reached) and then its own origin, paints the page
 * green only if every target was refused and its own origin answered, and marks the end with #done (visible, as waitForSelector waits for).
 */
function probe(urls: string[]): string {
  return `(async () => {
    const targets = ${JSON.stringify(urls)};
    const fetched = await Promise.allSettled(targets.map((url) => fetch(url, { mode: 'no-cors' })));
    const reached = targets.filter((_, i) => fetched[i].status === 'fulfilled');
    const own = await fetch('/own').then((r) => r.ok, () => false);
    document.documentElement.style.background = reached.length === 0 && own ? '#0f0' : '#f00';
    document.title = 'reached: ' + reached.join(' ') + ' own: ' + own;
    const done = document.createElement('div');
    done.id = 'done';
    done.style.cssText = 'width: 1px; height: 1px';
    document.body.append(done);
  })();`;
}

beforeAll(async () => {
  site = await startPageServer({
    '/plain': '<!doctype html><html style="background:#00f"><body></body></html>',
    '/probe': (req, res) => {
      const urls = JSON.parse(new URL(req.url ?? '', 'http://x').searchParams.get('targets') ?? '[]');
      res
        .writeHead(200, { 'Content-Type': 'text/html' })
        .end(
          `<!doctype html><html style="background:#00f"><body><script>${probe(urls)}</script></body></html>`,
        );
    },
    '/own': (_req, res) => {
      ownOriginHits++;
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    },
  });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: '*', POWERTOOLS_LOG_LEVEL: 'SILENT' });
  ({ apiKey } = await service.newAccount());
  // One capture first, so the renderer process and its Chromium are up.
  expect((await shoot({ url: `${site.origin}/plain`, width: 320, height: 320 })).status).toBe(200);
  const known = [service.url, service.dynamo.endpoint, service.s3.endpoint, service.queue.endpoint].map(
    (url) => Number(new URL(url).port),
  );
  const ports = ownPorts.list();
  // The front's list holds the ones the test can name, and more (s3rver behind its gate); the renderer process was
  // given them when it started, and adds its own Invoke API.
  expect(ports).toEqual(expect.arrayContaining(known));
  expect(ports.length).toBeGreaterThanOrEqual(known.length + 1);
  const renderer = await service.renderer.processInfo();
  invokeEndpoint = renderer.url;
  const invokePort = Number(new URL(invokeEndpoint).port);
  // The renderer process reports its own listeners (its Invoke API, its egress proxy), and the front refuses them too.
  expect(renderer.ownPorts).toContain(invokePort);
  const proxyPort = renderer.ownPorts.find((port) => port !== invokePort);
  expect(proxyPort).toBeDefined();
  proxyEndpoint = `http://127.0.0.1:${proxyPort}`;
  expect(ownPorts.list()).toEqual(expect.arrayContaining(renderer.ownPorts));
  targets = [...ports, invokePort].flatMap((port) => [
    `http://127.0.0.1:${port}/`,
    `http://localhost:${port}/json/version`,
  ]);
});

afterAll(async () => {
  await service?.close();
  await site?.close();
});

function shoot(body: Record<string, unknown>) {
  return fetch(`${service.url}/api/screenshot`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function expectGreen(response: Response): Promise<void> {
  expect(response.status).toBe(200);
  const image = await decodeImage(Buffer.from(await response.arrayBuffer()));
  expect(near(image.pixel(10, 10), GREEN)).toBe(true);
}

describe("under ALLOW_PRIVATE_HOSTS='*', the service's own ports", () => {
  it("are refused as a webhook URL at submission: the local SQS API, the API itself, the renderer's Invoke API and egress proxy", async () => {
    for (const endpoint of [service.queue.endpoint, service.url, invokeEndpoint, proxyEndpoint]) {
      const refused = await shoot({ url: `${site.origin}/plain`, async: true, webhookUrl: `${endpoint}/` });
      expect(refused.status).toBe(400);
      expect((await refused.json()).details).toEqual([
        expect.objectContaining({ code: 'url_not_allowed', path: ['webhookUrl'] }),
      ]);
    }
  });

  it("are refused to a page's scripts, while the page's own loopback origin still answers", async () => {
    const before = ownOriginHits;
    const url = `${site.origin}/probe?targets=${encodeURIComponent(JSON.stringify(targets))}`;
    await expectGreen(await shoot({ url, width: 320, height: 320, waitForSelector: '#done' }));
    expect(ownOriginHits).toBe(before + 1);
  });

  it("are refused to the customer's js", async () => {
    await expectGreen(
      await shoot({
        url: `${site.origin}/plain`,
        width: 320,
        height: 320,
        js: probe(targets),
        waitForSelector: '#done',
      }),
    );
  });

  it('are refused as the url of a capture, with 400', async () => {
    for (const url of [service.url, service.dynamo.endpoint, service.s3.endpoint, proxyEndpoint]) {
      const response = await shoot({ url: `${url}/`, width: 320, height: 320 });
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body.details[0]).toMatchObject({ code: 'url_not_allowed', path: ['url'] });
    }
  });

  it('are refused even when ALLOW_PRIVATE_HOSTS names them explicitly', async () => {
    const { createEgressGate } = await import('../../shared/egress/egressGate');
    const apiPort = Number(new URL(service.url).port);
    const gate = createEgressGate({ allowPrivateHosts: `127.0.0.1:${apiPort},localhost:${apiPort}` });
    expect((await gate.check('127.0.0.1', apiPort)).kind).toBe('refused');
    expect((await gate.check('localhost', apiPort)).kind).toBe('refused');
    expect((await gate.check('0.0.0.0', apiPort)).kind).toBe('refused');
  });
});
