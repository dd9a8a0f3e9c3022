import { createDynamoClient } from '../shared/store/dynamoClient';
import { usageLambda } from '../shared/wiring/lambdaHandlers';
import { createUsageHistory } from '../shared/wiring/usage';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = usageLambda(createUsageHistory(createDynamoClient(), process.env));
