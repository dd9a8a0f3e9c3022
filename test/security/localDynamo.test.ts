import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { postFromReboundName } from '../helpers/reboundRequest';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * The embedded DynamoDB checks no signature and dynalite answers any origin's CORS preflight: a page in the
 * developer's browser that finds its port must not read or write the table (keys, balances, jobs with their
 * requests). Only our own clients, which name 127.0.0.1:<port> and send no Origin, get through.
 */

let store: EmbeddedDynamo;
const port = () => Number(new URL(store.endpoint).port);
const LIST_TABLES = {
  'Content-Type': 'application/x-amz-json-1.0',
  'X-Amz-Target': 'DynamoDB_20120810.ListTables',
};

beforeAll(async () => {
  store = await startTestStore();
});

afterAll(async () => {
  await store?.close();
});

describe('the embedded DynamoDB', () => {
  it("answers the service's own client", async () => {
    const { TableNames } = await store.client.send(new ListTablesCommand({}));
    expect(TableNames).toContain(TEST_TABLE);
  });

  it('refuses a page of another origin, its preflight included', async () => {
    const origin = { Origin: 'https://evil.example' };
    const preflight = await fetch(store.endpoint, {
      method: 'OPTIONS',
      headers: {
        ...origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-amz-target',
      },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const read = await fetch(store.endpoint, {
      method: 'POST',
      headers: { ...origin, ...LIST_TABLES },
      body: '{}',
    });
    expect(read.status).toBe(403);
    expect(await read.text()).not.toContain(TEST_TABLE);
  });

  it('refuses a page whose name was rebound to 127.0.0.1', async () => {
    expect(await postFromReboundName(port(), '/', 'rebound.example', {})).toBe(403);
  });
});
