import { describe, expect, it } from 'vitest';
import { canonicalQuery, signQuery } from '../../shared/signing/signedLink';

/** The dashboard's signed-link module, as the page loads it (plain JavaScript, WebCrypto). */
const MODULE = new URL('../../web/public/signed-link.js', import.meta.url).href;
const { signedLink, signedLinkBase } = await import(MODULE);

const CDN = 'https://d111111abcdef8.cloudfront.net';
const PAGE = 'https://dashboard.example.test';

describe("the dashboard's signed links", () => {
  it('point at the signed-link CDN that config.json names (deployed)', () => {
    expect(signedLinkBase({ mode: 'cognito', signedLinkBaseUrl: CDN }, PAGE)).toBe(CDN);
    expect(signedLinkBase({ mode: 'cognito', signedLinkBaseUrl: `${CDN}/` }, PAGE)).toBe(CDN);
  });

  it("point at the page's own origin, the API, locally or when config.json names no CDN", () => {
    expect(signedLinkBase({ mode: 'local' }, 'http://127.0.0.1:3000')).toBe('http://127.0.0.1:3000');
    expect(signedLinkBase(undefined, PAGE)).toBe(PAGE);
  });

  it('never point at anything but an https origin, whatever config.json holds', () => {
    for (const hostile of [
      'javascript:alert(1)',
      'http://cdn.example.test',
      '//cdn.example.test',
      42,
      null,
    ]) {
      expect(signedLinkBase({ mode: 'cognito', signedLinkBaseUrl: hostile }, PAGE)).toBe(PAGE);
    }
  });

  it('are signed as the service verifies them, on the base given', async () => {
    const link = new URL(
      await signedLink(CDN, 'key_abc', 'ss_live_secret', { url: 'https://example.com', width: 800 }),
    );
    expect(link.origin).toBe(CDN);
    expect(link.pathname).toBe('/api/screenshot');
    const { signature, ...rest } = Object.fromEntries(link.searchParams);
    expect(signature).toBe(signQuery('ss_live_secret', canonicalQuery(rest)));
    expect(rest).toEqual({ keyId: 'key_abc', url: 'https://example.com', width: '800' });
  });
});
