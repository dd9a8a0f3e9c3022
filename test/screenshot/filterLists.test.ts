import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Request } from '@ghostery/adblocker';
import { describe, expect, it } from 'vitest';
import { ENGINE_FILE, FILTER_DIR, filterEngine, MANIFEST_FILE } from '../../shared/capture/adBlocking';

/**
 * The filter engine that ships with the project (blockAds): the file is the one its manifest names, built from the
 * lists the contract names, and it answers as those lists say. The browser side (requests never sent, elements
 * hidden) is in cleanCaptures.test.ts.
 */

const manifest = JSON.parse(readFileSync(`${FILTER_DIR}${MANIFEST_FILE}`, 'utf8')) as {
  engine: { file: string; bytes: number; sha256: string };
  lists: { title: string; version?: string; sha256: string }[];
};

describe('the shipped filter engine', () => {
  it('is the engine its manifest names', () => {
    const bytes = gunzipSync(readFileSync(`${FILTER_DIR}${ENGINE_FILE}`));
    expect(manifest.engine.file).toBe(ENGINE_FILE);
    expect(bytes.length).toBe(manifest.engine.bytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(manifest.engine.sha256);
  });

  it('is built from EasyList, EasyPrivacy and the EasyList Cookie List', () => {
    expect(manifest.lists.map((list) => list.title)).toEqual([
      'EasyList',
      'EasyPrivacy',
      'Easylist Cookie List',
    ]);
    for (const list of manifest.lists) expect(list.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('blocks trackers and ads by the lists, and lets the page itself through', async () => {
    const engine = await filterEngine();
    const from = (url: string, type: 'image' | 'script' | 'main_frame') =>
      engine.match(Request.fromRawDetails({ url, sourceUrl: 'https://news.example/', type })).match;
    expect(from('https://www.google-analytics.com/analytics.js', 'script')).toBe(true);
    expect(from('https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js', 'script')).toBe(true);
    expect(from('https://news.example/pixel.gif?event=view', 'image')).toBe(true);
    expect(from('https://news.example/', 'main_frame')).toBe(false);
    expect(from('https://news.example/hero.png', 'image')).toBe(false);
  });

  it('hides what the lists hide by id, on any site but the local machine', async () => {
    const engine = await filterEngine();
    const hidden = (url: string) =>
      engine.getCosmeticsFilters({
        url,
        hostname: new URL(url).hostname,
        domain: new URL(url).hostname,
        ids: ['ad_top'],
        classes: [],
        hrefs: [],
        getBaseRules: false,
        getInjectionRules: false,
        getExtendedRules: false,
      }).styles;
    expect(hidden('https://news.example/')).toContain('#ad_top');
    expect(hidden('http://127.0.0.1:8080/')).not.toContain('#ad_top');
  });
});
