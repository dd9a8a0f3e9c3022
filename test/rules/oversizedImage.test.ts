import { describe, expect, it } from 'vitest';
import { assertDeliverable, IMAGE_TOO_LARGE, type ImageEncoding } from '../../shared/capture/oversizedImage';
import { MAX_ANSWER_BYTES } from '../../shared/capture/rendererProtocol';

/**
 * How a region that could outweigh what the front takes is measured before it is taken whole (oversizedImage.ts).
 * Red team (round 21): a WebP of more than 94 million pixels was measured in WebP strips and then encoded whole, two
 * runs of Chromium's slowest encoder: a plain gradient page failed at its 30 s budget every time, blamed on scripts it
 * did not have. Fixed: a JPEG or WebP is measured as the fastest PNG first, which weighs more than either.
 */

/** 3840 x 3840 at scale 3: 132.7 million pixels, past the one-screenshot bound. */
const LARGE = { width: 3840, height: 3840, scale: 3 };
const WEBP: ImageEncoding = { type: 'webp', quality: 80, optimizeForSpeed: false, omitBackground: false };

/** A strip shooter that weighs each strip by `bytesPerStrip(encoding)`, and records the encodings it was asked for. */
function strips(bytesPerStrip: (as: ImageEncoding) => number) {
  const asked: ImageEncoding['type'][] = [];
  const shoot = async (_strip: { y: number; height: number }, as: ImageEncoding) => {
    asked.push(as.type);
    return new Uint8Array(bytesPerStrip(as));
  };
  return { asked, shoot };
}

describe('a region measured before it is taken', () => {
  it('is not measured when it cannot outweigh one screenshot', async () => {
    const { asked, shoot } = strips(() => 1);
    await assertDeliverable({ width: 1920, height: 1080, scale: 1 }, 'https://a.test/', WEBP, shoot);
    expect(asked).toEqual([]);
  });

  it('is measured once, as the fastest PNG, for a WebP that PNG finds light enough', async () => {
    const { asked, shoot } = strips(() => 1_000);
    await assertDeliverable(LARGE, 'https://a.test/', WEBP, shoot);
    expect(asked.length).toBeGreaterThan(1);
    expect(new Set(asked)).toEqual(new Set(['png']));
  });

  it('is measured again as asked when PNG finds it too heavy, and passes when the WebP is light enough', async () => {
    const { asked, shoot } = strips((as) => (as.type === 'png' ? MAX_ANSWER_BYTES : 1_000));
    await assertDeliverable(LARGE, 'https://a.test/', WEBP, shoot);
    // The PNG pass gave up at its second strip.
    expect(asked.slice(0, 2)).toEqual(['png', 'png']);
    expect(new Set(asked.slice(2))).toEqual(new Set(['webp']));
  });

  it('is refused as the page’s when it is too heavy as asked', async () => {
    const { shoot } = strips(() => MAX_ANSWER_BYTES);
    await expect(assertDeliverable(LARGE, 'https://a.test/', WEBP, shoot)).rejects.toMatchObject({
      reason: IMAGE_TOO_LARGE,
    });
  });

  it('is measured as asked, once, for a PNG', async () => {
    const png: ImageEncoding = { type: 'png', optimizeForSpeed: true, omitBackground: true };
    const seen: ImageEncoding[] = [];
    await assertDeliverable(LARGE, 'https://a.test/', png, async (_strip, as) => {
      seen.push(as);
      return new Uint8Array(1_000);
    });
    expect(seen.every((as) => as === png)).toBe(true);
  });
});
