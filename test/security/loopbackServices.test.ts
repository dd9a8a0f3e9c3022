import { GetItemCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { type LocalQueue, startLocalQueue } from '../../local/localQueue';
import { itemKey } from '../../shared/store/table';
import { postFromReboundName } from '../helpers/reboundRequest';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The embedded DynamoDB and the local SQS API check no signature; dynalite answers any origin's CORS preflight, and
 * fauxqs takes form posts (its SNS API can publish into the job queue). A page in the developer's browser that finds
 * their ports must not read or write the table (keys, balances, jobs) or the queue. Only our own clients, which name
 * 127.0.0.1 as the host and send no Origin (nor a browser's Sec-Fetch-Mode), get through.
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

const victim = itemKey.account('victim');
const mint = JSON.stringify({
  TableName: TEST_TABLE,
  Key: { pk: { S: victim.pk }, sk: { S: victim.sk } },
  UpdateExpression: 'SET credits = :many',
  ExpressionAttributeValues: { ':many': { N: '1000000' } },
});

const FORGED_SIGNATURE =
  'AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00';

async function credits(): Promise<unknown> {
  const { Item } = await store.client.send(
    new GetItemCommand({
      TableName: TEST_TABLE,
      Key: { pk: { S: victim.pk }, sk: { S: victim.sk } },
      ConsistentRead: true,
    }),
  );
  return Item?.credits;
}

describe('the embedded DynamoDB', () => {
  it("answers the service's own client", async () => {
    const { TableNames } = await store.client.send(new ListTablesCommand({}));
    expect(TableNames).toContain(TEST_TABLE);
  });

  it("answers a browser's CORS preflight with no permission", async () => {
    const answer = await fetch(store.endpoint, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://evil.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-amz-target',
      },
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
  });

  it.each([
    ['a cross-origin page', { Origin: 'https://evil.example' }],
    ['a page of the dashboard itself', { Origin: 'http://127.0.0.1:3000' }],
    ['a browser request without Origin', { 'Sec-Fetch-Mode': 'no-cors', 'Sec-Fetch-Site': 'cross-site' }],
  ])('refuses a write from %s, and the table stays as it was', async (_, browser) => {
    const answer = await fetch(store.endpoint, {
      method: 'POST',
      headers: {
        ...browser,
        'Content-Type': 'application/x-amz-json-1.0',
        'X-Amz-Target': 'DynamoDB_20120810.UpdateItem',
        // dynalite wants one, and checks nothing in it; a page may send any header the preflight allowed.
        Authorization: FORGED_SIGNATURE,
        'X-Amz-Date': '20260101T000000Z',
      },
      body: mint,
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(await credits()).toBeUndefined();
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
