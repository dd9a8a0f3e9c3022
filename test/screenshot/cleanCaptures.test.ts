import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { decodeRules, type IndexedCMPRuleset } from '@duckduckgo/autoconsent';
import type { Browser } from 'puppeteer-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { CONSENT_MAX_WAIT_MS, setCookieBannerBlocking } from '../../shared/capture/consentBlocking';
import { type PageHandler, type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import {
  BLUE,
  decodeImage,
  GREEN,
  near,
  RED,
  type ScreenshotHarness,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

/**
 * Clean captures through the real handler and real Chromium: cookie banners of real consent-manager libraries
 * (installed from npm, served by the test) refused or hidden with blockCookieBanners, ads and trackers blocked by the
 * shipped filter lists with blockAds, and full pages whose lazy images (native and lazysizes) are all loaded.
 */

const require = createRequire(import.meta.url);
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css' };

/** Files of an installed package, served under /vendor/<name>/. */
function vendor(name: string, files: string[]): Record<string, PageHandler> {
  return Object.fromEntries(
    files.map((file) => {
      const body = readFileSync(join(packageDir(name), file));
      const type = TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream';
      const handler: PageHandler = (_, res) => {
        res.writeHead(200, { 'Content-Type': type }).end(body);
      };
      return [`/vendor/${name}/${file}`, handler];
    }),
  );
}

/** A green page carrying a consent manager's banner. */
const consentPage = (head: string) => solidPage('#0f0', head, '<p style="margin:0;height:10px"></p>');

const CONSENT_PAGES: Record<string, string> = {
  // orestbida's vanilla-cookieconsent v3, as a bar along the bottom.
  '/consent/vanilla-cookieconsent': consentPage(`
    <link rel="stylesheet" href="/vendor/vanilla-cookieconsent/dist/cookieconsent.css">
    <script src="/vendor/vanilla-cookieconsent/dist/cookieconsent.umd.js"></script>
    <script>addEventListener('DOMContentLoaded', () => CookieConsent.run({
      // Shown to every browser, automated or not.
      hideFromBots: false,
      guiOptions: { consentModal: { layout: 'bar', position: 'bottom' } },
      categories: { necessary: { enabled: true, readOnly: true }, analytics: {} },
      language: { default: 'en', translations: { en: {
        consentModal: { title: 'We use cookies', description: 'Choose.', acceptAllBtn: 'Accept all',
          acceptNecessaryBtn: 'Reject all', showPreferencesBtn: 'Manage' },
        preferencesModal: { title: 'Preferences', acceptAllBtn: 'Accept all', acceptNecessaryBtn: 'Reject all',
          savePreferencesBtn: 'Save', sections: [] } } } } }))</script>`),
  // KIProtect's Klaro.
  '/consent/klaro': consentPage(`
    <script>window.klaroConfig = { elementID: 'klaro', storageMethod: 'cookie', acceptAll: true,
      services: [{ name: 'analytics', title: 'Analytics', purposes: ['analytics'] }] };</script>
    <script defer src="/vendor/klaro/dist/klaro.js"></script>`),
  // vanilla-cookieconsent as it is installed: its default hides the banner from automated browsers
  // (navigator.webdriver), so the banner shows only to a browser that looks like a person's.
  '/consent/vanilla-cookieconsent-bots-hidden': consentPage(`
    <link rel="stylesheet" href="/vendor/vanilla-cookieconsent/dist/cookieconsent.css">
    <script src="/vendor/vanilla-cookieconsent/dist/cookieconsent.umd.js"></script>
    <script>addEventListener('DOMContentLoaded', () => CookieConsent.run({
      guiOptions: { consentModal: { layout: 'bar', position: 'bottom' } },
      categories: { necessary: { enabled: true, readOnly: true }, analytics: {} },
      language: { default: 'en', translations: { en: {
        consentModal: { title: 'We use cookies', description: 'Choose.', acceptAllBtn: 'Accept all',
          acceptNecessaryBtn: 'Reject all', showPreferencesBtn: 'Manage' },
        preferencesModal: { title: 'Preferences', acceptAllBtn: 'Accept all', acceptNecessaryBtn: 'Reject all',
          savePreferencesBtn: 'Save', sections: [] } } } } }))</script>`),
  // tarteaucitron.js, with its alert along the bottom.
  '/consent/tarteaucitron': consentPage(`
    <script src="/vendor/tarteaucitronjs/tarteaucitron.js"></script>
    <script>tarteaucitron.init({ privacyUrl: '', orientation: 'bottom', showAlertSmall: false, cookieslist: false,
      highPrivacy: true, DenyAllCta: true, AcceptAllCta: true, mandatory: true, useExternalCss: false,
      showIcon: false });
      (tarteaucitron.job = tarteaucitron.job || []).push('youtube');</script>`),
};

let site: PageServer;
/** A second site, on 127.0.0.2, whose frames load the first one's pages. */
let adSite: PageServer;
/** The X-Campaign header of the latest request for adSite's /ads. */
let adsCampaignHeader: string | string[] | undefined;
let harness: ScreenshotHarness;
let apiKey: string;

beforeAll(async () => {
  const greenPng = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#00ff00' } })
    .png()
    .toBuffer();
  const lazyImages = Array.from({ length: 12 }, (_, i) =>
    i % 2 === 0
      ? `<img src="/green.png?n=${i}" loading="lazy" width="300" height="300" style="display:block;margin:0 0 900px">`
      : `<img data-src="/green.png?n=${i}" class="lazyload" width="300" height="300" style="display:block;margin:0 0 900px">`,
  ).join('');
  site = await startPageServer({
    ...vendor('vanilla-cookieconsent', ['dist/cookieconsent.css', 'dist/cookieconsent.umd.js']),
    ...vendor('klaro', ['dist/klaro.js']),
    ...vendor('tarteaucitronjs', [
      'tarteaucitron.js',
      'tarteaucitron.services.js',
      'lang/tarteaucitron.en.js',
      'css/tarteaucitron.css',
      'advertising.js',
    ]),
    ...vendor('lazysizes', ['lazysizes.js']),
    ...CONSENT_PAGES,
    '/drawing.svg': (_, res) => {
      res
        .writeHead(200, { 'Content-Type': 'image/svg+xml' })
        .end(
          '<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="2000"><rect width="2000" height="2000" fill="#0f0"/></svg>',
        );
    },
    '/green.png': (_, res) => {
      // Slow enough that an image requested late is still loading when the pass returns to the top.
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'image/png' }).end(greenPng), 150);
    },
    '/tracked': solidPage('#0f0', '', '<img src="/pixel.gif?event=in-frame">'),
    // On 127.0.0.1, which EasyList exempts from its generic hiding rules: four slots those rules name (AdSense's own
    // markup among them), one added by the page's script after load.
    '/slots': solidPage(
      '#0f0',
      '<style>.slot { position: fixed; width: 200px; height: 150px; background: #00f }</style>',
      `<ins class="adsbygoogle slot" data-ad-client="ca-pub-0000000000000000" data-ad-slot="1" style="left:0;top:0"></ins>
       <div id="ad_banner" class="slot" style="left:400px;top:0"></div>
       <div class="ad-slot slot" style="left:0;top:300px"></div>
       <script>addEventListener('load', () => setTimeout(() => {
         const late = document.createElement('div');
         late.className = 'top-ad slot';
         late.style.cssText = 'left:400px;top:300px';
         document.body.append(late);
       }, 50))</script>`,
    ),
    '/lazy': solidPage(
      '#f00',
      '<script src="/vendor/lazysizes/lazysizes.js" async></script>',
      `<header style="position:sticky;top:0;height:60px;background:#00f"></header><div style="height:1200px"></div>${lazyImages}`,
    ),
  });
  adSite = await startPageServer(
    {
      '/ads': (req, res) => {
        adsCampaignHeader = req.headers['x-campaign'];
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(
          solidPage(
            '#f00',
            '',
            // An element the shipped lists hide by its id, and a tracking pixel their network rules block.
            '<div id="ad_top" style="position:fixed;inset:0;background:#00f"></div><img src="/pixel.gif?event=view">',
          ),
        );
      },
      // The tracker asked for from a shared worker, of the page and of a blank frame of its own.
      '/shared-worker': solidPage(
        '#0f0',
        '',
        `<script>
          const tracker = 'fetch(self.location.origin + "/pixel.gif?event=shared-worker")';
          const frame = document.createElement('iframe');
          document.body.append(frame);
          for (const realm of [window, frame.contentWindow]) {
            try { new realm.SharedWorker(URL.createObjectURL(new Blob([tracker]))); } catch {}
          }
        </script>`,
      ),
      '/pixel.gif': (req, res) => {
        // The lists block this address whatever loads it; as the captured page itself it answers a page.
        if (req.url?.includes('as=page'))
          res.writeHead(200, { 'Content-Type': 'text/html' }).end(solidPage('#0f0'));
        else res.writeHead(200, { 'Content-Type': 'image/gif' }).end();
      },
      // Frames of another site (127.0.0.1): one whose own address the lists block, one that loads a tracker.
      '/framed': (_, res) => {
        res
          .writeHead(200, { 'Content-Type': 'text/html' })
          .end(
            solidPage(
              '#0f0',
              '',
              `<iframe src="${site.origin}/pixel.gif?event=frame" style="position:absolute;left:0;top:0;width:400px;height:300px;border:0;background:#00f"></iframe>` +
                `<iframe src="${site.origin}/tracked" style="position:absolute;left:500px;top:0;border:0"></iframe>`,
            ),
          );
      },
    },
    '127.0.0.2',
  );
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: `${site.hostPort},${adSite.hostPort}`,
    RATE_LIMIT_PER_HOUR: '1000',
    FREE_CREDITS: '1000',
    MAX_CONCURRENT_CAPTURES: '20',
  });
  ({ apiKey } = await harness.newAccount());
});

afterAll(async () => {
  await harness?.close();
  await Promise.all([site?.close(), adSite?.close()]);
});

async function shot(body: Record<string, unknown>) {
  const response = await harness.shoot(apiKey, { width: 800, height: 600, ...body });
  expect(response.status, response.body.toString().slice(0, 300)).toBe(200);
  return decodeImage(response.body);
}

/** How many requests for the tracking pixel a server has had. */
function pixelHits(server: PageServer): number {
  return server.hits.filter((hit) => hit.startsWith('/pixel.gif')).length;
}

/** Pixels of the image that are not the page's green background, sampled every 4 pixels. */
function notGreen(image: Awaited<ReturnType<typeof decodeImage>>): number {
  let count = 0;
  for (let y = 0; y < (image.height ?? 0); y += 4)
    for (let x = 0; x < (image.width ?? 0); x += 4) if (!near(image.pixel(x, y), GREEN)) count += 1;
  return count;
}

describe('blockCookieBanners', () => {
  it.each(Object.keys(CONSENT_PAGES))('shows the banner of %s without the flag', async (path) => {
    expect(notGreen(await shot({ url: `${site.origin}${path}`, delay: 500 }))).toBeGreaterThan(500);
  });

  it.each(Object.keys(CONSENT_PAGES))('captures %s without its banner with the flag', async (path) => {
    const image = await shot({ url: `${site.origin}${path}`, blockCookieBanners: true });
    expect(notGreen(image)).toBeLessThan(20);
  });

  it('shows the banner again without the flag right after captures with it (the page prepared ahead drops autoconsent)', async () => {
    const url = `${site.origin}/consent/klaro`;
    expect(notGreen(await shot({ url, blockCookieBanners: true }))).toBeLessThan(20);
    expect(notGreen(await shot({ url, delay: 500 }))).toBeGreaterThan(500);
  });

  it('does not wait for a look autoconsent cannot take (an SVG document)', async () => {
    const started = Date.now();
    const image = await shot({ url: `${site.origin}/drawing.svg`, blockCookieBanners: true });
    expect(near(image.pixel(10, 10), GREEN)).toBe(true);
    // Waiting for a look that never ends would take the whole CONSENT_MAX_WAIT_MS.
    expect(Date.now() - started).toBeLessThan(CONSENT_MAX_WAIT_MS);
  });
});

describe('blockCookieBanners, rules written for one site', () => {
  const rules = JSON.parse(
    readFileSync(require.resolve('@duckduckgo/autoconsent/rules/compact-rules.json'), 'utf8'),
  ) as IndexedCMPRuleset;
  const [genericStart, genericEnd] = rules.index.genericRuleRange;
  /** The first site rule whose site is named by the rule itself, with an address on that site. */
  const [siteRule, siteUrl] = decodeRules(rules)
    .slice(rules.index.specificRuleRange[0])
    .flatMap((rule) => {
      const url = `https://www.${rule.name}/`;
      const pattern = rule.runContext?.urlPattern;
      return pattern && rule.runContext?.main !== false && new RegExp(pattern).test(url)
        ? [[rule.name, url] as const]
        : [];
    })[0] ?? ['', ''];
  let browser: Browser;

  beforeAll(async () => {
    ({ browser } = await launchChromium([]));
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The rules the top frame was handed for a capture of `url`, read after loading a page of ours. */
  async function siteRulesFor(url: string): Promise<{ r: unknown[][] } | undefined> {
    const page = await browser.newPage();
    try {
      await setCookieBannerBlocking(page, url, true, undefined);
      await page.goto(`${site.origin}/consent/klaro`);
      const text = await page.evaluate('window.__screenshotConsent.siteRules');
      return typeof text === 'string' ? JSON.parse(text) : undefined;
    } finally {
      await page.close();
    }
  }

  it('hands the top frame the generic rules and those of the site captured', async () => {
    expect(siteUrl).not.toBe('');
    const handed = await siteRulesFor(siteUrl);
    expect(handed?.r.map((rule) => rule[1])).toContain(siteRule);
    expect(handed?.r.length).toBeGreaterThan(genericEnd - genericStart);
  });

  it('hands nothing more for a site without rules of its own', async () => {
    expect(await siteRulesFor(`${site.origin}/consent/klaro`)).toBeUndefined();
  });
});

describe('blockCookieBanners, refusing', () => {
  it('refuses what the banner lets a visitor refuse (vanilla-cookieconsent keeps only the necessary category)', async () => {
    // Runs after the banner was dealt with: blue when the consent cookie holds exactly the necessary category.
    const js = `const c = decodeURIComponent(document.cookie);
      const ok = /cc_cookie=/.test(c) && /"categories":\\["necessary"\\]/.test(c);
      document.documentElement.style.background = document.body.style.background = ok ? '#00f' : '#f00';`;
    const image = await shot({
      url: `${site.origin}/consent/vanilla-cookieconsent`,
      blockCookieBanners: true,
      js,
      delay: 300,
    });
    expect(near(image.pixel(5, 300), BLUE)).toBe(true);
  });
});

describe('blockAds', () => {
  it('shows the ad and loads the tracker without the flag', async () => {
    const before = pixelHits(adSite);
    const image = await shot({ url: `${adSite.origin}/ads` });
    expect(near(image.pixel(400, 300), BLUE)).toBe(true);
    expect(pixelHits(adSite)).toBe(before + 1);
  });

  it('hides the element the lists name, and the tracker request never reaches the server', async () => {
    const before = pixelHits(adSite);
    const image = await shot({ url: `${adSite.origin}/ads`, blockAds: true });
    expect(near(image.pixel(400, 300), RED)).toBe(true);
    expect(pixelHits(adSite)).toBe(before);
  });

  /** Red team (round 31): a shared worker is a target of its own, whose requests the page's blocking never saw. */
  it('lets no tracker request out of a shared worker', async () => {
    const before = pixelHits(adSite);
    await shot({ url: `${adSite.origin}/shared-worker`, blockAds: true, delay: 500 });
    expect(pixelHits(adSite)).toBe(before);
  });
});

describe('blockAds on a page served from loopback', () => {
  /** The slots' centres, one in each quadrant of the 800 × 600 image. */
  const SLOTS = [
    [100, 75],
    [500, 75],
    [100, 375],
    [500, 375],
  ] as const;

  it('shows the four ad slots without the flag', async () => {
    const image = await shot({ url: `${site.origin}/slots`, delay: 200 });
    for (const [x, y] of SLOTS) expect(near(image.pixel(x, y), BLUE), `${x},${y}`).toBe(true);
  });

  it('hides all four slots the generic rules name, in 20 of 20 captures run at once', async () => {
    const images = await Promise.all(
      Array.from({ length: 20 }, () => shot({ url: `${site.origin}/slots`, blockAds: true, delay: 200 })),
    );
    const shown = images.map((image) =>
      SLOTS.filter(([x, y]) => !near(image.pixel(x, y), GREEN)).map(String),
    );
    expect(shown).toEqual(images.map(() => []));
  });
});

describe('blockAds, page prepared ahead', () => {
  it('loads the tracker and shows the ad again without the flag right after captures with it', async () => {
    const url = `${adSite.origin}/ads`;
    const before = pixelHits(adSite);
    expect(near((await shot({ url, blockAds: true })).pixel(400, 300), RED)).toBe(true);
    expect(near((await shot({ url, blockAds: true })).pixel(400, 300), RED)).toBe(true);
    expect(pixelHits(adSite)).toBe(before);
    expect(near((await shot({ url })).pixel(400, 300), BLUE)).toBe(true);
    expect(pixelHits(adSite)).toBe(before + 1);
  });
});

describe('blockAds, beyond the top document', () => {
  it("blocks a frame the lists name, collapses its element, and blocks a tracker inside another site's frame", async () => {
    const before = pixelHits(site);
    const blocked = await shot({ url: `${adSite.origin}/framed`, blockAds: true });
    expect(site.hits).toContain('/tracked');
    expect(pixelHits(site)).toBe(before);
    // The refused frame's element (a blue box) is gone, as in a browser with an ad blocker.
    expect(near(blocked.pixel(200, 150), GREEN)).toBe(true);
    const loaded = await shot({ url: `${adSite.origin}/framed` });
    expect(pixelHits(site)).toBe(before + 2);
    expect(near(loaded.pixel(200, 150), BLUE)).toBe(true);
  });

  it('captures the page asked for even when the lists would block its address', async () => {
    const image = await shot({ url: `${adSite.origin}/pixel.gif?as=page`, blockAds: true });
    expect(near(image.pixel(10, 10), GREEN)).toBe(true);
  });

  it("keeps the customer's headers when it blocks requests too", async () => {
    const before = pixelHits(adSite);
    await shot({ url: `${adSite.origin}/ads`, blockAds: true, headers: { 'X-Campaign': 'spring' } });
    expect(adsCampaignHeader).toBe('spring');
    expect(pixelHits(adSite)).toBe(before);
  });
});

describe('full pages', () => {
  it('loads every lazy image, native and lazysizes, and shows the sticky header once', async () => {
    const image = await shot({ url: `${site.origin}/lazy`, fullPage: true });
    // 60 px header, 1200 px spacer, then 12 images of 300 px each followed by 900 px.
    for (let i = 0; i < 12; i++) {
      const top = 60 + 1200 + i * 1200;
      expect(near(image.pixel(150, top + 150), GREEN), `image ${i}`).toBe(true);
    }
    const headerRows = Array.from({ length: image.height ?? 0 }, (_, y) => y).filter((y) =>
      near(image.pixel(400, y), BLUE),
    );
    expect(headerRows).toEqual(Array.from({ length: 60 }, (_, y) => y));
  });
});
