import { createDynamoClient } from '../shared/store/dynamoClient';
import { createJobQueue, createJobRoutes } from '../shared/wiring/jobs';
import { jobLambdas } from '../shared/wiring/lambdaHandlers';

// Built once per cold start and reused by warm invocations (SDK connections). Jobs go to JOB_QUEUE_URL.
export const handler = jobLambdas(
  createJobRoutes(createDynamoClient(), process.env, { queue: createJobQueue(process.env) }),
).createBatch;
