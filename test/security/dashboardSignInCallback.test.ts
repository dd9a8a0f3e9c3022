import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardRoutes } from '../../local/dashboardRoutes';
import { ephemeralIdentityProvider } from '../../local/ephemeralIdp';
import { LOCAL_CLIENT_ID, LOCAL_ISSUER } from '../../local/idp';
import { launchChromium } from '../../shared/capture/chromiumLaunch';

/**
 * Red team (dashboard, deployed sign-in): the page acts on an OAuth error callback (`?error=…&error_description=…`)
 * before it checks `state`, and shows `error_description` word for word in its alert. Anyone can send an owner a
 * link to the real dashboard that makes it say whatever they like ("Your account is suspended, call …"), and an owner
 * who is signed in is shown the sign-in form instead of the dashboard. RFC 6749 4.1.2.1 returns `state` with an error
 * too: a callback whose state this tab did not start should be ignored, like a forged `?code=`, and the provider's
 * free text never shown as the dashboard's own words.
 */

const PHISHING = 'Your account is suspended. Call +1 555 0100 to restore it.';

let site: Server;
let siteUrl = '';
let browser: Browser;
let page: Page;
const identity = ephemeralIdentityProvider();

beforeAll(async () => {
  site = createServer();
  site.listen(0, '127.0.0.1');
  await once(site, 'listening');
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  const routes = dashboardRoutes({
    idp: {
      issuer: LOCAL_ISSUER,
      clientId: LOCAL_CLIENT_ID,
      jwks: identity.jwks,
      mintToken: (accountId) => identity.token(accountId),
    },
    baseUrl: siteUrl,
    signInKey: 'unused',
    config: {
      mode: 'cognito',
      // Never reached: the forged callback needs no provider.
      cognito: {
        domain: 'https://auth.invalid',
        clientId: 'dashboard-client',
        redirectUri: `${siteUrl}/`,
        scope: 'openid email',
      },
    },
  });
  site.on('request', async (req, res) => {
    for (const route of routes) if (await route(req, res)) return;
    // The API as far as the dashboard's first view needs it: the owner's session is accepted.
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify(
        req.url?.startsWith('/api/usage') ? { days: [], byKey: [] } : { balance: 7, keys: [], jobs: [] },
      ),
    );
  });
  browser = (await launchChromium()).browser;
  page = await browser.newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  site?.closeAllConnections();
  await new Promise((resolve) => site?.close(resolve));
});

const forgedCallback = () =>
  `${siteUrl}/?${new URLSearchParams({ error: 'access_denied', error_description: PHISHING, state: 'forged' })}`;

/** Which view the page settles on at `url`. */
async function viewAt(url: string): Promise<{ dashboard: boolean; signIn: boolean }> {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.getElementById('loading')?.hidden === true, { timeout: 30_000 });
  return page.evaluate(() => ({
    dashboard: !(document.getElementById('dashboard') as HTMLElement).hidden,
    signIn: !(document.getElementById('signin') as HTMLElement).hidden,
  }));
}

describe('a forged OAuth error callback to the deployed dashboard', () => {
  it("does not show the sender's text as the dashboard's own words", async () => {
    await page.goto(forgedCallback(), { waitUntil: 'load' });
    await page.waitForFunction(() => document.getElementById('loading')?.hidden === true, {
      timeout: 30_000,
    });
    const shown = await page.$eval('main', (main) => main.textContent ?? '');
    expect(shown).not.toContain(PHISHING);
  });

  it('leaves a signed-in owner on the dashboard', async () => {
    await page.goto(`${siteUrl}/config.json`, { waitUntil: 'load' });
    await page.evaluate((token) => {
      const session = { token, accountName: 'owner', expiresAt: Date.now() + 3_600_000 };
      sessionStorage.setItem('dashboard.session', JSON.stringify(session));
    }, identity.token('owner'));
    // Signed in, the dashboard shows; then the owner follows the link someone sent.
    expect(await viewAt(`${siteUrl}/`)).toEqual({ dashboard: true, signIn: false });
    expect(await viewAt(forgedCallback())).toEqual({ dashboard: true, signIn: false });
  });

  it("answers this tab's own error callback in the dashboard's words, not the provider's text", async () => {
    await page.goto(`${siteUrl}/config.json`, { waitUntil: 'load' });
    await page.evaluate(() => {
      sessionStorage.clear();
      sessionStorage.setItem('dashboard.pendingSignIn', JSON.stringify({ verifier: 'v', state: 'mine' }));
    });
    const url = `${siteUrl}/?${new URLSearchParams({ error: 'access_denied', error_description: PHISHING, state: 'mine' })}`;
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => (document.getElementById('signin-error')?.textContent ?? '') !== '', {
      timeout: 30_000,
    });
    const shown = await page.$eval('#signin-error', (element) => element.textContent ?? '');
    expect(shown).toBe('Sign-in was cancelled or refused. Please sign in again.');
  });
});
