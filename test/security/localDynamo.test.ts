import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { itemKey } from '../../shared/store/table';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The embedded DynamoDB checks no signature, and dynalite allows any origin: without a gate, any web page open in the
 * developer's browser while `npm start` runs could read the local table (jobs' requests, usage) and write it (mint
 * credits). Browsers mark every request a page makes (Origin, Sec-Fetch-*); the AWS SDK sends neither.
 */

let store: EmbeddedDynamo;
beforeAll(async () => {
  store = await startTestStore();
});
afterAll(() => store?.close());

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

  it("still serves the service's own client", async () => {
    await store.client.send(new UpdateItemCommand(JSON.parse(mint)));
    expect(await credits()).toEqual({ N: '1000000' });
  });
});
