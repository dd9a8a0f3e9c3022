import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Makes the table refuse, as IAM would with AccessDeniedException, every command `refuses` says a deployed grant
 * does not allow. It sees each command's action (`dynamodb:GetItem`, …) and input, every command, refused or not.
 */
export function enforceTableGrant(
  client: DynamoDBClient,
  refuses: (action: string, input: unknown) => boolean,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const action = `dynamodb:${String(context.commandName).replace(/Command$/, '')}`;
      if (refuses(action, args.input)) {
        throw Object.assign(new Error(`User is not authorized to perform: ${action}`), {
          name: 'AccessDeniedException',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'enforceRouteGrant' },
  );
}
