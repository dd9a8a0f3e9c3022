import { setTimeout as sleep } from 'node:timers/promises';

/** An AWS SDK v3 client, of any service: its middleware stack is all these helpers use. */
interface SdkClient {
  middlewareStack: {
    add(
      middleware: (
        next: (args: { input: object }) => Promise<unknown>,
        context: { commandName?: string },
      ) => (args: { input: object }) => Promise<unknown>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

/**
 * Makes `client` send every command, then lose the answer of those `loses` picks (by name and input as JSON), as a
 * connection that timed out after the service applied the command. `loses` may wait first (to hold the answer back).
 */
export function loseAnswers(
  client: SdkClient,
  loses: (commandName: string, input: string) => boolean | Promise<boolean>,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (await loses(String(context.commandName), JSON.stringify(args.input)))
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} });
      return result;
    },
    { step: 'initialize', name: 'loseAnswers' },
  );
}

/** Makes `client` wait `delayMs(name, input as JSON)` milliseconds before sending each command, as a slow service. */
export function delayCommands(
  client: SdkClient,
  delayMs: (commandName: string, input: string) => number,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const wait = delayMs(String(context.commandName), JSON.stringify(args.input));
      if (wait > 0) await sleep(wait);
      return next(args);
    },
    { step: 'initialize', name: 'delayCommands' },
  );
}
