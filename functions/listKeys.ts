import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { managementHandler } from '../shared/http/managementHandler';
import { createKeyManagement } from '../shared/wiring/keyManagement';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = managementHandler(createKeyManagement(new DynamoDBClient({}), process.env).listKeys);
