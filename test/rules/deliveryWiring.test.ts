import { describe, expect, it } from 'vitest';
import { linkTimes } from '../../shared/delivery/imageStore';
import { createDeliveryPorts } from '../../shared/wiring/delivery';

/**
 * A function the stack gave no bucket or key: a bucket name is global, so none is made up (red team: the MCP front
 * had no IMAGE_BUCKET and would have stored into "screenshot-images", whoever owns it), and nothing is sealed in
 * clear. Every use fails loudly instead.
 */
describe('delivery ports without their settings', () => {
  const { images, cipher } = createDeliveryPorts({});

  it('store and read no image', async () => {
    const info = { contentType: 'image/png' } as Parameters<typeof images.put>[2];
    await expect(images.put('images/cache/a', Buffer.from('x'), info)).rejects.toThrow(/IMAGE_BUCKET/);
    await expect(images.get('images/cache/a')).rejects.toThrow(/IMAGE_BUCKET/);
    await expect(images.head('images/cache/a')).rejects.toThrow(/IMAGE_BUCKET/);
    await expect(images.signedUrl('images/cache/a', linkTimes(Date.now(), 60))).rejects.toThrow(
      /IMAGE_BUCKET/,
    );
  });

  it('seal and open no secret', async () => {
    await expect(cipher.seal('secret', 'key_1')).rejects.toThrow(/SIGNING_KMS_KEY_ID/);
  });
});
