import { describe, expect, it } from 'vitest';
import { PayloadTooLargeError, ValidationError } from '../../shared/errors';
import { jsonBody } from '../../shared/http/request';
import { MAX_SCREENSHOT_BODY_BYTES } from '../../shared/screenshot/bodySize';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { creditCost } from '../../shared/screenshot/cost';
import { MAX_INJECTED_BYTES } from '../../shared/screenshot/optionFields';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { validate } from '../../shared/validation';

/**
 * The capture options' rules without a browser: validation (every bad value is a 400 whose details name the field),
 * what reaches the renderer, and the cost tiers. Their effects are proved in test/screenshot/captureOptions.test.ts.
 */

const URL = 'https://a.test/page';

/** The details of the 400 the body gets (or [] when it is valid). */
function problems(fields: Record<string, unknown>) {
  try {
    validate(screenshotRequest, { url: URL, ...fields });
    return [];
  } catch (error) {
    if (error instanceof ValidationError) return error.details;
    throw error;
  }
}

const spec = (fields: Record<string, unknown> = {}) =>
  captureSpecOf(validate(screenshotRequest, { url: URL, ...fields }));

describe('validation', () => {
  const headers = (entries: Record<string, string>) => ({ headers: entries });
  const many = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));

  it.each<[string, Record<string, unknown>, (string | number)[]]>([
    ['an empty selector', { selector: '' }, ['selector']],
    ['a selector over 512 characters', { selector: 'a'.repeat(513) }, ['selector']],
    ['a selector with fullPage', { selector: 'main', fullPage: true }, ['selector']],
    ['a scale that is not offered', { scale: 1.25 }, ['scale']],
    ['a scale above 3', { scale: 4 }, ['scale']],
    ['a scale as a string', { scale: '2' }, ['scale']],
    ['darkMode as a string', { darkMode: 'true' }, ['darkMode']],
    ['reducedMotion as a number', { reducedMotion: 1 }, ['reducedMotion']],
    ['an unknown waitUntil', { waitUntil: 'networkidle2' }, ['waitUntil']],
    ['an empty waitForSelector', { waitForSelector: '' }, ['waitForSelector']],
    ['a waitForSelector over 512 characters', { waitForSelector: 'a'.repeat(513) }, ['waitForSelector']],
    ['an empty userAgent', { userAgent: '' }, ['userAgent']],
    ['a userAgent over 512 characters', { userAgent: 'a'.repeat(513) }, ['userAgent']],
    ['a userAgent with a line break', { userAgent: 'a\r\nX-Injected: 1' }, ['userAgent']],
    ['headers as a list', { headers: [['a', 'b']] }, ['headers']],
    ['21 headers', headers(Object.fromEntries(many(21, (i) => [`x-h${i}`, 'v']))), ['headers']],
    ['a header name with a space', headers({ 'X Bad': 'v' }), ['headers', 'X Bad']],
    ['a header name with a colon', headers({ 'X-Bad:': 'v' }), ['headers', 'X-Bad:']],
    ['a header value over 1024 characters', headers({ 'X-Long': 'v'.repeat(1025) }), ['headers', 'X-Long']],
    ['a header value with CR LF', headers({ 'X-Split': 'a\r\nHost: evil' }), ['headers', 'X-Split']],
    ['a header value that is not a string', { headers: { 'X-N': 1 } }, ['headers', 'X-N']],
    ['Host', headers({ Host: 'a.test' }), ['headers', 'Host']],
    ['Cookie, in any case', headers({ cOOkie: 'a=b' }), ['headers', 'cOOkie']],
    ['Content-Length', headers({ 'Content-Length': '1' }), ['headers', 'Content-Length']],
    ['Connection', headers({ Connection: 'close' }), ['headers', 'Connection']],
    ['Keep-Alive', headers({ 'Keep-Alive': '1' }), ['headers', 'Keep-Alive']],
    ['Transfer-Encoding', headers({ 'Transfer-Encoding': 'chunked' }), ['headers', 'Transfer-Encoding']],
    ['TE', headers({ TE: 'trailers' }), ['headers', 'TE']],
    ['Trailer', headers({ Trailer: 'x' }), ['headers', 'Trailer']],
    ['Upgrade', headers({ Upgrade: 'websocket' }), ['headers', 'Upgrade']],
    ['Proxy-Authorization', headers({ 'Proxy-Authorization': 'x' }), ['headers', 'Proxy-Authorization']],
    ['Proxy-Authenticate', headers({ 'proxy-authenticate': 'x' }), ['headers', 'proxy-authenticate']],
    ['any other Proxy-*', headers({ 'Proxy-Connection': 'x' }), ['headers', 'Proxy-Connection']],
    ['51 cookies', { cookies: many(51, (i) => ({ name: `c${i}`, value: 'v' })) }, ['cookies']],
    ['a cookie without a value', { cookies: [{ name: 'a' }] }, ['cookies', 0, 'value']],
    ['a cookie with an empty name', { cookies: [{ name: '', value: 'v' }] }, ['cookies', 0, 'name']],
    ['a cookie name with =', { cookies: [{ name: 'a=b', value: 'v' }] }, ['cookies', 0, 'name']],
    ['a cookie value with ;', { cookies: [{ name: 'a', value: 'v; Domain=evil' }] }, ['cookies', 0, 'value']],
    [
      'a cookie over 4096 characters',
      { cookies: [{ name: 'a', value: 'v'.repeat(4096) }] },
      ['cookies', 0, 'value'],
    ],
    ['a cookie path without /', { cookies: [{ name: 'a', value: 'v', path: 'x' }] }, ['cookies', 0, 'path']],
    ['a cookie domain', { cookies: [{ name: 'a', value: 'v', domain: 'evil.test' }] }, ['cookies', 0]],
    [
      'an unknown sameSite',
      { cookies: [{ name: 'a', value: 'v', sameSite: 'lax' }] },
      ['cookies', 0, 'sameSite'],
    ],
    [
      'sameSite None without secure',
      { cookies: [{ name: 'a', value: 'v', sameSite: 'None' }] },
      ['cookies', 0, 'sameSite'],
    ],
    [
      'a secure cookie for a plain-http url',
      { url: 'http://a.test/', cookies: [{ name: 'a', value: 'v', secure: true }] },
      ['cookies', 0, 'secure'],
    ],
    ['cookies as a string beside a plain-http url', { url: 'http://a.test/', cookies: 'a=b' }, ['cookies']],
    ['a selector beside fullPage as a string', { selector: 'main', fullPage: 'yes' }, ['fullPage']],
    ['secure as a string', { cookies: [{ name: 'a', value: 'v', secure: 'yes' }] }, ['cookies', 0, 'secure']],
    ['a zone that does not exist', { timezone: 'Mars/Olympus' }, ['timezone']],
    ['an offset instead of a zone', { timezone: '+01:00' }, ['timezone']],
    ['an empty zone', { timezone: '' }, ['timezone']],
    ['a locale with an underscore', { locale: 'en_US' }, ['locale']],
    ['a list of locales', { locale: 'en-US,de' }, ['locale']],
    ['an empty locale', { locale: '' }, ['locale']],
    ['the undetermined locale und', { locale: 'und' }, ['locale']],
    ['und with a region', { locale: 'und-US' }, ['locale']],
    [
      'a __Host- cookie on http',
      { url: 'http://a.test/', cookies: [{ name: '__Host-id', value: 'v' }] },
      ['cookies', 0, 'secure'],
    ],
    [
      'a __Secure- cookie, in any case, without secure',
      { cookies: [{ name: '__SECURE-id', value: 'v' }] },
      ['cookies', 0, 'secure'],
    ],
    [
      'a __Host- cookie with another path',
      { cookies: [{ name: '__Host-id', value: 'v', secure: true, path: '/app' }] },
      ['cookies', 0, 'path'],
    ],
    [
      'a __Http- cookie without httpOnly',
      { cookies: [{ name: '__Http-id', value: 'v', secure: true }] },
      ['cookies', 0, 'httpOnly'],
    ],
    [
      'a __Host-Http- cookie with another path',
      { cookies: [{ name: '__Host-Http-id', value: 'v', secure: true, httpOnly: true, path: '/a' }] },
      ['cookies', 0, 'path'],
    ],
    ['an empty click', { click: '' }, ['click']],
    ['a click over 512 characters', { click: 'a'.repeat(513) }, ['click']],
    ['failOnHttpError as a string', { failOnHttpError: 'true' }, ['failOnHttpError']],
    ['blockChats as a number', { blockChats: 1 }, ['blockChats']],
    ['css over 32 KiB', { css: 'a'.repeat(MAX_INJECTED_BYTES + 1) }, ['css']],
    [
      'css over 32 KiB of UTF-8 in fewer characters',
      { css: 'é'.repeat(MAX_INJECTED_BYTES / 2 + 1) },
      ['css'],
    ],
    ['js over 32 KiB', { js: ';'.repeat(MAX_INJECTED_BYTES + 1) }, ['js']],
    ['js as a function body array', { js: ['alert(1)'] }, ['js']],
    ['blockAds as a string', { blockAds: 'yes' }, ['blockAds']],
    ['blockCookieBanners as a number', { blockCookieBanners: 1 }, ['blockCookieBanners']],
    ['51 hideSelectors', { hideSelectors: many(51, (i) => `#a${i}`) }, ['hideSelectors']],
    ['an empty hideSelector', { hideSelectors: ['#a', ''] }, ['hideSelectors', 1]],
    ['a hideSelector over 256 characters', { hideSelectors: ['a'.repeat(257)] }, ['hideSelectors', 0]],
  ])('refuses %s with a detail naming the field', (_, fields, path) => {
    const details = problems(fields);
    expect(details.map((detail) => detail.path)).toContainEqual(path);
  });

  it('accepts every option at its bounds', () => {
    const body = {
      selector: 'a'.repeat(512),
      scale: 3,
      darkMode: true,
      reducedMotion: true,
      waitUntil: 'networkidle',
      waitForSelector: 'b'.repeat(512),
      userAgent: 'u'.repeat(512),
      headers: Object.fromEntries(many(20, (i) => [`X-H${i}`, 'v'.repeat(1024)])),
      cookies: many(50, (i) => ({
        name: `c${i}`,
        value: 'v',
        path: '/p',
        secure: true,
        httpOnly: true,
        sameSite: 'None',
      })),
      timezone: 'America/Argentina/Buenos_Aires',
      locale: 'zh-Hant-TW',
      css: 'a'.repeat(MAX_INJECTED_BYTES),
      js: ';'.repeat(MAX_INJECTED_BYTES),
      hideSelectors: many(50, () => 'h'.repeat(256)),
      click: 'c'.repeat(512),
      failOnHttpError: true,
      blockChats: true,
    };
    expect(problems(body)).toEqual([]);
  });

  it('accepts prefixed cookies that meet their prefix on https', () => {
    const cookies = [
      { name: '__Secure-a', value: 'v', secure: true, path: '/app' },
      { name: '__Host-b', value: 'v', secure: true },
      { name: '__host-c', value: 'v', secure: true, path: '/' },
      { name: '__Http-d', value: 'v', secure: true, httpOnly: true },
      { name: '__Host-Http-e', value: 'v', secure: true, httpOnly: true },
      { name: '_Secure-f', value: 'v' },
    ];
    expect(problems({ cookies })).toEqual([]);
  });

  it('takes css and js of 32 KiB each in one body', () => {
    const text = JSON.stringify({
      url: URL,
      css: 'a'.repeat(MAX_INJECTED_BYTES),
      js: ';'.repeat(MAX_INJECTED_BYTES),
    });
    expect(() => jsonBody({ headers: {}, body: text }, MAX_SCREENSHOT_BODY_BYTES)()).not.toThrow();
  });

  it('answers 413 for a body over 96 KiB', () => {
    const body = JSON.stringify({ url: URL, css: 'a'.repeat(MAX_SCREENSHOT_BODY_BYTES) });
    expect(() => jsonBody({ headers: {}, body }, MAX_SCREENSHOT_BODY_BYTES)()).toThrow(PayloadTooLargeError);
    expect(MAX_SCREENSHOT_BODY_BYTES).toBe(96 * 1024);
  });
});

describe('the capture spec', () => {
  it('leaves a request without options as it was', () => {
    expect(spec()).toMatchObject({
      scale: 1,
      darkMode: false,
      reducedMotion: false,
      waitUntil: 'load',
      headers: {},
      cookies: [],
      hideSelectors: [],
      blockAds: false,
      blockCookieBanners: false,
      blockChats: false,
      failOnHttpError: false,
    });
    const { selector, waitForSelector, timezone, locale, css, js, click } = spec();
    expect([selector, waitForSelector, timezone, locale, css, js, click]).toEqual(Array(7).fill(undefined));
  });

  it("lets userAgent override the device's", () => {
    expect(spec({ device: 'mobile', userAgent: 'Mine/1.0' })).toMatchObject({
      userAgent: 'Mine/1.0',
      isMobile: true,
      width: 390,
    });
  });

  it('writes time zones and locales the way Chromium takes them', () => {
    expect(spec({ timezone: 'europe/paris', locale: 'en-us' })).toMatchObject({
      timezone: 'Europe/Paris',
      locale: 'en-US',
    });
  });
});

describe('cost tiers with scale and selector', () => {
  const cost = (fields: Record<string, unknown>) => creditCost(spec(fields));

  it.each<[string, Record<string, unknown>, number]>([
    ['1920 wide at scale 1', { width: 1920 }, 1],
    ['1920 wide at scale 2 (3840 pixels)', { width: 1920, scale: 2 }, 3],
    ['1280 wide at scale 2 (2560 pixels, not above)', { width: 1280, height: 720, scale: 2 }, 1],
    ['1280 × 720 at scale 2.5', { width: 1280, height: 720, scale: 2.5 }, 3],
    ['the mobile preset at scale 3 (1170 × 2532)', { device: 'mobile', scale: 3 }, 1],
    ['the tablet preset at scale 3 (2304 × 3072)', { device: 'tablet', scale: 3 }, 3],
    [
      'a full page at scale 1.5 under the threshold',
      { width: 1280, height: 800, fullPage: true, scale: 1.5 },
      2,
    ],
    ['a full page made high resolution by scale', { fullPage: true, scale: 2 }, 3],
    ['an element', { width: 1280, height: 800, selector: 'main' }, 1],
    [
      'an element at scale 2 under the threshold',
      { width: 1280, height: 800, selector: 'main', scale: 2 },
      1,
    ],
    ['an element made high resolution by scale', { selector: 'main', scale: 2 }, 3],
  ])('charges %s: %o → %i', (_, fields, credits) => {
    expect(cost(fields)).toBe(credits);
  });
});
