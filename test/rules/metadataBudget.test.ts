import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_METADATA_BYTES, metadataBytes, withinMetadataBudget } from '../../shared/capture/metadataBudget';
import { MAX_METADATA_PROPERTIES, MAX_METADATA_TEXT, type PageMetadata } from '../../shared/capture/renderer';

/**
 * The page metadata's byte budget (docs/api.md 17.2): whatever a page says, one capture's metadata stays within
 * MAX_METADATA_BYTES as JSON, loses only what does not fit, and an honest page's is untouched.
 */

/** Characters that weigh 1 to 6 bytes once in JSON: plain, escaped, control, accented, astral, lone surrogate. */
const unit = fc.constantFrom('a', '"', '\\', '\u0001', 'é', '語', '😀', '\ud800');
/** Short strings as most pages write them, and strings of any length up to the bound, as hostile ones do. */
const text = (maxLength: number) =>
  fc.oneof(fc.string({ unit, maxLength }), fc.string({ unit, maxLength, size: 'max' }));
const nullableText = fc.option(text(MAX_METADATA_TEXT), { nil: null });
const properties = fc.dictionary(text(128), text(MAX_METADATA_TEXT), {
  maxKeys: MAX_METADATA_PROPERTIES,
});
const metadata: fc.Arbitrary<PageMetadata> = fc.record({
  title: nullableText,
  description: nullableText,
  lang: nullableText,
  canonicalUrl: nullableText,
  finalUrl: fc.option(text(40_000), { nil: null }),
  statusCode: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
  favicon: nullableText,
  openGraph: properties,
  twitter: properties,
});

const TEXTS = ['title', 'description', 'lang', 'canonicalUrl', 'favicon'] as const;
const honest: PageMetadata = {
  title: 'Card title',
  description: 'A page that describes itself',
  lang: 'fr-CA',
  canonicalUrl: 'https://example.com/canonical',
  finalUrl: 'https://example.com/meta',
  statusCode: 200,
  favicon: 'https://example.com/icon.png',
  openGraph: { title: 'OG title', image: 'https://cdn.example/card.png' },
  twitter: { card: 'summary_large_image' },
};
/** `count` properties `p<i>` of `length` characters each. */
const swollen = (count: number, length: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, 'v'.repeat(length)]));

describe('the metadata budget', () => {
  it('keeps any metadata within its bytes, cutting only from the end of what the page said', () => {
    fc.assert(
      fc.property(metadata, (said) => {
        const kept = withinMetadataBudget(said);
        expect(metadataBytes(kept)).toBeLessThanOrEqual(MAX_METADATA_BYTES);
        if (metadataBytes(said) <= MAX_METADATA_BYTES) expect(kept).toBe(said);
        expect(kept.statusCode).toBe(said.statusCode);
        expect([said.finalUrl, null]).toContain(kept.finalUrl);
        for (const field of TEXTS) {
          const value = kept[field];
          if (value !== null) expect(said[field]?.startsWith(value)).toBe(true);
        }
        const og = Object.entries(kept.openGraph);
        const twitter = Object.entries(kept.twitter);
        expect(og).toEqual(Object.entries(said.openGraph).slice(0, og.length));
        expect(twitter).toEqual(Object.entries(said.twitter).slice(0, twitter.length));
        // Twitter's are kept only after every Open Graph property.
        if (twitter.length) expect(og).toHaveLength(Object.keys(said.openGraph).length);
      }),
      { numRuns: 300, endOnFailure: true },
    );
  });

  it('drops no property that would have fitted', () => {
    fc.assert(
      fc.property(metadata, (said) => {
        const kept = withinMetadataBudget(said);
        const next = [
          ...Object.entries(said.openGraph).map(([key, value]) => ['openGraph', key, value] as const),
          ...Object.entries(said.twitter).map(([key, value]) => ['twitter', key, value] as const),
        ][Object.keys(kept.openGraph).length + Object.keys(kept.twitter).length];
        if (!next) return;
        const [group, key, value] = next;
        const withNext = { ...kept, [group]: { ...kept[group], [key]: value } };
        expect(metadataBytes(withNext)).toBeGreaterThan(MAX_METADATA_BYTES);
      }),
      { numRuns: 200, endOnFailure: true },
    );
  });

  it("leaves an honest page's metadata as it is", () => {
    expect(withinMetadataBudget(honest)).toBe(honest);
  });

  it('keeps the first Open Graph properties of a swollen page, and its strings whole', () => {
    const kept = withinMetadataBudget({
      ...honest,
      title: 'T'.repeat(MAX_METADATA_TEXT),
      openGraph: swollen(MAX_METADATA_PROPERTIES, MAX_METADATA_TEXT),
      twitter: swollen(MAX_METADATA_PROPERTIES, MAX_METADATA_TEXT),
    });
    expect(kept.title).toHaveLength(MAX_METADATA_TEXT);
    expect(Object.keys(kept.openGraph)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5']);
    expect(kept.twitter).toEqual({});
    expect(metadataBytes(kept)).toBeLessThanOrEqual(MAX_METADATA_BYTES);
  });

  it('gives a final URL that cannot fit as null, never cut short', () => {
    const finalUrl = `https://example.com/${'a'.repeat(500_000)}`;
    const kept = withinMetadataBudget({ ...honest, finalUrl });
    expect(kept.finalUrl).toBeNull();
    expect(kept.title).toBeNull();
    expect(kept.openGraph).toEqual(honest.openGraph);
  });

  it('halves the heaviest string first, and never inside a surrogate pair', () => {
    const title = '😀'.repeat(MAX_METADATA_TEXT / 2);
    const kept = withinMetadataBudget({ ...honest, title, description: '\u0001'.repeat(MAX_METADATA_TEXT) });
    expect(metadataBytes(kept)).toBeLessThanOrEqual(MAX_METADATA_BYTES);
    expect(kept.title).toBe(title);
    expect(kept.description).toBe('\u0001'.repeat(MAX_METADATA_TEXT / 2));
    expect(kept).toMatchObject({
      finalUrl: honest.finalUrl,
      openGraph: honest.openGraph,
      twitter: honest.twitter,
    });
    const astral = withinMetadataBudget({ ...honest, title: `a${'😀'.repeat(40_000)}` });
    expect(astral.title?.length).toBeLessThan(MAX_METADATA_BYTES);
    expect(astral.title).toMatch(/^a(?:😀)*$/u);
  });
});
