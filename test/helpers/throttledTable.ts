import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Makes `client` answer as a throttled table (after the SDK's own retries) every command `refuses` picks, by its
 * name and its input as JSON; every other command goes to the table as ever.
 */
export function throttleCommands(
  client: DynamoDBClient,
  refuses: (commandName: string, input: string) => boolean,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (refuses(String(context.commandName), JSON.stringify(args.input))) {
        throw Object.assign(new Error('Throughput exceeds the current capacity of your table'), {
          name: 'ThrottlingException',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'throttleCommands' },
  );
}
