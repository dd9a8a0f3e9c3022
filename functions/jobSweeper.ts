import { createDynamoClient } from '../shared/store/dynamoClient';
import { createJobQueue, createJobSweeper } from '../shared/wiring/jobs';

// Run on a schedule (infra/jobProcessing.ts): queues again the jobs whose accepting function died before it queued
// them. No browser, no renderer: the worker runs what this sends.
const sweep = createJobSweeper(createDynamoClient(), process.env, createJobQueue(process.env));

export const handler = async (): Promise<{ requeued: number }> => sweep();
