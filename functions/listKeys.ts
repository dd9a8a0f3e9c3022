import { createDynamoClient } from '../shared/store/dynamoClient';
import { createKeyManagement } from '../shared/wiring/keyManagement';
import { keyLambdas } from '../shared/wiring/lambdaHandlers';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = keyLambdas(createKeyManagement(createDynamoClient(), process.env)).listKeys;
