import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Jwks } from 'aws-jwt-verify/jwk';
import { createSessionVerifier } from './auth/sessionVerifier';
import { readServiceConfig, readSessionConfig, type ServiceConfig } from './config';
import { type KeyManagementRoutes, keyManagementRoutes } from './keys/keyManagement';
import { DynamoCreditLedger } from './store/dynamoCreditLedger';
import { DynamoKeyStore } from './store/dynamoKeyStore';
import { DynamoRateLimiter } from './store/dynamoRateLimiter';

/**
 * Builds the domain's dependencies from a DynamoDB client and the environment. Lambda entries call this once per
 * cold start; the local server calls it with the embedded store's client and the local identity provider's JWKS.
 */
export function createStores(client: DynamoDBClient, config: ServiceConfig) {
  const db = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return {
    keys: new DynamoKeyStore(db, config.tableName),
    credits: new DynamoCreditLedger(db, config.tableName),
    rateLimiter: new DynamoRateLimiter(db, config.tableName, config.rateLimitPerHour),
  };
}

export function createKeyManagement(client: DynamoDBClient, env: NodeJS.ProcessEnv, jwks?: Jwks): KeyManagementRoutes {
  const config = readServiceConfig(env);
  const { keys, credits } = createStores(client, config);
  return keyManagementRoutes({
    sessions: createSessionVerifier(readSessionConfig(env), jwks),
    keys,
    credits,
    freeCredits: config.freeCredits,
  });
}
