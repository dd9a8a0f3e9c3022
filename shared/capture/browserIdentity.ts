import type { Protocol } from 'puppeteer-core';

/**
 * What a page learns about the browser that loads it: the user agent, its client hints (navigator.userAgentData
 * and the Sec-CH-UA* request headers), navigator.platform and Accept-Language. Every capture looks like a regular
 * browser: Chromium's headless shell would name itself `HeadlessChrome` in the hints, and send no Accept-Language at
 * all, and pages that hide things from automated browsers (consent managers, for one) read exactly that.
 * (`navigator.webdriver` is turned off by a launch flag, chromiumLaunch.ts.)
 */

/** Accept-Language and navigator.languages unless the request names a `locale`: a US English browser. */
export const DEFAULT_ACCEPT_LANGUAGE = 'en-US,en';

/** The user-agent override of a page, sent once when the page is prepared (or when a capture wants another). */
export function identityOverride(
  userAgent: string,
  locale: string | undefined,
): Protocol.Emulation.SetUserAgentOverrideRequest {
  const platform = PLATFORMS.find(({ token }) => userAgent.includes(token));
  const metadata = chromiumMetadata(userAgent, platform?.hint);
  return {
    userAgent,
    // Chromium adds the q-values: `en-US,en` is sent as `en-US,en;q=0.9`.
    acceptLanguage: locale ?? DEFAULT_ACCEPT_LANGUAGE,
    ...(platform ? { platform: platform.navigator } : {}),
    ...(metadata ? { userAgentMetadata: metadata } : {}),
  };
}

/** A user agent's platform: how navigator.platform and the Sec-CH-UA-Platform hint name it. First match wins. */
const PLATFORMS = [
  { token: 'iPhone', navigator: 'iPhone', hint: 'iOS' },
  { token: 'iPad', navigator: 'iPad', hint: 'iOS' },
  { token: 'Android', navigator: 'Linux armv8l', hint: 'Android' },
  { token: 'Windows', navigator: 'Win32', hint: 'Windows' },
  { token: 'Macintosh', navigator: 'MacIntel', hint: 'macOS' },
  { token: 'CrOS', navigator: 'Linux x86_64', hint: 'Chrome OS' },
  { token: 'Linux', navigator: 'Linux x86_64', hint: 'Linux' },
] as const;

/**
 * Client hints for a Chromium user agent (Chrome, or Edge with its own brand), in the form Chrome sends them. Other
 * browsers (Safari, Firefox) send none, and with no metadata Chromium sends none either.
 */
function chromiumMetadata(
  userAgent: string,
  platform: string | undefined,
): Protocol.Emulation.UserAgentMetadata | undefined {
  const chrome = /\bChrome\/((\d+)[\d.]*)/.exec(userAgent);
  if (!chrome || /Headless/i.test(userAgent)) return undefined;
  const [, fullVersion = '', major = ''] = chrome;
  const edge = /\bEdg\/((\d+)[\d.]*)/.exec(userAgent);
  const brand = edge
    ? { brand: 'Microsoft Edge', major: edge[2] ?? major, full: edge[1] ?? fullVersion }
    : { brand: 'Google Chrome', major, full: fullVersion };
  return {
    brands: [
      { brand: 'Chromium', version: major },
      { brand: brand.brand, version: brand.major },
      { brand: 'Not/A)Brand', version: '24' },
    ],
    fullVersionList: [
      { brand: 'Chromium', version: fullVersion },
      { brand: brand.brand, version: brand.full },
      { brand: 'Not/A)Brand', version: '24.0.0.0' },
    ],
    fullVersion: brand.full,
    platform: platform ?? '',
    platformVersion: '',
    architecture: /\b(?:arm|aarch64)/i.test(userAgent) ? 'arm' : 'x86',
    model: '',
    mobile: /\bMobile\b/.test(userAgent),
  };
}
