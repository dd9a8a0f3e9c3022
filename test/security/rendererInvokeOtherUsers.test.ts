import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Red team (round 6): the local renderer process's Invoke API (local/renderer/invokeServer.ts) answers any local
 * process that names 127.0.0.1 and sends no Origin (local/ownClients.ts keeps out browsers, not other users of the
 * machine). Its port is on `ss -ltn` / /proc/net/tcp for everyone; one probe per port finds it (it answers
 * `UnknownOperationException`). The renderer trusts the spec ("the front has validated every field"), so another
 * user hands it specs the front would refuse: `url: file:///…` is navigated to as is, and `format: markdown` hands
 * back the text of any file the developer can read. Confirmed as user `nobody` against `npm start`: the local
 * identity provider's private signing key (DATA_DIR/idp/signing-key.json, 0600 in a 0700 folder), from which
 * they mint a session token for any account (webhook secrets, jobs and their results, keys), DATA_DIR's state file,
 * and any text file of the developer's home (SSH keys, ~/.aws/credentials). They also get free captures with the
 * renderer's browser and capacity, outside the front's admission queue, credits and limits; and one spec with a
 * width Chromium refuses makes every later capture of the developer's fail until `npm start` restarts.
 *
 * These pass once the renderer answers only the front (e.g. a random per-start secret handed over the IPC channel,
 * never env or argv, required on every invocation, or SigV4 checked with it as awsJsonSignatureGate does), and, in
 * depth, once it refuses a spec whose url is not http(s).
 */

const NOBODY = 65534;
const MARKER = 'visible only to the service owner';

let service: TestLocalService;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer({
    '/owners-page': (_req, res) =>
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<h1>${MARKER}</h1>`),
  });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

/** A spec as the front builds it, then changed as an attacker likes: the renderer re-checks none of it. */
function specFor(url: string) {
  const spec = captureSpecOf(screenshotRequest.parse({ url: 'https://example.com/', format: 'markdown' }));
  return { ...spec, url };
}

/**
 * What another user of the machine sends: a plain POST with curl, run as `nobody` when the suite runs as root (as
 * the red team did), else from this process (the gate looks at no uid either way). The answer's raw bytes, headers
 * first.
 */
function invokeAsAnotherUser(endpoint: string, event: unknown): Promise<string> {
  const url = `${endpoint}/2021-11-15/functions/renderer/response-streaming-invocations`;
  const body = JSON.stringify(event);
  if (process.getuid?.() !== 0) {
    return fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } }).then(
      async (res) =>
        `HTTP/1.1 ${res.status}\r\n\r\n${Buffer.from(await res.arrayBuffer()).toString('latin1')}`,
    );
  }
  return new Promise((resolve, reject) => {
    const child = execFile(
      'setpriv',
      [
        `--reuid=${NOBODY}`,
        `--regid=${NOBODY}`,
        '--clear-groups',
        '--',
        'curl',
        '-s',
        '-D',
        '-',
        '-m',
        '90',
        '-X',
        'POST',
        '-H',
        'Content-Type: application/json',
        '--data-binary',
        '@-',
        url,
      ],
      { encoding: 'latin1', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => (error && !stdout ? reject(error) : resolve(stdout)),
    );
    child.stdin?.end(body);
  });
}

describe("another user of the machine against the renderer process's Invoke API", () => {
  it("cannot read the identity provider's private signing key through a file:// capture", async () => {
    const keyFile = join(service.dataDir, 'idp', 'signing-key.json');
    expect(existsSync(keyFile)).toBe(true);
    const { url } = await service.renderer.processInfo();
    const answer = await invokeAsAnotherUser(url, {
      spec: specFor(`file://${keyFile}`),
      deadline: Date.now() + 60_000,
    });
    // Before the fix: a 200 whose payload is the key file's JSON, "-----BEGIN PRIVATE KEY-----" and all.
    expect(answer).toMatch(/^HTTP\/1\.1 \d{3}/);
    expect(answer).not.toContain('PRIVATE KEY');
  }, 120_000);

  it('cannot have the renderer capture pages for it, outside the front (no key, no credit, no limit)', async () => {
    const { url } = await service.renderer.processInfo();
    const answer = await invokeAsAnotherUser(url, {
      spec: specFor(`${pages.origin}/owners-page`),
      deadline: Date.now() + 60_000,
    });
    expect(answer).toMatch(/^HTTP\/1\.1 \d{3}/);
    expect(answer).not.toContain(MARKER);
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
  }, 120_000);

  it("cannot break every later capture of the developer's with one malformed spec", async () => {
    const account = await service.newAccount();
    const capture = () =>
      service.request('/api/screenshot', {
        bearer: account.apiKey,
        body: { url: `${pages.origin}/owners-page`, width: 400, height: 400 },
      });
    expect((await capture()).status).toBe(200);
    // The renderer prepares its next tab with the latest capture's viewport: a width Chromium refuses made that
    // preparation fail, and with it every capture after it ("Browser could not be started", 500) until npm start
    // was restarted (found as user `nobody` by sending specs with odd field values).
    const { url } = await service.renderer.processInfo();
    await invokeAsAnotherUser(url, {
      spec: { ...specFor(`${pages.origin}/owners-page`), width: null },
      deadline: Date.now() + 60_000,
    });
    const after = await capture();
    expect(after.status, await after.clone().text()).toBe(200);
    const again = await capture();
    expect(again.status, await again.clone().text()).toBe(200);
  }, 120_000);
});
