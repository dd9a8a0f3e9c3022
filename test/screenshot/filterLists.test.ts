import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Request } from '@ghostery/adblocker';
import { describe, expect, it } from 'vitest';
import { FILTER_DIR, FILTER_SETS, type FilterSet, filterEngine } from '../../shared/capture/adBlocking';

/**
 * The filter engines that ship with the project (blockAds, blockChats): each file is the one its manifest names,
 * built from the lists the contract names, and it answers as those lists say. The browser side (requests never
 * sent, elements hidden) is in cleanCaptures.test.ts.
 */

interface Manifest {
  engine: { file: string; bytes: number; sha256: string };
  lists: { title: string; version?: string; sha256: string }[];
}
const manifestOf = (set: FilterSet) =>
  JSON.parse(readFileSync(`${FILTER_DIR}${FILTER_SETS[set].manifest}`, 'utf8')) as Manifest;
const manifest = manifestOf('ads');

describe('the shipped filter engines', () => {
  it.each(Object.keys(FILTER_SETS) as FilterSet[])('%s is the engine its manifest names', (set) => {
    const bytes = gunzipSync(readFileSync(`${FILTER_DIR}${FILTER_SETS[set].engine}`));
    const { engine } = manifestOf(set);
    expect(engine.file).toBe(FILTER_SETS[set].engine);
    expect(bytes.length).toBe(engine.bytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(engine.sha256);
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

  // Captures do not take the exemption: a loopback page is matched as a site of its own (cleanCaptures.test.ts).
  it('hides what the lists hide by id, on any site; the lists themselves exempt the local machine', async () => {
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

  it("blocks the chat widgets' scripts by Fanboy's Anti-Chat List, and only those", async () => {
    expect(manifestOf('chats').lists.map((list) => list.title)).toEqual(["Fanboy's Anti-Chat List"]);
    const engine = await filterEngine('chats');
    const from = (url: string) =>
      engine.match(Request.fromRawDetails({ url, sourceUrl: 'https://shop.example/', type: 'script' })).match;
    for (const widget of [
      'https://widget.intercom.io/widget/abc123',
      'https://js.driftt.com/include/1/abc.js',
      'https://static.zdassets.com/web_widget/latest/web-widget-main.js',
      'https://client.crisp.chat/l.js',
      'https://js.hubspot.com/livechat-public/v1/embed.js',
      'https://embed.tawk.to/abc/default',
      'https://cdn.livechatinc.com/tracking.js',
    ]) {
      expect(from(widget), widget).toBe(true);
    }
    expect(from('https://shop.example/app.js')).toBe(false);
    expect(from('https://www.google-analytics.com/analytics.js')).toBe(false);
  });
});
