import type { SessionVerifier } from '../auth/sessionVerifier';
import type { WebhookSecrets } from './webhookSecrets';

export interface WebhookSecretManagementDeps {
  sessions: SessionVerifier;
  secrets: WebhookSecrets;
  now?: () => number;
}

/** The owner's view of the account's webhook secret, by session token (docs/api.md, "Webhook secret"). */
export interface WebhookSecretManagement {
  /** The current secret, created on first use. */
  getWebhookSecret(sessionToken: string | undefined): Promise<{ secret: string }>;
  /** A new secret; the previous one keeps signing for 24 hours. */
  rotateWebhookSecret(sessionToken: string | undefined): Promise<{ secret: string }>;
}

export function webhookSecretManagement(deps: WebhookSecretManagementDeps): WebhookSecretManagement {
  const now = deps.now ?? Date.now;
  return {
    async getWebhookSecret(sessionToken) {
      const accountId = await deps.sessions.accountIdOf(sessionToken);
      return { secret: await deps.secrets.reveal(accountId, now()) };
    },
    async rotateWebhookSecret(sessionToken) {
      const accountId = await deps.sessions.accountIdOf(sessionToken);
      return { secret: await deps.secrets.rotate(accountId, now()) };
    },
  };
}
