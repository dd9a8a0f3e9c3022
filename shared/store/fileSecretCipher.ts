import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SecretCipher } from '../signing/secretCipher';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'gcm1';

/**
 * AES-256-GCM with a key of its own: the local stand-in for KMS. The sealed form is `gcm1.<base64url of iv, tag,
 * ciphertext>`; the context is the additional authenticated data. The key never enters the table, so the table
 * alone does not open the secrets.
 */
export class AesGcmSecretCipher implements SecretCipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`The signing-secret key must be ${KEY_BYTES} bytes`);
  }

  async seal(plaintext: string, context: string): Promise<string> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
  }

  async open(sealed: string, context: string): Promise<string | undefined> {
    const [version, body = ''] = sealed.split('.');
    const raw = Buffer.from(body, 'base64url');
    if (version !== VERSION || raw.length <= IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES))
        .setAAD(Buffer.from(context, 'utf8'))
        .setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      return undefined;
    }
  }
}

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
export async function loadOrCreateKey(path: string, bytes = KEY_BYTES): Promise<Buffer> {
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
