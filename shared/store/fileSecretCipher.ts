import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AES_GCM_KEY_BYTES, AesGcmSecretCipher } from '../signing/aesGcmSecretCipher';
import type { SecretCipher } from '../signing/secretCipher';

/**
 * A cipher whose key lives in `path` (created, readable by its owner only, on first use), read once per process.
 * The local server keeps it under DATA_DIR, beside the store it protects but not in it.
 */
export function fileSecretCipher(path: string): SecretCipher {
  let cipher: Promise<SecretCipher> | undefined;
  const load = () => {
    cipher ??= loadOrCreateKey(path).then((key) => new AesGcmSecretCipher(key));
    return cipher;
  };
  return {
    seal: async (plaintext, context) => (await load()).seal(plaintext, context),
    open: async (sealed, context) => (await load()).open(sealed, context),
  };
}

/** The random key kept in `path`, created (owner-only) on first use. */
export async function loadOrCreateKey(path: string, bytes = AES_GCM_KEY_BYTES): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  try {
    // 'wx': two processes starting at once cannot both write a key; the loser reads the winner's.
    const key = randomBytes(bytes);
    await writeFile(path, key, { flag: 'wx', mode: 0o600 });
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readFile(path);
  }
}
