import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ServiceConfig } from '../config';
import { DynamoAdmissionRound } from '../store/dynamoAdmissionRound';
import { DynamoCancelledCalls } from '../store/dynamoCancelledCalls';
import { DynamoCaptureSlots } from '../store/dynamoCaptureSlots';
import { DynamoCreditLedger } from '../store/dynamoCreditLedger';
import { DynamoJobStore } from '../store/dynamoJobStore';
import { DynamoKeyStore } from '../store/dynamoKeyStore';
import { DynamoPendingRefunds } from '../store/dynamoPendingRefunds';
import { DynamoUsageStore } from '../store/dynamoUsageStore';
import { translateStoreOutages } from '../store/storeUnavailable';

/**
 * Wiring: builds the domain's dependencies from a DynamoDB client and the environment. Lambda entries call these
 * once per cold start; the local server calls them with the embedded store's client and the local identity
 * provider's JWKS.
 */
export function createStores(client: DynamoDBClient, config: ServiceConfig) {
  const db = documentClient(client);
  const keys = new DynamoKeyStore(db, config.tableName);
  const captureSlots = new DynamoCaptureSlots(db, config.tableName, config.maxConcurrentCaptures);
  const credits = new DynamoCreditLedger(db, config.tableName);
  return {
    keys,
    credits,
    // The rate limit, the signed links' own budget per key (the same number, docs/api.md "Signed links"), the
    // account's capture slots, its credits and lastUsed, written together.
    admissions: new DynamoAdmissionRound(
      db,
      config.tableName,
      config.rateLimitPerHour,
      captureSlots,
      keys,
      credits,
    ),
    captureSlots,
    pendingRefunds: new DynamoPendingRefunds(db, config.tableName),
    usageStore: new DynamoUsageStore(db, config.tableName),
    jobs: new DynamoJobStore(db, config.tableName),
    cancelledCalls: new DynamoCancelledCalls(db, config.tableName),
  };
}

/** The document client every store uses, over `client` with its outages translated to 503s. */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  translateStoreOutages(client);
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}
