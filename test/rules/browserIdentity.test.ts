import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCEPT_LANGUAGE, identityOverride } from '../../shared/capture/browserIdentity';
import { DEVICE_PRESETS } from '../../shared/capture/devices';

/**
 * What a page is told about its browser, without a browser: client hints that match the user agent, the platform
 * it names, and US English unless a locale is given. The browser side is in test/screenshot/captureControls.test.ts.
 */

const EDGE =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/147.0.0.0 Safari/537.36 Edg/147.0.3000.1';

describe('identityOverride', () => {
  it("gives the desktop preset Chrome's brands on Windows, in US English", () => {
    const identity = identityOverride(DEVICE_PRESETS.desktop.userAgent, undefined);
    expect(identity.acceptLanguage).toBe(DEFAULT_ACCEPT_LANGUAGE);
    expect(identity.platform).toBe('Win32');
    expect(identity.userAgentMetadata?.brands?.map((brand) => brand.brand)).toEqual([
      'Chromium',
      'Google Chrome',
      'Not/A)Brand',
    ]);
    expect(identity.userAgentMetadata).toMatchObject({ platform: 'Windows', mobile: false });
  });

  it('gives Safari user agents no client hints, and the platform they name', () => {
    const phone = identityOverride(DEVICE_PRESETS.mobile.userAgent, 'fr-FR');
    expect(phone.userAgentMetadata).toBeUndefined();
    expect(phone.platform).toBe('iPhone');
    expect(phone.acceptLanguage).toBe('fr-FR');
    expect(identityOverride(DEVICE_PRESETS.tablet.userAgent, undefined).platform).toBe('iPad');
  });

  it('names Edge by its own brand and version, on macOS', () => {
    const identity = identityOverride(EDGE, undefined);
    expect(identity.userAgentMetadata?.brands?.[1]).toEqual({ brand: 'Microsoft Edge', version: '147' });
    expect(identity.userAgentMetadata?.fullVersion).toBe('147.0.3000.1');
    expect(identity.userAgentMetadata?.platform).toBe('macOS');
  });

  it('makes up no hints for a user agent that calls itself headless, nor for one of no known browser', () => {
    expect(
      identityOverride('Mozilla/5.0 HeadlessChrome/147.0.0.0', undefined).userAgentMetadata,
    ).toBeUndefined();
    const bot = identityOverride('TestAgent/1.0', undefined);
    expect(bot.userAgentMetadata).toBeUndefined();
    expect(bot.platform).toBeUndefined();
  });
});
