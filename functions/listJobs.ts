import { createDynamoClient } from '../shared/store/dynamoClient';
import { createJobRoutes } from '../shared/wiring/jobs';
import { jobLambdas } from '../shared/wiring/lambdaHandlers';

// Built once per cold start and reused by warm invocations (JWKS cache, SDK connections).
export const handler = jobLambdas(createJobRoutes(createDynamoClient(), process.env)).listJobs;
