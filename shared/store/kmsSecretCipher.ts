import { DecryptCommand, EncryptCommand, type KMSClient } from '@aws-sdk/client-kms';
import { StoreUnavailableError } from '../errors';
import { logger } from '../logger';
import { ALARMED_LOG_MESSAGES } from '../metrics/names';
import type { SecretCipher } from '../signing/secretCipher';

/** KMS's answers for a ciphertext that is not genuine (or not for this context): not authentic, so no secret. */
const NOT_AUTHENTIC = new Set(['InvalidCiphertextException', 'IncorrectKeyException']);

/**
 * Seals with KMS `Encrypt` directly (a signing secret is far below its 4 KB limit), the key id as encryption context:
 * the plaintext key never leaves KMS, and IAM decides which function may seal (key creation) and which may open
 * (the screenshot function). Any other failure of KMS is a 503: nothing was done, try again.
 */
export class KmsSecretCipher implements SecretCipher {
  constructor(
    private readonly kms: KMSClient,
    private readonly keyId: string,
  ) {}

  async seal(plaintext: string, context: string): Promise<string> {
    let ciphertext: Uint8Array | undefined;
    try {
      ({ CiphertextBlob: ciphertext } = await this.kms.send(
        new EncryptCommand({
          KeyId: this.keyId,
          Plaintext: Buffer.from(plaintext, 'utf8'),
          EncryptionContext: { keyId: context },
        }),
      ));
    } catch (error) {
      throw unavailable(error);
    }
    if (!ciphertext) throw new Error('KMS returned no ciphertext');
    return Buffer.from(ciphertext).toString('base64');
  }

  async open(sealed: string, context: string): Promise<string | undefined> {
    try {
      const { Plaintext } = await this.kms.send(
        new DecryptCommand({
          KeyId: this.keyId,
          CiphertextBlob: Buffer.from(sealed, 'base64'),
          EncryptionContext: { keyId: context },
        }),
      );
      return Plaintext ? Buffer.from(Plaintext).toString('utf8') : undefined;
    } catch (error) {
      if (error instanceof Error && NOT_AUTHENTIC.has(error.name)) return undefined;
      throw unavailable(error);
    }
  }
}

function unavailable(error: unknown): StoreUnavailableError {
  logger.error(ALARMED_LOG_MESSAGES.kmsFailures, { error: error instanceof Error ? error : String(error) });
  return new StoreUnavailableError();
}
