import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** A DynamoDB error as the SDK throws it once the service refused a command. */
export interface Refusal {
  name: string;
  message: string;
}

/**
 * Makes `client` throw the refusal `refuse` gives a command (by its name and input), before the command reaches the
 * table; every command it gives none goes to the table as ever. `name` names the middleware.
 */
export function refuseCommands(
  client: DynamoDBClient,
  name: string,
  refuse: (commandName: string, input: unknown) => Refusal | undefined,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const refusal = refuse(String(context.commandName), args.input);
      if (refusal) {
        throw Object.assign(new Error(refusal.message), {
          name: refusal.name,
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
}
