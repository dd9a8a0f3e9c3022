/**
 * Port for sealing signing secrets before they are stored, so a dump of the table alone cannot forge a signed
 * link: KMS deployed (`shared/store/kmsSecretCipher.ts`), AES-256-GCM with a key file under DATA_DIR locally
 * (`shared/store/fileSecretCipher.ts`). `context` (the key id) is bound to the sealed value: a sealed secret copied
 * onto another key's item does not open.
 */
export interface SecretCipher {
  seal(plaintext: string, context: string): Promise<string>;
  /** The plaintext, or undefined when the sealed value is not authentic for this context. */
  open(sealed: string, context: string): Promise<string | undefined>;
}
