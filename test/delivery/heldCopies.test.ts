import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_IMAGE_BUCKET } from '../../local/embeddedS3';
import { S3ImageStore } from '../../shared/store/s3ImageStore';
import { imageInfo, localS3Client, startTestDelivery } from '../helpers/store';

/**
 * Reads of a stored image while an earlier read's bytes are still held (an answer still being sent) share that copy
 * (shared/store/heldCopies.ts), and never outlive the version they were read from; a read bounded in size leaves a
 * larger object unread. Real local S3 API (s3rver behind the signature gate).
 */

let delivery: Awaited<ReturnType<typeof startTestDelivery>>;
let images: S3ImageStore;

beforeAll(async () => {
  delivery = await startTestDelivery();
  images = new S3ImageStore(localS3Client(delivery.s3), LOCAL_IMAGE_BUCKET);
});

afterAll(async () => {
  await delivery?.close();
});

describe('reads of a stored image', () => {
  it('leave an object over the size asked for unread: its info comes alone, and the next read still works', async () => {
    const key = 'images/cache/acct/large';
    const bytes = randomBytes(256 * 1024);
    await images.put(key, bytes, imageInfo(bytes, '"large"'));
    const over = await images.get(key, bytes.length - 1);
    expect(over).toEqual({ info: expect.objectContaining({ etag: '"large"', bytes: bytes.length }) });
    expect(over?.image).toBeUndefined();
    expect((await images.get(key, bytes.length))?.image?.equals(bytes)).toBe(true);
    expect((await images.get(key))?.image?.equals(bytes)).toBe(true);
  });

  it("let go of the local S3 API's answer they leave unread", async () => {
    // The gate piped s3rver's answer to a client that left mid-answer: s3rver's side stayed open, and it never closed.
    const own = await startTestDelivery();
    const store = new S3ImageStore(localS3Client(own.s3), LOCAL_IMAGE_BUCKET);
    const bytes = randomBytes(8 * 1024 * 1024);
    await store.put('images/cache/acct/unread', bytes, imageInfo(bytes, '"unread"'));
    expect((await store.get('images/cache/acct/unread', 1024))?.image).toBeUndefined();
    const closed = own.close().then(() => 'closed');
    const held = new Promise((resolve) => setTimeout(resolve, 10_000, 'still open'));
    expect(await Promise.race([closed, held])).toBe('closed');
  });

  it('share the copy an earlier read still holds, and read a new version anew', async () => {
    const key = 'images/cache/acct/entry';
    const first = randomBytes(64 * 1024);
    await images.put(key, first, imageInfo(first, '"one"'));
    const held = await images.get(key);
    const again = await images.get(key);
    expect(held?.image?.equals(first)).toBe(true);
    expect(again?.image).toBe(held?.image);

    // Captured again: other bytes under the same key.
    const second = randomBytes(64 * 1024);
    await images.put(key, second, imageInfo(second, '"two"'));
    const fresh = await images.get(key);
    expect(fresh?.image?.equals(second)).toBe(true);
    expect(fresh?.info.etag).toBe('"two"');
    // The earlier answer's copy is left as it was.
    expect(held?.image?.equals(first)).toBe(true);
  });

  it('keep the stored facts of each read, also of the same bytes written again', async () => {
    const key = 'images/cache/acct/rewritten';
    const bytes = randomBytes(1024);
    const older = { ...imageInfo(bytes, '"same"'), storedAt: 1_000 };
    await images.put(key, bytes, older);
    const held = await images.get(key);
    await images.put(key, bytes, { ...older, storedAt: 2_000 });
    const later = await images.get(key);
    expect(later?.image).toBe(held?.image);
    expect(later?.info.storedAt).toBe(2_000);
  });
});
