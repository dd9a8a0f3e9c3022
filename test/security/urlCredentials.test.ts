import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * The user-info of a capture URL (`http://user:password@host/`) is an origin credential, as an `Authorization` header
 * is: Chromium answers the site's Basic challenge with it. Red team: no rule for credentials saw it, so a signed link
 * captured the page behind the password (public, kept a day by the link CDN), a POST was answered `public`, and an
 * async capture kept the password in clear in its job item. Such a URL is now refused, everywhere, before anything
 * is charged or stored; credentials go in `headers`.
 */

let pages: PageServer;
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;
const requested: IncomingMessage[] = [];

beforeAll(async () => {
  pages = await startPageServer({
    '/private': (req, res) => {
      requested.push(req);
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(solidPage('#00ff00'));
    },
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  account = await harness.newAccount();
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

const withPassword = () => `http://alice:hunter2@${pages.hostPort}/private`;

describe('a capture URL carrying a user name or password', () => {
  it('is refused 400 on a POST, sync or async, naming url, and nothing is charged', async () => {
    const before = await harness.credits.balance(account.accountId);
    for (const body of [
      { url: withPassword() },
      { url: withPassword(), async: true },
      { url: `http://alice@${pages.hostPort}/private` },
    ]) {
      const answer = await harness.shoot(account.apiKey, body);
      expect(answer.status).toBe(400);
      expect(answer.json().details).toEqual([
        expect.objectContaining({
          path: ['url'],
          code: 'invalid_format',
          message: expect.stringMatching(/headers/),
        }),
      ]);
      // The password is not echoed back.
      expect(answer.body.toString('utf8')).not.toContain('hunter2');
    }
    expect(await harness.credits.balance(account.accountId)).toBe(before);
    expect(requested).toHaveLength(0);
  }, 60_000);

  it('is refused 400 on a signed link, whose answer is public', async () => {
    const query = { url: withPassword(), width: '320', height: '320', keyId: account.keyId };
    const answer = await harness.open({
      ...query,
      signature: signQuery(account.signingSecret, canonicalQuery(query)),
    });
    expect(answer.status).toBe(400);
    expect(answer.json().details).toEqual([expect.objectContaining({ path: ['url'] })]);
    expect(requested).toHaveLength(0);
  }, 60_000);

  it('is refused as a webhookUrl too: deliveries never send it', async () => {
    const answer = await harness.shoot(account.apiKey, {
      url: `http://${pages.hostPort}/private`,
      async: true,
      webhookUrl: 'https://hook:secret@example.com/hooks',
    });
    expect(answer.status).toBe(400);
    expect(answer.json().details).toEqual([
      expect.objectContaining({ path: ['webhookUrl'], code: 'invalid_format' }),
    ]);
  }, 60_000);
});
