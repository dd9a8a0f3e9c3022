import { BatchWriteItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { localDynamoClient } from '../../local/embeddedDynamo';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * CI, session 26: the local service closed its store while a job's reads were under way, and dynalite threw
 * "Database is closed" out of its own callback, an uncaught exception. The embedded store dropped every connection at
 * once, the request still having its signature checked among them: dynalite closed its database, then was handed
 * the request. Now a closing store lets the requests under way be answered first, and one whose client is gone never
 * reaches dynalite. This test closes stores under large writes (their signature is checked on 10 MB) at many moments;
 * it did not bring the failure about here, where CI had it once under the whole suite's load: it guards the close.
 */
describe('the embedded DynamoDB closed under requests', () => {
  it('answers or refuses each of them, and nothing is thrown out of dynalite', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    const items = Array.from({ length: 25 }, (_, i) => ({
      PutRequest: { Item: { pk: { S: `BIG#${i}` }, sk: { S: 'X' }, blob: { S: 'x'.repeat(390_000) } } },
    }));
    try {
      for (let round = 0; round < 10; round++) {
        const store = await startTestStore();
        // A client of its own, as the service's worker has: the store's own client is destroyed by close().
        const client = localDynamoClient(store.endpoint, store.credentials);
        const writes = Array.from({ length: 4 }, () =>
          client.send(new BatchWriteItemCommand({ RequestItems: { [TEST_TABLE]: items } })).then(
            () => 'answered',
            () => 'refused',
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 10 + round * 3));
        await store.close();
        const outcomes = await Promise.all(writes);
        client.destroy();
        expect(outcomes.every((outcome) => outcome === 'answered' || outcome === 'refused')).toBe(true);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  }, 120_000);
});
