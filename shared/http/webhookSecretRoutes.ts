import type { WebhookSecretManagement } from '../webhooks/webhookSecretManagement';
import { bearerCredential } from './request';
import { type HttpRoute, jsonResponse } from './types';

/**
 * GET /api/webhook-secret and POST /api/webhook-secret/rotate, one function for both: the session token in, the
 * secret out. The route table sends nothing else here, so the method tells them apart.
 */
export function webhookSecretRoute(management: WebhookSecretManagement): HttpRoute {
  return async (request) => {
    const token = bearerCredential(request);
    const answer =
      request.method === 'POST'
        ? await management.rotateWebhookSecret(token)
        : await management.getWebhookSecret(token);
    return jsonResponse(200, answer);
  };
}
