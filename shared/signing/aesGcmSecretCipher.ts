import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { SecretCipher } from './secretCipher';

export const AES_GCM_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'gcm1';

/**
 * AES-256-GCM with a key of its own: the local stand-in for KMS (`shared/store/fileSecretCipher.ts`), and the data key
 * of an envelope whose key KMS seals (`shared/jobs/jobCredentials.ts`). The sealed form is `gcm1.<base64url of iv, tag,
 * ciphertext>`; the context is the additional authenticated data. The key never enters the table, so the table
 * alone does not open the secrets.
 */
export class AesGcmSecretCipher implements SecretCipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== AES_GCM_KEY_BYTES)
      throw new Error(`An AES-256-GCM key must be ${AES_GCM_KEY_BYTES} bytes`);
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
