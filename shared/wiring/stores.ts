import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ServiceConfig } from '../config';
import { DynamoCaptureSlots } from '../store/dynamoCaptureSlots';
import { DynamoCreditLedger } from '../store/dynamoCreditLedger';
import { DynamoJobStore } from '../store/dynamoJobStore';
import { DynamoKeyStore } from '../store/dynamoKeyStore';
import { DynamoPendingRefunds } from '../store/dynamoPendingRefunds';
import { DynamoRateLimiter } from '../store/dynamoRateLimiter';
import { DynamoUsageStore } from '../store/dynamoUsageStore';
import { translateStoreOutages } from '../store/storeUnavailable';
import { itemKey } from '../store/table';

/**
 * Wiring: builds the domain's dependencies from a DynamoDB client and the environment. Lambda entries call these
 * once per cold start; the local server calls them with the embedded store's client and the local identity
 * provider's JWKS.
 */
export function createStores(client: DynamoDBClient, config: ServiceConfig) {
  const db = documentClient(client);
  return {
    keys: new DynamoKeyStore(db, config.tableName),
    credits: new DynamoCreditLedger(db, config.tableName),
    rateLimiter: new DynamoRateLimiter(db, config.tableName, config.rateLimitPerHour),
    // Signed links: a budget of their own per key, with the same number (docs/api.md, "Signed links").
    signedLinkBudget: new DynamoRateLimiter(
      db,
      config.tableName,
      config.rateLimitPerHour,
      itemKey.signedLinkWindow,
    ),
    pendingRefunds: new DynamoPendingRefunds(db, config.tableName),
    captureSlots: new DynamoCaptureSlots(
      db,
      config.tableName,
      config.maxConcurrentCaptures,
      config.captureCapacity === undefined
        ? undefined
        : { shared: config.captureCapacity, headroom: config.captureHeadroom },
    ),
    usageStore: new DynamoUsageStore(db, config.tableName),
    jobs: new DynamoJobStore(db, config.tableName),
  };
}

/** The document client every store uses, over `client` with its outages translated to 503s. */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  translateStoreOutages(client);
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}
