import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { type EmbeddedDynamo, startEmbeddedDynamo } from '../../local/embeddedDynamo';

export const TEST_TABLE = 'screenshot-test';

/** DynamoDB's API over HTTP (dynalite, in memory) with the service's table. */
export function startTestStore(): Promise<EmbeddedDynamo> {
  return startEmbeddedDynamo({ tableName: TEST_TABLE });
}

/** Every item of the table as raw JSON text, to prove what is (not) stored. */
export async function dumpTable(store: EmbeddedDynamo): Promise<string> {
  const { Items } = await store.client.send(new ScanCommand({ TableName: TEST_TABLE, ConsistentRead: true }));
  return JSON.stringify(Items ?? []);
}
