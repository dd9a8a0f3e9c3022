import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { type LocalQueue, startLocalQueue } from '../../local/localQueue';
import { postFromReboundName } from '../helpers/reboundRequest';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The embedded DynamoDB and the local SQS API check no signature; dynalite answers any origin's CORS preflight, and
 * fauxqs takes form posts (its SNS API can publish into the job queue). A page in the developer's browser that finds
 * their ports must not read or write the table (keys, balances, jobs) or the queue. Only our own clients, which name
 * 127.0.0.1 as the host and send no Origin, get through.
 */

let store: EmbeddedDynamo;
let queue: LocalQueue;
const EVIL = { Origin: 'https://evil.example' };

beforeAll(async () => {
  store = await startTestStore();
  queue = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
});

afterAll(async () => {
  await queue?.close();
  await store?.close();
});

describe('the embedded DynamoDB', () => {
  it("answers the service's own client", async () => {
    const { TableNames } = await store.client.send(new ListTablesCommand({}));
    expect(TableNames).toContain(TEST_TABLE);
  });

  it('refuses a page of another origin, its preflight included', async () => {
    const preflight = await fetch(store.endpoint, {
      method: 'OPTIONS',
      headers: {
        ...EVIL,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-amz-target',
      },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const read = await fetch(store.endpoint, {
      method: 'POST',
      headers: {
        ...EVIL,
        'Content-Type': 'application/x-amz-json-1.0',
        'X-Amz-Target': 'DynamoDB_20120810.ListTables',
      },
      body: '{}',
    });
    expect(read.status).toBe(403);
    expect(await read.text()).not.toContain(TEST_TABLE);
  });

  it('refuses a page whose name was rebound to 127.0.0.1', async () => {
    expect(await postFromReboundName(new URL(store.endpoint).port, '/', 'rebound.example', {})).toBe(403);
  });
});

describe('the local SQS API', () => {
  it("answers the service's own client", async () => {
    const { Attributes } = await queue.client.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.queueUrl, AttributeNames: ['QueueArn'] }),
    );
    expect(Attributes?.QueueArn).toMatch(/:jobs$/);
  });

  it('refuses a form a page of another origin posts (no preflight), and a page rebound to 127.0.0.1', async () => {
    const form = await fetch(queue.endpoint, {
      method: 'POST',
      headers: { ...EVIL, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'Action=CreateTopic&Name=injected',
    });
    expect(form.status).toBe(403);
    expect(await postFromReboundName(new URL(queue.endpoint).port, '/', 'rebound.example', {})).toBe(403);
  });
});
