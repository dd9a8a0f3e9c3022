import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Jwks } from 'aws-jwt-verify/jwk';
import { createSessionVerifier } from '../auth/sessionVerifier';
import { readServiceConfig, readSessionConfig } from '../config';
import { type GetUsage, usageHistory } from '../usage/usageHistory';
import { createStores } from './stores';

/** The usage history, verifying tokens against the configured issuer (or the given JWKS, locally). */
export function createUsageHistory(client: DynamoDBClient, env: NodeJS.ProcessEnv, jwks?: Jwks): GetUsage {
  const { keys, usageStore } = createStores(client, readServiceConfig(env));
  return usageHistory({
    sessions: createSessionVerifier(readSessionConfig(env), jwks),
    keys,
    usage: usageStore,
  });
}
