import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CANONICAL_LINK_QUERY_SOURCE } from '../../infra/canonicalLinkQuery';
import { canonicalQuery, rfc3986 } from '../../shared/signing/signedLink';

/**
 * The signed-link CDN's viewer-request function (infra/canonicalLinkQuery.ts), its very source text run here as
 * CloudFront would run it: every spelling of a link the API accepts (any order, escapes of characters that need none,
 * lower-case escapes, an upper-case signature) becomes the one query docs/api.md 15.3 prescribes, which the API reads
 * as the same parameters. Red team (round 13): each spelling was a cache key of its own, so a link's hits could be
 * sent to the API at will.
 */

interface ViewerRequest {
  querystring: unknown;
  rawQueryString(): string | undefined;
}

const handler = new Function(`${CANONICAL_LINK_QUERY_SOURCE}; return handler;`)() as (event: {
  request: ViewerRequest;
}) => ViewerRequest;

/** The query the origin (and the cache key) gets for a viewer's raw query. */
function atTheEdge(raw: string | undefined): unknown {
  const querystring = { parsed: 'as CloudFront parsed it' };
  return handler({ request: { querystring, rawQueryString: () => raw } }).querystring;
}

/** Another spelling of an encoded text: escapes in lower case, and some characters that need none escaped. */
function respelt(encoded: string, escapeUnreserved: boolean, lowerCase: boolean): string {
  const spelt = escapeUnreserved
    ? encoded.replace(/%[0-9A-F]{2}|[A-Za-z0-9\-._~]/g, (found) =>
        found.length === 3 ? found : `%${found.charCodeAt(0).toString(16).toUpperCase()}`,
      )
    : encoded;
  return lowerCase ? spelt.replace(/%[0-9A-F]{2}/g, (escaped) => escaped.toLowerCase()) : spelt;
}

const HEX = '0123456789abcdef';
const linkQuery = fc.record({
  params: fc.dictionary(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((name) => name !== 'signature'),
    fc.string({ unit: 'grapheme', maxLength: 24 }),
    { minKeys: 1, maxKeys: 6 },
  ),
  signature: fc.string({ unit: fc.constantFrom(...HEX, ...HEX.toUpperCase()), minLength: 64, maxLength: 64 }),
  order: fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
  escapeUnreserved: fc.boolean(),
  lowerCase: fc.boolean(),
  // Extra `&` before each pair and at the end: empty segments, which the API skips.
  gaps: fc.infiniteStream(fc.constantFrom(0, 0, 0, 1, 2)),
});

describe('the signed-link CDN, before its cache', () => {
  it('puts every spelling of a link in the documented form, which reads as the same parameters', () => {
    fc.assert(
      fc.property(linkQuery, ({ params, signature, order, escapeUnreserved, lowerCase, gaps }) => {
        const pairs = [...Object.entries(params), ['signature', signature] as [string, string]]
          .map(([name, value]) => `${rfc3986(name)}=${rfc3986(value)}`)
          .map((pair) => respelt(pair, escapeUnreserved, lowerCase))
          .map((pair) => [pair, order.next().value] as const)
          .sort(([, a], [, b]) => a - b)
          .map(([pair]) => pair);
        const raw = pairs.map((pair) => `${'&'.repeat(gaps.next().value)}${pair}`).join('&');
        const canonical = `${canonicalQuery(params)}&signature=${signature.toLowerCase()}`;
        expect(atTheEdge(`${raw}${'&'.repeat(gaps.next().value)}`)).toBe(canonical);
        // What the API reads from it: the same names and values.
        expect(Object.fromEntries(new URLSearchParams(canonical))).toEqual({
          ...params,
          signature: signature.toLowerCase(),
        });
      }),
    );
  });

  it('leaves the documented form as it is', () => {
    const query = `${canonicalQuery({ url: 'https://example.com/a b?c=d', width: '800', keyId: 'k1' })}&signature=${'ab'.repeat(32)}`;
    expect(atTheEdge(query)).toBe(query);
  });

  it('drops empty segments, as the API does (red team, round 20: `&&` made a raw query of any link)', () => {
    const query = `${canonicalQuery({ width: '800', keyId: 'k1' })}&signature=${'ab'.repeat(32)}`;
    for (const raw of [
      `&${query}`,
      `${query}&`,
      query.replace('&', '&&'),
      `&&${query.replace('&', '&&&')}&&`,
    ]) {
      expect(atTheEdge(raw), raw).toBe(query);
    }
  });

  it('leaves what it cannot read as the API would to the API', () => {
    const parsed = { parsed: 'as CloudFront parsed it' };
    for (const raw of [
      undefined,
      '',
      'url=https://example.com/a+b&signature=ab',
      'width=800&width=900&signature=ab',
      'width=800&signature=ab&signature=cd',
      '&&',
      'width&signature=ab',
      '=800&signature=ab',
      'url=%E0%A4%A&signature=ab',
      'url=%ED%A0%80&signature=ab',
    ]) {
      expect(atTheEdge(raw), String(raw)).toEqual(parsed);
    }
  });
});
