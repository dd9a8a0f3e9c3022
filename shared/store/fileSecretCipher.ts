import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StoreUnavailableError } from '../errors';
import { logger } from '../logger';
import { AES_GCM_KEY_BYTES, AesGcmSecretCipher } from '../signing/aesGcmSecretCipher';
import type { SecretCipher } from '../signing/secretCipher';

/**
 * A cipher whose key lives in `path` (created, readable by its owner only, on first use), read once per process.
 * The local server keeps it under DATA_DIR, beside the store it protects but not in it. A key that cannot be read or
 * written (a full disk) is the local KMS being unavailable: `503`, as KMS's failures are, and tried again by the
 * next call (it was kept failed until the server restarted: red team, round 27).
 */
export function fileSecretCipher(path: string): SecretCipher {
  let cipher: Promise<SecretCipher> | undefined;
  const load = () => {
    cipher ??= loadOrCreateKey(path).then(
      (key) => new AesGcmSecretCipher(key),
      (error: unknown) => {
        cipher = undefined;
        logger.error('Local key file unusable', { error: error instanceof Error ? error : String(error) });
        throw new StoreUnavailableError();
      },
    );
    return cipher;
  };
  return {
    seal: async (plaintext, context) => (await load()).seal(plaintext, context),
    open: async (sealed, context) => (await load()).open(sealed, context),
  };
}

/**
 * The random key kept in `path`, created (owner-only) on first use. Written whole or not at all: into a file of its
 * own, flushed, then linked to `path`, which fails if another process linked its key first (that one is read). A key
 * written straight to `path` on a full disk left an empty file there, which every later start read as its key (red
 * team, round 27).
 */
export async function loadOrCreateKey(path: string, bytes = AES_GCM_KEY_BYTES): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const key = randomBytes(bytes);
  const draft = `${path}.${randomBytes(6).toString('hex')}.new`;
  try {
    const file = await open(draft, 'wx', 0o600);
    try {
      await file.writeFile(key);
      await file.sync();
    } finally {
      await file.close();
    }
    await link(draft, path);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return await keptKey(path, bytes);
  } finally {
    await rm(draft, { force: true });
  }
}

async function keptKey(path: string, bytes: number): Promise<Buffer> {
  const key = await readFile(path);
  if (key.length === bytes) return key;
  throw new Error(
    `${path} holds ${key.length} bytes, not a key of ${bytes}: it was not written whole (a full disk?), so nothing ` +
      'was sealed with it. Delete it and start again',
  );
}
