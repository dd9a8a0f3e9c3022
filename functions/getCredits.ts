import { managementHandler } from '../shared/http/managementHandler';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { createKeyManagement } from '../shared/wiring/keyManagement';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = managementHandler(createKeyManagement(createDynamoClient(), process.env).getCredits);
