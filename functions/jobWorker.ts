import { createDynamoClient } from '../shared/store/dynamoClient';
import { createJobQueue, createJobWorker } from '../shared/wiring/jobs';
import { invokedRenderer } from '../shared/wiring/screenshot';

// The queue worker: no browser. Each capture is asked of the renderer function, exactly as the screenshot front asks
// it; the rules (slots, the one charge or refund, usage, webhooks) run here (docs/architecture.md).
const worker = createJobWorker(createDynamoClient(), process.env, {
  renderer: invokedRenderer(process.env),
  queue: createJobQueue(process.env),
});

export const handler = worker.handler;
