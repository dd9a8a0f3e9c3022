import { describe, expect, it } from 'vitest';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { toolCalls } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/** What POST /mcp charges when its answer never reaches the client: the same as the REST route (docs/api.md 5.4). */

describe('an MCP answer the client never received', () => {
  it('gives back the credits of every call it charged, and keeps the charge of an image kept in the cache', async () => {
    const service = memoryScreenshotService({ now: () => Date.now() });
    const { key } = await service.addKey('acct', Date.now());
    await service.credits.set('acct', 10);
    const route = mcpRoute({ capture: service.capture, keys: service.keys });
    const answer = await route(
      toolCalls(key, [
        { name: 'get_page_markdown', arguments: { url: 'https://a.test/one' } },
        { name: 'get_page_markdown', arguments: { url: 'https://a.test/two' } },
        { name: 'get_page_markdown', arguments: { url: 'https://a.test/kept', cache: true } },
      ]),
    );
    expect(answer.status).toBe(200);
    expect(String(answer.body)).not.toContain('isError');
    expect(await service.credits.balance('acct')).toBe(7);
    await answer.undelivered?.();
    expect(await service.credits.balance('acct')).toBe(9);
  });

  it('gives back the credits of a call whose stored image could not be read for its answer', async () => {
    const service = memoryScreenshotService({ now: () => Date.now() });
    const { key } = await service.addKey('acct', Date.now());
    await service.credits.set('acct', 10);
    const route = mcpRoute({
      capture: service.capture,
      keys: service.keys,
      download: async () => {
        throw new Error('The stored file could not be read: HTTP 503');
      },
    });
    const answer = await route(
      toolCalls(key, [{ name: 'take_screenshot', arguments: { url: 'https://a.test/' } }]),
    );
    expect(String(answer.body)).toContain('could not be read');
    expect(await service.credits.balance('acct')).toBe(10);
    await answer.undelivered?.();
    expect(await service.credits.balance('acct')).toBe(10);
  });
});
