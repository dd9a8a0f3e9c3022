import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { refuseCommands } from './refusedCommands';

/**
 * Makes `client` answer as a throttled table (after the SDK's own retries) every command `refuses` picks, by its
 * name and its input as JSON; every other command goes to the table as ever.
 */
export function throttleCommands(
  client: DynamoDBClient,
  refuses: (commandName: string, input: string) => boolean,
): void {
  refuseCommands(client, 'throttleCommands', (commandName, input) =>
    refuses(commandName, JSON.stringify(input))
      ? { name: 'ThrottlingException', message: 'Throughput exceeds the current capacity of your table' }
      : undefined,
  );
}
