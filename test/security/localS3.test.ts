import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedS3 } from '../../local/embeddedS3';
import { type LocalService, startLocalService } from '../../local/localService';
import { linkTimes } from '../../shared/delivery/imageStore';
import { createS3Client, S3ImageStore } from '../../shared/store/s3ImageStore';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { localS3Client, startTestDelivery } from '../helpers/store';

/**
 * The local S3 API answers only requests signed with the credentials of its data dir: a captured page, or anyone
 * else on the machine, can neither poison a stored image nor download one without a valid, unexpired link.
 */

type Delivery = Awaited<ReturnType<typeof startTestDelivery>>;
let delivery: Delivery;
let store: S3ImageStore;
const client = () => localS3Client(delivery.s3);

const INFO = {
  contentType: 'image/png',
  etag: '"original"',
  bytes: 8,
  width: 1,
  height: 1,
  truncated: false,
  storedAt: 1,
  expiresAt: 4_102_444_800_000,
};
const KEY = 'images/cache/victim/entry';
const objectUrl = (key: string) => `${delivery.s3.endpoint}/${delivery.s3.bucket}/${key}`;

beforeAll(async () => {
  delivery = await startTestDelivery();
  store = new S3ImageStore(client(), delivery.s3.bucket);
  await store.put(KEY, Buffer.from('original'), INFO);
});
afterAll(() => delivery?.close());

describe('the local S3 API', () => {
  it('serves the service its own signed calls', async () => {
    const stored = await store.get(KEY);
    expect(stored?.image?.toString()).toBe('original');
  });

  it('refuses a forged unsigned PUT with 403 and leaves the object as it was', async () => {
    const forged = await fetch(objectUrl(KEY), {
      method: 'PUT',
      body: 'poisoned',
      headers: { 'Content-Type': 'image/png', 'x-amz-meta-etag': '"poisoned"' },
    });
    expect(forged.status).toBe(403);
    expect((await store.get(KEY))?.image?.toString()).toBe('original');
  });

  it("refuses a PUT signed with s3rver's well-known built-in credentials", async () => {
    const builtIn = createS3Client({
      url: delivery.s3.endpoint,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    await expect(
      builtIn.send(new PutObjectCommand({ Bucket: delivery.s3.bucket, Key: KEY, Body: 'poisoned' })),
    ).rejects.toThrow();
    expect((await store.get(KEY))?.image?.toString()).toBe('original');
  });

  it('refuses a signed PUT whose body was swapped', async () => {
    const s3 = client();
    s3.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { body?: unknown };
        request.body = Buffer.from('swapped!');
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low' },
    );
    await expect(
      s3.send(new PutObjectCommand({ Bucket: delivery.s3.bucket, Key: KEY, Body: 'original' })),
    ).rejects.toThrow();
    expect((await store.get(KEY))?.image?.toString()).toBe('original');
  });

  it('refuses a plain unsigned GET', async () => {
    expect((await fetch(objectUrl(KEY))).status).toBe(403);
  });

  it('downloads through a valid pre-signed link', async () => {
    const link = await store.signedUrl(KEY, linkTimes(Date.now(), 60));
    const answer = await fetch(link);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('original');
  });

  it('signs a link as at its stated times, so that it stops working at the `expiresAt` an answer states', async () => {
    const times = linkTimes(Date.now(), 5);
    const link = new URL(await store.signedUrl(KEY, times));
    expect(link.searchParams.get('X-Amz-Date')).toBe(
      new Date(times.signedAt).toISOString().replace(/[-:]|\.000/g, ''),
    );
    expect((await fetch(link)).status).toBe(200);
    // Stated as over a second ago.
    const ended = linkTimes(Date.now() - 3_000, 2);
    expect(ended.expiresAt).toBeLessThan(Date.now());
    expect((await fetch(await store.signedUrl(KEY, ended))).status).toBe(403);
  });

  it('refuses a pre-signed link whose signature was removed', async () => {
    const link = new URL(await store.signedUrl(KEY, linkTimes(Date.now(), 60)));
    link.searchParams.delete('X-Amz-Signature');
    expect((await fetch(link)).status).toBe(403);
    for (const name of [...link.searchParams.keys()].filter((n) => n.startsWith('X-Amz-'))) {
      link.searchParams.delete(name);
    }
    expect((await fetch(link)).status).toBe(403);
  });

  it('refuses a pre-signed link whose signature or expiry was altered', async () => {
    const link = new URL(await store.signedUrl(KEY, linkTimes(Date.now(), 60)));
    const signature = link.searchParams.get('X-Amz-Signature') ?? '';
    const altered = new URL(link);
    altered.searchParams.set(
      'X-Amz-Signature',
      `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`,
    );
    expect((await fetch(altered)).status).toBe(403);
    const longer = new URL(link);
    longer.searchParams.set('X-Amz-Expires', '604800');
    expect((await fetch(longer)).status).toBe(403);
  });

  it('refuses a pre-signed link for another object', async () => {
    const link = new URL(await store.signedUrl(KEY, linkTimes(Date.now(), 60)));
    link.pathname = link.pathname.replace('entry', 'other');
    expect((await fetch(link)).status).toBe(403);
  });

  it('refuses an expired pre-signed link', async () => {
    const link = await getSignedUrl(
      client(),
      new GetObjectCommand({ Bucket: delivery.s3.bucket, Key: KEY }),
      {
        expiresIn: 60,
        signingDate: new Date(Date.now() - 120_000),
      },
    );
    const answer = await fetch(link);
    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain('expired');
  });

  it("answers nothing but the gate on s3rver's own port: no listing, no download, no PUT or form POST (red team)", async () => {
    const backend = `http://127.0.0.1:${delivery.s3.backendPort}/${delivery.s3.bucket}`;
    expect((await fetch(`${backend}?list-type=2`)).status).toBe(403);
    expect((await fetch(`${backend}/${KEY}`)).status).toBe(403);
    const put = await fetch(`${backend}/${KEY}`, {
      method: 'PUT',
      body: 'poisoned',
      headers: { 'Content-Type': 'image/png', 'x-amz-meta-etag': '"poisoned"' },
    });
    expect(put.status).toBe(403);
    // A browser's cross-site form POST, which S3's POST object API would take.
    const form = new FormData();
    form.set('key', KEY);
    form.set('file', new Blob(['poisoned']));
    const post = await fetch(backend, {
      method: 'POST',
      body: form,
      headers: { Origin: 'https://evil.example' },
    });
    expect(post.status).toBe(403);
    // A token guessed wrong is no better than none.
    expect(
      (await fetch(`${backend}/${KEY}`, { headers: { 'x-local-s3-gate': 'f'.repeat(64) } })).status,
    ).toBe(403);
    expect((await store.get(KEY))?.image?.toString()).toBe('original');
  });
});

describe('the local S3 API across restarts', () => {
  it('comes back on the same port with the same credentials', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'screenshot-s3-restart-'));
    try {
      const first = await startEmbeddedS3({ dataDir });
      await first.close();
      const second = await startEmbeddedS3({ dataDir });
      await second.close();
      expect(second.endpoint).toBe(first.endpoint);
      expect(second.env.LOCAL_S3_SECRET_ACCESS_KEY).toBe(first.env.LOCAL_S3_SECRET_ACCESS_KEY);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a JSON link of npm start', () => {
  let site: PageServer;
  let dataDir: string;
  let service: LocalService | undefined;
  const start = async () => {
    service = await startLocalService({
      dataDir,
      inMemoryStore: true,
      env: { ...process.env, ALLOW_PRIVATE_HOSTS: site.hostPort },
    });
    return service;
  };

  beforeAll(async () => {
    site = await startPageServer({ '/': solidPage('#0f0') });
    dataDir = await mkdtemp(join(tmpdir(), 'screenshot-link-restart-'));
  });
  afterAll(async () => {
    await service?.close();
    await site?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('still downloads after the service restarts', async () => {
    const before = await start();
    const token = before.idp.mintToken('restart-user');
    const key = await (
      await fetch(`${before.url}/api/keys`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'restart' }),
      })
    ).json();
    const shot = await fetch(`${before.url}/api/screenshot`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `${site.origin}/`, width: 320, height: 320, response: 'json' }),
    });
    expect(shot.status).toBe(200);
    const { url: link } = await shot.json();
    await before.close();
    service = undefined;

    await start();
    const answer = await fetch(link);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/png');
  });
});
