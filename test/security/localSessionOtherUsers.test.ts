import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, startPageServer } from '../helpers/pageServer';

/**
 * Red team (dashboard): docs/security.md treats other users of the machine as a threat to `npm start` (the local S3
 * API and the embedded DynamoDB have gates, DATA_DIR is owner-only, "another user of the machine set an account's
 * balance with one curl" was closed). Yet `POST /local/session` mints a session token for any account id to any
 * process that can reach 127.0.0.1:<port> with `Host: 127.0.0.1:<port>` and no Origin: exactly what another local
 * user's curl sends (confirmed as user `nobody` against `npm start`). With that token they act as the account owner
 * on every management route: read the webhook signing secret (and forge the owner's webhooks), list the jobs and
 * download their results through the pre-signed links (the owner's private, cookie-authenticated captures), create
 * keys that spend the owner's credits, revoke or delete the owner's keys.
 *
 * These tests pass once the local sign-in needs something only the developer holds (e.g. a random secret kept
 * owner-only under DATA_DIR that `npm start` prints in a one-time sign-in link, or the peer's uid checked).
 */

const OWNER = 'owner-on-a-shared-machine';
const PRIVATE_TEXT = 'payroll of the owner';

let pages: PageServer;
let service: TestLocalService;

beforeAll(async () => {
  pages = await startPageServer({
    // A page only the owner's cookie opens: what an async capture with `cookies` is for.
    '/payroll': (req, res) => {
      const signedIn = req.headers.cookie === 'session=owner-cookie';
      res
        .writeHead(signedIn ? 200 : 403, { 'Content-Type': 'text/html; charset=utf-8' })
        .end(signedIn ? `<h1>${PRIVATE_TEXT}</h1>` : '<h1>forbidden</h1>');
    },
  });
  service = await startTestLocalService({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

/** What another user of the machine sends: the documented request, knowing only the port (`ss -ltn` shows it). */
async function otherUsersSessionToken(accountId: string): Promise<string | null> {
  const response = await fetch(`${service.url}/local/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ accountId }),
  });
  if (!response.ok) return null;
  const { token } = (await response.json()) as { token?: unknown };
  return typeof token === 'string' ? token : null;
}

describe('another user of the machine against the local sign-in', () => {
  it("cannot read the account owner's webhook signing secret", async () => {
    // The owner signed in (npm start's token) and uses webhooks.
    const ownerToken = service.idp.mintToken(OWNER);
    const ownerSecret = (await (await service.request('/api/webhook-secret', { bearer: ownerToken })).json())
      .secret as string;
    expect(ownerSecret).toMatch(/^whsec_/);

    const token = await otherUsersSessionToken(OWNER);
    const stolen = token
      ? ((await (await service.request('/api/webhook-secret', { bearer: token })).json()).secret ?? null)
      : null;
    expect(stolen).toBeNull();
  });

  it("cannot download the owner's private capture through the jobs list", async () => {
    const owner = await service.newAccount();
    const accepted = await fetch(`${service.url}/api/screenshot`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${owner.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        url: `${pages.origin}/payroll`,
        format: 'markdown',
        cookies: [{ name: 'session', value: 'owner-cookie' }],
        async: true,
      }),
    });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as { id: string };
    let job: { status: string; result: { url: string } | null } | undefined;
    for (let i = 0; i < 240 && !['succeeded', 'failed'].includes(job?.status ?? ''); i++) {
      if (i > 0) await sleep(250);
      job = await (await service.request(`/api/jobs/${id}`, { bearer: owner.apiKey })).json();
    }
    expect(job?.status).toBe('succeeded');

    const token = await otherUsersSessionToken(owner.accountId);
    let downloaded = '';
    if (token) {
      const { jobs } = (await (await service.request('/api/jobs', { bearer: token })).json()) as {
        jobs: { result: { url: string } | null }[];
      };
      for (const listed of jobs)
        if (listed.result) downloaded += await (await fetch(listed.result.url)).text();
    }
    expect(downloaded).not.toContain(PRIVATE_TEXT);
  }, 120_000);

  it("cannot create an API key that spends the owner's credits", async () => {
    const token = await otherUsersSessionToken(OWNER);
    const status = token
      ? (await service.request('/api/keys', { bearer: token, body: { name: 'not the owner' } })).status
      : 403;
    expect(status).not.toBe(201);
  });
});
