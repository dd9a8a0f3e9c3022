import type { SecretCipher } from './secretCipher';

/** How long an opened secret is kept in memory. */
export const OPENED_SECRET_TTL_MS = 5 * 60 * 1000;
/** At most this many opened secrets are kept; the oldest goes first. */
export const OPENED_SECRET_MAX_ENTRIES = 1000;

/**
 * Keeps opened signing secrets in memory for five minutes, so a popular signed link costs one KMS Decrypt per
 * function instance and five minutes instead of one per request. Revocation and deletion still take effect at once:
 * the key's item is read on every request before its secret is used, and the cache is keyed by the sealed value
 * and the key id together, so a new or removed secret is never answered from here. Values that did not open are
 * not kept.
 */
export class CachingSecretCipher implements SecretCipher {
  private readonly opened = new Map<string, { secret: string; until: number }>();

  constructor(
    private readonly inner: SecretCipher,
    private readonly now: () => number = Date.now,
  ) {}

  seal(plaintext: string, context: string): Promise<string> {
    return this.inner.seal(plaintext, context);
  }

  async open(sealed: string, context: string): Promise<string | undefined> {
    const entry = `${context}\n${sealed}`;
    const kept = this.opened.get(entry);
    if (kept && kept.until > this.now()) return kept.secret;
    this.opened.delete(entry);
    const secret = await this.inner.open(sealed, context);
    if (secret === undefined) return undefined;
    if (this.opened.size >= OPENED_SECRET_MAX_ENTRIES) {
      const oldest = this.opened.keys().next();
      if (!oldest.done) this.opened.delete(oldest.value);
    }
    this.opened.set(entry, { secret, until: this.now() + OPENED_SECRET_TTL_MS });
    return secret;
  }
}
