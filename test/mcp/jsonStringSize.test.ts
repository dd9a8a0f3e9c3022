import { describe, expect, it } from 'vitest';
import { exceedsAsJsonString } from '../../shared/mcp/mcpRoute';

/** How get_page_markdown's answer is measured against its limit (markdownAnswerSize.test.ts has the call itself). */

describe('exceedsAsJsonString', () => {
  it.each([
    ['plain', 'Some words.'],
    ['escapes', 'a "quote", a \\ backslash, \b\t\n\f\r and \u0001\u001f controls'],
    ['non-ASCII', 'äöü 漢字 😀 \u2028 \u007f'],
  ])('measures %s text as JSON writes it, exactly at the limit', (_, text) => {
    const bytes = Buffer.byteLength(JSON.stringify(text)) - 2;
    expect(exceedsAsJsonString(Buffer.from(text), bytes)).toBe(false);
    expect(exceedsAsJsonString(Buffer.from(text), bytes - 1)).toBe(true);
  });

  /**
   * Red team (round 20): a page's 60 MB Markdown asked for through get_page_markdown was measured byte by byte, the whole
   * of it, before it was refused: up to 190 MiB walked on the front's event loop (3.9 s), which stalled every other
   * account's requests for up to 1.9 s each call. Fixed: a text longer than the limit is refused unread, one short
   * enough that six bytes a character fit is accepted unread, and a walk stops one byte past the limit.
   */
  it('reads no more of the text than it takes to pass the limit', () => {
    const limit = 1_000;
    const read = (text: Buffer) => {
      let reads = 0;
      const counted = new Proxy(text, {
        get: (target, key) => {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, target);
        },
      });
      return { exceeds: exceedsAsJsonString(counted, limit), reads };
    };
    // Control characters, six bytes each: over the limit after 167 of them, whatever follows.
    expect(read(Buffer.alloc(limit, 1))).toEqual({ exceeds: true, reads: 167 });
    expect(read(Buffer.alloc(10 * limit, 1))).toEqual({ exceeds: true, reads: 0 });
    expect(read(Buffer.alloc(Math.floor(limit / 6), 1))).toEqual({ exceeds: false, reads: 0 });
    // Plain text under the limit is read whole: no more than the limit.
    expect(read(Buffer.alloc(limit, 'a'))).toEqual({ exceeds: false, reads: limit });
  });
});
