import { describe, expect, it } from 'vitest';
import { boundedFeatures } from '../../shared/capture/adBlocking';

/**
 * Red team (round 11): what the ad and chat engines read of a page runs on the renderer process's event loop, where
 * every local capture waits. A page of 200,000 links took 0.65 s of it, twice a frame; a 2 MB URL about a second
 * (test/reliability/adBlockLongUrls.test.ts). The engines read a bounded part of a document's features.
 */
describe('the document features the cosmetic filters read', () => {
  it('are the first 10,000 of each kind, names cut to 256 characters and links to 1 KB', () => {
    const many = (prefix: string) => Array.from({ length: 200_000 }, (_, i) => `${prefix}${i}`);
    const bounded = boundedFeatures({
      classes: many('c'),
      ids: many('i'),
      hrefs: [`https://a.test/?${'x'.repeat(2_000_000)}`, ...many('https://a.test/')],
    });
    for (const values of [bounded.classes, bounded.ids, bounded.hrefs]) expect(values).toHaveLength(10_000);
    expect(bounded.hrefs[0]).toHaveLength(1024);
    expect(boundedFeatures({ classes: ['c'.repeat(8192)], ids: [], hrefs: [] }).classes[0]).toHaveLength(256);
    expect(bounded.classes.slice(0, 2)).toEqual(['c0', 'c1']);
  });

  it('leave a real page whole', () => {
    const page = { classes: ['ad-slot', 'header'], ids: ['main'], hrefs: ['https://ads.example/click'] };
    expect(boundedFeatures(page)).toEqual(page);
  });
});
