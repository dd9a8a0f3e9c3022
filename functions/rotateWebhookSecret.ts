import { createDynamoClient } from '../shared/store/dynamoClient';
import { webhookSecretLambdas } from '../shared/wiring/lambdaHandlers';
import { createWebhookSecretManagement } from '../shared/wiring/webhooks';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = webhookSecretLambdas(
  createWebhookSecretManagement(createDynamoClient(), process.env),
).rotateWebhookSecret;
