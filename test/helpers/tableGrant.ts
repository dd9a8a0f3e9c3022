import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { refuseCommands } from './refusedCommands';

/**
 * Makes the table refuse, as IAM would with AccessDeniedException, every command `refuses` says a deployed grant
 * does not allow. It sees each command's action (`dynamodb:GetItem`, …) and input, every command, refused or not.
 */
export function enforceTableGrant(
  client: DynamoDBClient,
  refuses: (action: string, input: unknown) => boolean,
): void {
  refuseCommands(client, 'enforceRouteGrant', (commandName, input) => {
    const action = `dynamodb:${commandName.replace(/Command$/, '')}`;
    return refuses(action, input)
      ? { name: 'AccessDeniedException', message: `User is not authorized to perform: ${action}` }
      : undefined;
  });
}
