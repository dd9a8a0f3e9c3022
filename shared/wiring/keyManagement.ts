import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Jwks } from 'aws-jwt-verify/jwk';
import { createSessionVerifier } from '../auth/sessionVerifier';
import { readServiceConfig, readSessionConfig } from '../config';
import { type KeyManagement, keyManagement } from '../keys/keyManagement';
import { createSecretCipher } from './delivery';
import { createStores } from './stores';

/** The session-token use cases, verifying tokens against the configured issuer (or the given JWKS, locally). */
export function createKeyManagement(
  client: DynamoDBClient,
  env: NodeJS.ProcessEnv,
  jwks?: Jwks,
): KeyManagement {
  const config = readServiceConfig(env);
  const { keys, credits } = createStores(client, config);
  return keyManagement({
    sessions: createSessionVerifier(readSessionConfig(env), jwks),
    keys,
    credits,
    cipher: createSecretCipher(env),
    freeCredits: config.freeCredits,
  });
}
