import { randomBytes } from 'node:crypto';

/**
 * An account's webhook secret (docs/api.md, "Webhook secret"): created on first use, stored sealed. After a rotation
 * the previous secret keeps signing beside the new one for `ROTATION_OVERLAP_MS`, so receivers can switch without
 * losing a delivery. `now` is ms since epoch.
 */
export interface WebhookSecrets {
  /** The current secret (`whsec_…`), created if the account has none yet. */
  reveal(accountId: string, now: number): Promise<string>;
  /** A new current secret; the one it replaces keeps signing for 24 hours. */
  rotate(accountId: string, now: number): Promise<string>;
  /** Every secret a delivery is signed with now: the current one, and the previous one within 24 h of a rotation. */
  signingSecrets(accountId: string, now: number): Promise<string[]>;
}

export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

const SECRET_PREFIX = 'whsec_';

/**
 * Webhook secrets are sealed with `webhook-secret:<accountId>` as encryption context: they open only as that account's
 * webhook secret, and IAM grants on them name this prefix (infra/imageStorage.ts).
 */
export const WEBHOOK_SECRET_CONTEXT_PREFIX = 'webhook-secret:';

/** A fresh secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}
