import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Jwks } from 'aws-jwt-verify/jwk';
import { createSessionVerifier } from '../auth/sessionVerifier';
import { readServiceConfig, readSessionConfig } from '../config';
import { createEgressGate, type HostLookup } from '../egress/egressGate';
import { DynamoWebhookSecrets } from '../store/dynamoWebhookSecrets';
import type { WebhookDeliveryDeps } from '../webhooks/deliverWebhook';
import { type WebhookSecretManagement, webhookSecretManagement } from '../webhooks/webhookSecretManagement';
import type { WebhookSecrets } from '../webhooks/webhookSecrets';
import { createSecretCipher } from './delivery';
import { documentClient } from './stores';

/**
 * The accounts' webhook secrets on the single table, sealed by the signing-secret cipher (SIGNING_KMS_KEY_ID
 * deployed, SIGNING_KEY_FILE locally).
 */
export function createWebhookSecrets(client: DynamoDBClient, env: NodeJS.ProcessEnv): WebhookSecrets {
  const { tableName } = readServiceConfig(env);
  return new DynamoWebhookSecrets(documentClient(client), tableName, createSecretCipher(env));
}

/** What a delivery needs: the egress rules of a page, from ALLOW_PRIVATE_HOSTS. `lookup` is for tests. */
export function createWebhookDeliveryDeps(env: NodeJS.ProcessEnv, lookup?: HostLookup): WebhookDeliveryDeps {
  const { allowPrivateHosts } = readServiceConfig(env);
  return { egress: createEgressGate(lookup ? { allowPrivateHosts, lookup } : { allowPrivateHosts }) };
}

/** The owner's webhook-secret routes, verifying tokens against the configured issuer (or the given JWKS, locally). */
export function createWebhookSecretManagement(
  client: DynamoDBClient,
  env: NodeJS.ProcessEnv,
  jwks?: Jwks,
): WebhookSecretManagement {
  return webhookSecretManagement({
    sessions: createSessionVerifier(readSessionConfig(env), jwks),
    secrets: createWebhookSecrets(client, env),
  });
}
