import { describe, expect, it } from 'vitest';
import { apiGatewayEvent } from '../../local/apiGatewayEvent';
import { invocationContext } from '../../local/invocationContext';
import { bufferedHandler } from '../../shared/http/adapter/apiGateway';
import { jsonResponse } from '../../shared/http/types';
import { logger } from '../../shared/logger';
import { logged } from '../helpers/logs';

/**
 * Red team (round 21): the adapter appended each request's id to the one logger of the process and reset it when the
 * route returned. The local server runs requests side by side in that process: an error of one was logged under
 * another's id, and the others' `request` lines had none. Fixed: each request logs through a logger of its own
 * (withLogKeys, shared/logger.ts), whatever it awaits in between.
 */

describe("a request's log lines", () => {
  it('carry its own id, also when requests overlap', async () => {
    const handler = bufferedHandler(
      async (request) => {
        // The first waits longest, so that the others start and end while it runs.
        await new Promise((resolve) => setTimeout(resolve, request.path === '/first' ? 60 : 10));
        logger.warn('route line', { path: request.path });
        return jsonResponse(200, {});
      },
      { errors: 'management' },
    );
    const contexts = ['/first', '/second', '/third'].map((path) => ({ path, context: invocationContext() }));
    const output = await logged(() =>
      Promise.all(
        contexts.map(({ path, context }) =>
          handler(apiGatewayEvent({ method: 'GET', path, resource: path, headers: {} }), context),
        ),
      ),
    );
    const lines = output
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { message: string; path?: string; requestId?: string });
    for (const { path, context } of contexts) {
      const own = lines.filter((line) => line.path === path);
      // Its route's line and its `request` line, each under its own id.
      expect(own.map((line) => line.message).sort()).toEqual(['request', 'route line']);
      for (const line of own) expect(line.requestId, `${path}: ${line.message}`).toBe(context.awsRequestId);
    }
  });
});
