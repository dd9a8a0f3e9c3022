import { describe, expect, it } from 'vitest';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { mcpPost, toolCall } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Red team (round 5): api.md (MCP, "Cancelling") says a cancelled call answers "The call was cancelled" "instead,
 * not charged". A call with `cache: true` whose capture was kept in the cache is charged all the same (its
 * `undelivered` gives nothing back, as for a hang-up), yet answered as cancelled: the agent pays for an answer it is
 * told it will not get. Either the answer (the result, since it is paid for) or the contract is wrong.
 */

describe('a cancelled call whose capture was kept in the cache', () => {
  it('is not charged for an answer that says it was cancelled', async () => {
    const service = memoryScreenshotService({ now: () => Date.now() });
    const { key } = await service.addKey('acct', Date.now());
    await service.credits.set('acct', 10);
    const route = mcpRoute(service);
    await route(
      mcpPost(key, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } }),
    );
    const answer = await route(
      mcpPost(
        key,
        toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/', cache: true } }, 3),
      ),
    );
    const cancelled = String(answer.body).includes('The call was cancelled');
    // Today: answered cancelled, and 1 credit spent.
    expect({ cancelled, spent: 10 - (await service.credits.balance('acct')) }).not.toEqual({
      cancelled: true,
      spent: 1,
    });
  });
});
