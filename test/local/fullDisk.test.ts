import { mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diskRoom } from '../../local/diskSpace';
import { startEmbeddedDynamo } from '../../local/embeddedDynamo';
import { startEmbeddedS3 } from '../../local/embeddedS3';
import { StoreUnavailableError } from '../../shared/errors';
import { S3ImageStore } from '../../shared/store/s3ImageStore';
import { translateStoreOutages } from '../../shared/store/storeUnavailable';
import { imageInfo, localS3Client } from '../helpers/store';

/**
 * Red team (round 27): the local table (dynalite on LevelDB) and S3 API (s3rver) write under DATA_DIR inside the
 * server's process, and a write that found the disk full ended it: LevelDB's error thrown out of dynalite's callback,
 * s3rver's file stream with no error handler. Their gates now refuse writes while the disk has no room, which the
 * clients answer as the store being unavailable (503), and take them again once it has. Real dynalite and s3rver
 * behind their gates; the disk's room is what the test says (a disk cannot be filled here), and read with statfs in
 * the last test.
 */

let dataDir: string;
let room = true;
/** The sizes of the writes the gates asked room for. */
const asked: number[] = [];
const testRoom = async (bytes: number) => {
  asked.push(bytes);
  return room ? () => undefined : undefined;
};

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'full-disk-'));
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('the local table on a full disk', () => {
  it('refuses writes as unavailable and still reads, then writes again once there is room', async () => {
    room = true;
    const store = await startEmbeddedDynamo({ dataDir, tableName: 'full-disk', diskRoom: testRoom });
    translateStoreOutages(store.client);
    const Key = { pk: { S: 'ACCOUNT#a' }, sk: { S: 'ACCOUNT' } };
    const put = (credits: string) =>
      store.client.send(
        new PutItemCommand({ TableName: 'full-disk', Item: { ...Key, credits: { N: credits } } }),
      );
    const read = async () =>
      (await store.client.send(new GetItemCommand({ TableName: 'full-disk', Key }))).Item?.credits?.N;
    try {
      await put('1');
      room = false;
      await expect(put('2')).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await read()).toBe('1');
      room = true;
      await put('3');
      expect(await read()).toBe('3');
    } finally {
      await store.close();
    }
  });
});

describe('the local S3 API on a full disk', () => {
  it('refuses a stored image as unavailable and still reads, then stores again once there is room', async () => {
    room = true;
    const s3 = await startEmbeddedS3({ dataDir, diskRoom: testRoom });
    const images = new S3ImageStore(localS3Client(s3), s3.bucket);
    const first = Buffer.from('first');
    try {
      await images.put('images/cache/a/one', first, imageInfo(first));
      room = false;
      await expect(images.put('images/cache/a/two', first, imageInfo(first))).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
      expect((await images.get('images/cache/a/one'))?.image?.toString()).toBe('first');
      expect(await images.head('images/cache/a/two')).toBeUndefined();
      room = true;
      await images.put('images/cache/a/two', first, imageInfo(first));
      expect((await images.get('images/cache/a/two'))?.image?.toString()).toBe('first');
      // A copy asks room for what its source holds (red team, round 28: a flat 64 MiB refused every copy of a
      // small image while under 96 MB were free).
      asked.length = 0;
      const stored = imageInfo(first);
      expect(
        await images.copyIfUnchanged(
          'images/cache/a/one',
          'images/linked/a/one',
          stored.etag,
          stored.storedAt,
          stored.expiresAt,
        ),
      ).toBe(true);
      expect(asked).toEqual([first.length]);
    } finally {
      await s3.close();
    }
  });
});

it("reads a disk's room with statfs: none beyond the whole disk, some for a small write", async () => {
  expect(await diskRoom(dataDir, 0)(1)).toBeInstanceOf(Function);
  expect(await diskRoom(dataDir, Number.MAX_SAFE_INTEGER)(0)).toBeUndefined();
  // A folder deleted under the server: no room, and no error thrown into the gate (review: it ended the process).
  expect(await diskRoom(join(dataDir, 'deleted'), 0)(1)).toBeUndefined();
});

it('counts the writes under way as taken, until each gives its room back (red team, round 29)', async () => {
  const { bavail, bsize } = await statfs(dataDir);
  const GiB = 1024 ** 3;
  // Room for one write of 2 GiB and not two, with a gigabyte of slack either way for other programs' writes.
  const room = diskRoom(dataDir, bavail * bsize - 3 * GiB);
  const first = await room(2 * GiB);
  expect(first).toBeInstanceOf(Function);
  expect(await room(2 * GiB)).toBeUndefined();
  first?.();
  first?.();
  const again = await room(2 * GiB);
  expect(again).toBeInstanceOf(Function);
  again?.();
});
