import type { WebhookSecretManagement } from '../webhooks/webhookSecretManagement';
import { bearerCredential } from './request';
import { type HttpRoute, jsonResponse } from './types';

export type WebhookSecretRouteName = keyof WebhookSecretManagement;

/** GET /api/webhook-secret and POST /api/webhook-secret/rotate: the session token in, the secret out. */
export function webhookSecretRoutes(
  management: WebhookSecretManagement,
): Record<WebhookSecretRouteName, HttpRoute> {
  return {
    getWebhookSecret: async (request) =>
      jsonResponse(200, await management.getWebhookSecret(bearerCredential(request))),
    rotateWebhookSecret: async (request) =>
      jsonResponse(200, await management.rotateWebhookSecret(bearerCredential(request))),
  };
}
