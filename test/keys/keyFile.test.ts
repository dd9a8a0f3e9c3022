import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadLocalIdp } from '../../local/idp';
import { StoreUnavailableError } from '../../shared/errors';
import { fileSecretCipher, loadOrCreateKey } from '../../shared/store/fileSecretCipher';

/**
 * The local key files (the signing secrets' key, the local stores' credentials): red team (round 27), a key written
 * on a full disk left an empty file, which every later start took for its key. A key is now written whole or not at
 * all, and a file cut short is refused, naming it.
 */

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'key-file-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('gives every process starting at once the one key that was kept, and leaves no draft behind', async () => {
  const path = join(dir, 'secrets', 'signing-secrets.key');
  const keys = await Promise.all(Array.from({ length: 20 }, () => loadOrCreateKey(path)));
  const kept = await readFile(path);
  expect(kept).toHaveLength(32);
  for (const key of keys) expect(key.equals(kept)).toBe(true);
  expect(await readdir(join(dir, 'secrets'))).toEqual(['signing-secrets.key']);
  expect((await loadOrCreateKey(path)).equals(kept)).toBe(true);
});

it('refuses a key file cut short, saying which and what to do', async () => {
  const path = join(dir, 'signing-secrets.key');
  for (const bytes of [0, 33]) {
    await writeFile(path, Buffer.alloc(bytes));
    await expect(loadOrCreateKey(path)).rejects.toThrow(
      `${path} holds ${bytes} bytes, not a key of 32: it was not written whole, so nothing was sealed with it. Delete it and start again`,
    );
  }
  expect(await readdir(dir)).toEqual(['signing-secrets.key']);
});

it('answers a key it cannot read as the store being unavailable, and reads it again on the next call', async () => {
  const path = join(dir, 'signing-secrets.key');
  await writeFile(path, Buffer.alloc(0));
  const cipher = fileSecretCipher(path);
  await expect(cipher.seal('secret', 'key_1')).rejects.toBeInstanceOf(StoreUnavailableError);
  // The operator deleted the damaged file, as the log said: no restart needed.
  await rm(path);
  const sealed = await cipher.seal('secret', 'key_1');
  expect(await cipher.open(sealed, 'key_1')).toBe('secret');
});

it("gives the identity provider's starts one signing key, and names a key file cut short", async () => {
  const started = await Promise.all(Array.from({ length: 4 }, () => loadLocalIdp(dir)));
  expect(new Set(started.map((idp) => idp.jwks.keys[0]?.kid)).size).toBe(1);
  expect(await readdir(join(dir, 'idp'))).toEqual(['signing-key.json']);
  const other = join(dir, 'other');
  await mkdir(join(other, 'idp'), { recursive: true });
  await writeFile(join(other, 'idp', 'signing-key.json'), '{"kid":"k","pem":"-----BEGIN');
  await expect(loadLocalIdp(other)).rejects.toThrow(
    `${join(other, 'idp', 'signing-key.json')} is not a signing key written whole: delete it and start again`,
  );
});
