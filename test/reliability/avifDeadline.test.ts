import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeAvif } from '../../shared/capture/avifEncoding';
import { CaptureFailedError } from '../../shared/errors';

/**
 * Red team (round 8): libaom never looks at sharp's timeout once it encodes a frame, so an AVIF of the largest page of
 * noise (3,840 x 16,384) encoded for 27 s whatever its capture's deadline, and the queue let the next encoding start
 * beside it at the deadline (two 1.6 GB encodings at once, the very thing the one-at-a-time queue is for); an
 * encoding that outran its deadline failed as ours. Now the rows encoded are cut to what fits the time left, an
 * encoding keeps its place in the queue until libaom is done, and one that still outruns its deadline is the page's.
 */

const URL = 'https://a.test/page';
const WIDTH = 3_840;
const HEIGHT = 16_384;

let noisePng: Buffer;
let smallPng: Buffer;

beforeAll(async () => {
  const raw = Buffer.allocUnsafe(WIDTH * HEIGHT * 3);
  for (let i = 0; i < raw.length; i += 4) raw.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
  noisePng = await sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
  smallPng = await sharp({ create: { width: 320, height: 320, channels: 3, background: '#0a0' } })
    .png()
    .toBuffer();
}, 120_000);

const settle = (started: number, encoding: Promise<{ image: Buffer; cut: boolean }>) =>
  encoding.then(
    (avif) => ({ afterMs: Date.now() - started, cut: avif.cut, fault: undefined }),
    (error: unknown) => {
      if (!(error instanceof CaptureFailedError)) throw error;
      return { afterMs: Date.now() - started, cut: undefined, fault: error.fault };
    },
  );

describe('an AVIF of a full page of noise with 4 s left', () => {
  it('is cut to what fits the time left, never encodes beside another, and leaves nothing running', async () => {
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, sharp.counters().process);
    }, 5);
    try {
      const started = Date.now();
      const attacker = settle(started, encodeAvif(noisePng, 80, { url: URL, deadline: started + 4_000 }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const victimStarted = Date.now();
      const victim = await settle(
        victimStarted,
        encodeAvif(smallPng, 80, { url: URL, deadline: victimStarted + 20_000 }),
      );
      const attacked = await attacker;
      const seen = JSON.stringify({ attacked, victim, most });
      // Before: the whole page encoded for about 27 s, beside the victim's, and failed as ours at 4 s.
      expect(attacked.cut ?? attacked.fault, seen).toBe(attacked.fault === undefined ? true : 'page');
      expect(attacked.afterMs, seen).toBeLessThan(15_000);
      expect(victim.cut, seen).toBe(false);
      expect(most, seen).toBeLessThanOrEqual(1);
      expect(sharp.counters().process, seen).toBe(0);
    } finally {
      clearInterval(sampler);
    }
  }, 120_000);
});
