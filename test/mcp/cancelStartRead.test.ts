import { describe, expect, it, vi } from 'vitest';
import type { CancellationMark, CancelledCalls } from '../../shared/mcp/cancelledCalls';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { mcpPost, toolCall } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/**
 * Red team (round 12): a call read "the mark at its start" beside its capture, and whatever that read returned counted
 * as what was there before the call. A cancellation that came while the call ran, admitted and charged, but before
 * that read was answered (a throttled GetItem) was taken for one sent ahead of the call: answered and charged,
 * against docs/api.md 17. Fixed: shared/mcp/mcpRoute.ts reads the mark before the capture is asked, so a call is
 * admitted, charged and captured only once it knows what came before it.
 */

const cancel = (requestId: number) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId, reason: 'the agent moved on' },
});

describe('an MCP call whose first read of its cancellation mark is slow', () => {
  it('asks for no capture before that read is answered, and is cancelled by what comes after it', async () => {
    const service = memoryScreenshotService({ now: () => Date.now() });
    const { key } = await service.addKey('acct', Date.now());
    await service.credits.set('acct', 10);
    let releaseFirstRead: () => void = () => undefined;
    const firstReadHeld = new Promise<void>((resolve) => {
      releaseFirstRead = resolve;
    });
    let reads = 0;
    const cancelledCalls: CancelledCalls = {
      mark: (accountId, requestId) => service.cancelledCalls.mark(accountId, requestId),
      async latest(accountId, requestId): Promise<CancellationMark> {
        if (++reads === 1) await firstReadHeld;
        return service.cancelledCalls.latest(accountId, requestId);
      },
    };
    const route = mcpRoute({ ...service, cancelledCalls });
    const running = route(
      mcpPost(key, toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/slow' } }, 9)),
    );
    await vi.waitFor(() => expect(reads).toBe(1));
    // Every port of the service answers at once: had the capture been asked beside the read, it would be by now.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(service.renderer.captures).toHaveLength(0);
    expect(await service.credits.balance('acct')).toBe(10);

    releaseFirstRead();
    await vi.waitFor(() => expect(service.renderer.captures).toHaveLength(1));
    expect(await service.credits.balance('acct')).toBe(9);
    expect((await route(mcpPost(key, cancel(9)))).status).toBe(202);
    service.renderer.finishSlow();
    expect(String((await running).body)).toContain('The call was cancelled');
    expect(await service.credits.balance('acct')).toBe(10);
  });
});
