import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * CI, session 26, twice: the local service closed its store while a job's reads and writes were under way, and
 * dynalite threw "Database is closed" out of its own callback, an uncaught exception. close() destroyed the store's
 * own client first, which ended its requests' connections while dynalite still worked on them (writes to one item
 * queue behind one another), then dynalite closed its database under that work. Now a closing store waits for the
 * work under way to be answered before it lets go of anything.
 */
describe('the embedded DynamoDB closed under its own client’s writes', () => {
  it('answers or refuses each of them, and nothing is thrown out of dynalite', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      for (let round = 0; round < 8; round++) {
        const store = await startTestStore();
        // The store's own client, which the service's worker shares.
        const writes = Array.from({ length: 200 }, () =>
          store.client
            .send(
              new UpdateItemCommand({
                TableName: TEST_TABLE,
                Key: { pk: { S: 'ACCOUNT#same' }, sk: { S: 'ACCOUNT' } },
                UpdateExpression: 'ADD n :one',
                ExpressionAttributeValues: { ':one': { N: '1' } },
              }),
            )
            .then(
              () => 'answered',
              () => 'refused',
            ),
        );
        await new Promise((resolve) => setTimeout(resolve, 20 + round * 10));
        await store.close();
        const outcomes = await Promise.all(writes);
        expect(outcomes.every((outcome) => outcome === 'answered' || outcome === 'refused')).toBe(true);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  }, 120_000);
});
