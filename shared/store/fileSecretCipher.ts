import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StoreUnavailableError } from '../errors';
import { logger } from '../logger';
import { AES_GCM_KEY_BYTES, AesGcmSecretCipher } from '../signing/aesGcmSecretCipher';
import type { SecretCipher } from '../signing/secretCipher';
import { createWhole, readWhole } from './wholeFile';

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

/** The random key kept in `path`, created (owner-only, whole or not at all: wholeFile.ts) on first use. */
export async function loadOrCreateKey(path: string, bytes = AES_GCM_KEY_BYTES): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const key = randomBytes(bytes);
  if (await createWhole(path, key)) return key;
  // Another process made it first (two starting at once): theirs.
  const kept = await readWhole(path, (content) => content.length === bytes);
  if (kept.length === bytes) return kept;
  throw new Error(
    `${path} holds ${kept.length} bytes, not a key of ${bytes}: it was not written whole, so nothing was sealed ` +
      'with it. Delete it and start again',
  );
}
