import { setTimeout as sleep } from 'node:timers/promises';

type Middleware = (
  next: (args: { input: object }) => Promise<unknown>,
  context: { commandName?: string },
) => (args: { input: object }) => Promise<unknown>;

/** An AWS SDK v3 client, of any service: its middleware stack is all these helpers use. */
interface SdkClient {
  middlewareStack: object;
}

/** Adds `middleware` at `step` of the client's stack (typed loosely: each service's stack has overloads per step). */
function addMiddleware(
  client: SdkClient,
  middleware: Middleware,
  step: 'initialize' | 'deserialize',
  name: string,
) {
  const stack = client.middlewareStack as {
    add(middleware: Middleware, options: { step: 'initialize' | 'deserialize'; name: string }): void;
  };
  stack.add(middleware, { step, name });
}

/**
 * Makes `client` send every command, then lose the answer of those `loses` picks (by name and input as JSON), as a
 * connection that timed out after the service applied the command. `loses` may wait first (to hold the answer back).
 * `below: 'retries'` loses it under the SDK's retries, which then send the command again.
 */
export function loseAnswers(
  client: SdkClient,
  loses: (commandName: string, input: string) => boolean | Promise<boolean>,
  below: 'caller' | 'retries' = 'caller',
): void {
  addMiddleware(
    client,
    (next, context) => async (args) => {
      const result = await next(args);
      if (await loses(String(context.commandName), JSON.stringify(args.input)))
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} });
      return result;
    },
    below === 'retries' ? 'deserialize' : 'initialize',
    `loseAnswers-${below}`,
  );
}

/** Makes `client` wait `delayMs(name, input as JSON)` milliseconds before sending each command, as a slow service. */
export function delayCommands(
  client: SdkClient,
  delayMs: (commandName: string, input: string) => number,
): void {
  addMiddleware(
    client,
    (next, context) => async (args) => {
      const wait = delayMs(String(context.commandName), JSON.stringify(args.input));
      if (wait > 0) await sleep(wait);
      return next(args);
    },
    'initialize',
    'delayCommands',
  );
}

/**
 * While switched on, the intake's end of a job it could not accept (the write marking it `refundedByCaller`) waits
 * `ms` on `client`, as a slow table: a worker takes the job meanwhile. `once`: only the next such end waits.
 */
export function slowIntakeEnds(client: SdkClient, ms: number, once: boolean): { set(on: boolean): void } {
  let on = false;
  delayCommands(client, (command, input) => {
    if (!on || command !== 'UpdateItemCommand' || !input.includes('refundedByCaller')) return 0;
    if (once) on = false;
    return ms;
  });
  return {
    set(value) {
      on = value;
    },
  };
}
