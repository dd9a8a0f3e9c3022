import { createDynamoClient } from '../shared/store/dynamoClient';
import { webhookSecretLambda } from '../shared/wiring/lambdaHandlers';
import { createWebhookSecretManagement } from '../shared/wiring/webhooks';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = webhookSecretLambda(createWebhookSecretManagement(createDynamoClient(), process.env));
