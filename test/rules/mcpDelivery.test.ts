import { describe, expect, it, vi } from 'vitest';
import type { CancelledCalls } from '../../shared/mcp/cancelledCalls';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { mcpPost, toolCall } from '../helpers/mcpRequest';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';

/** What POST /mcp charges when its answer never reaches the client: the same as the REST route (docs/api.md 5.4). */

async function fundedRoute(download?: () => Promise<Buffer>) {
  const service = memoryScreenshotService({ now: () => Date.now() });
  const { key } = await service.addKey('acct', Date.now());
  await service.credits.set('acct', 10);
  return { service, key, route: mcpRoute({ ...service, download }) };
}

const markdown = (url: string, cache = false) =>
  toolCall({ name: 'get_page_markdown', arguments: { url, ...(cache ? { cache } : {}) } });

describe('an MCP answer the client never received', () => {
  it('gives back the credits of the call it charged, and keeps the charge of an image kept in the cache', async () => {
    const { service, key, route } = await fundedRoute();
    const answer = await route(mcpPost(key, markdown('https://a.test/one')));
    expect(answer.status).toBe(200);
    expect(String(answer.body)).not.toContain('isError');
    expect(await service.credits.balance('acct')).toBe(9);
    await answer.undelivered?.();
    expect(await service.credits.balance('acct')).toBe(10);

    const kept = await route(mcpPost(key, markdown('https://a.test/kept', true)));
    expect(String(kept.body)).not.toContain('isError');
    await kept.undelivered?.();
    expect(await service.credits.balance('acct')).toBe(9);
    // The usage says the same: the first was no capture (red team, round 22: both were counted as captures).
    await service.usage.flush();
    expect(service.usageStore.records.map(({ status, credits }) => ({ status, credits }))).toEqual([
      { status: 499, credits: 0 },
      { status: 200, credits: 1 },
    ]);
  });

  it('gives back the credits of a call whose stored image could not be read for its answer', async () => {
    const { service, key, route } = await fundedRoute(async () => {
      throw new Error('The stored file could not be read: HTTP 503');
    });
    const answer = await route(
      mcpPost(key, toolCall({ name: 'take_screenshot', arguments: { url: 'https://a.test/' } })),
    );
    expect(String(answer.body)).toContain('could not be read');
    expect(await service.credits.balance('acct')).toBe(10);
    await answer.undelivered?.();
    expect(await service.credits.balance('acct')).toBe(10);
  });
});

describe('a JSON-RPC batch', () => {
  // Its calls would share one answer: a client could read the first results (links to a PDF and an image) and hang
  // up before the end, and every call would be given back. A repeated id would run a call whose result is never sent.
  it('is refused before any of its calls runs, and charges nothing, whatever the whitespace before it', async () => {
    const { service, key, route } = await fundedRoute();
    for (const batch of [
      [
        markdown('https://a.test/one'),
        toolCall({ name: 'get_page_pdf', arguments: { url: 'https://a.test/' } }, 2),
      ],
      [markdown('https://a.test/one'), markdown('https://a.test/two')],
      [markdown('https://a.test/one')],
    ]) {
      for (const space of ['', ' \n\t\r']) {
        const request = mcpPost(key, batch);
        const answer = await route({ ...request, body: `${space}${request.body}` });
        expect(answer.status).toBe(400);
        expect(JSON.parse(String(answer.body))).toEqual({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: -32600,
            message: 'JSON-RPC batches are not supported: send one message per request',
          },
        });
      }
    }
    expect(service.renderer.captures).toHaveLength(0);
    expect(await service.credits.balance('acct')).toBe(10);
  });

  it('is refused only after the key: a missing key is still 401', async () => {
    const { route } = await fundedRoute();
    await expect(route(mcpPost('sk_live_unknown', [markdown('https://a.test/')]))).rejects.toMatchObject({
      status: 401,
    });
  });
});

describe('JSON that is no JSON-RPC message', () => {
  // Red team (round 30): the SDK answered these -32700, a parse error, for JSON it had parsed.
  it('is an invalid request (-32600), and runs nothing', async () => {
    const { service, key, route } = await fundedRoute();
    const call = markdown('https://a.test/');
    for (const value of [
      null,
      5,
      'x',
      { jsonrpc: '2.0', id: 1 },
      { ...call, jsonrpc: '1.0' },
      { ...call, id: { a: 1 } },
    ]) {
      const answer = await route(mcpPost(key, value));
      expect(answer.status).toBe(400);
      expect(JSON.parse(String(answer.body))).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 message' },
      });
    }
    expect(service.renderer.captures).toHaveLength(0);
    expect((await route(mcpPost(key, call))).status).toBe(200);
  });

  it('leaves a tools/call whose params are no object its own -32602, with its id', async () => {
    const { key, route } = await fundedRoute();
    for (const params of ['str', null, [1], 5]) {
      const answer = await route(mcpPost(key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params }));
      expect(JSON.parse(String(answer.body))).toMatchObject({
        id: 3,
        error: { code: -32602, message: expect.stringMatching(/tool name as a string/) },
      });
    }
  });
});

describe('an MCP call the agent cancelled in a request of its own', () => {
  const cancel = (requestId: number) => ({
    jsonrpc: '2.0',
    method: 'notifications/cancelled',
    params: { requestId, reason: 'the agent moved on' },
  });

  it('is given back when its cancellation came while it ran, and only then', async () => {
    const { service, key, route } = await fundedRoute();
    const call = (id: number, url = 'https://a.test/slow') =>
      route(mcpPost(key, toolCall({ name: 'get_page_markdown', arguments: { url } }, id)));
    const running = call(7);
    await vi.waitFor(() => expect(service.renderer.captures).toHaveLength(1));
    expect((await route(mcpPost(key, cancel(7)))).status).toBe(202);
    service.renderer.finishSlow();
    expect(String((await running).body)).toContain('The call was cancelled');
    expect(await service.credits.balance('acct')).toBe(10);

    // A later call with the same id (clients number their calls from the same start), and another id.
    for (const id of [7, 8]) {
      const answer = await call(id, 'https://a.test/');
      expect(String(answer.body), String(id)).not.toContain('isError');
    }
    expect(await service.credits.balance('acct')).toBe(8);
  });

  it("is given back when the instance that kept its cancellation has a clock far behind the call's", async () => {
    const { service, key } = await fundedRoute();
    // Deployed, the cancellation and the call are read on different instances.
    const marks: CancelledCalls = service.cancelledCalls;
    const behind = {
      mark: (accountId: string, requestId: string, now: number) =>
        marks.mark(accountId, requestId, now - 3_600_000),
      latest: (accountId: string, requestId: string) => marks.latest(accountId, requestId),
    };
    const route = mcpRoute({ ...service, cancelledCalls: behind });
    const running = route(
      mcpPost(key, toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/slow' } }, 6)),
    );
    await vi.waitFor(() => expect(service.renderer.captures).toHaveLength(1));
    await route(mcpPost(key, cancel(6)));
    service.renderer.finishSlow();
    expect(String((await running).body)).toContain('The call was cancelled');
    expect(await service.credits.balance('acct')).toBe(10);
  });

  it('is answered after all when its capture was kept in the cache, which is charged whatever happens', async () => {
    const { service, key, route } = await fundedRoute();
    const running = route(
      mcpPost(
        key,
        toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/slow', cache: true } }, 5),
      ),
    );
    await vi.waitFor(() => expect(service.renderer.captures).toHaveLength(1));
    await route(mcpPost(key, cancel(5)));
    service.renderer.finishSlow();
    expect(String((await running).body)).not.toContain('isError');
    expect(await service.credits.balance('acct')).toBe(9);
  });

  it("is not cancelled ahead of time, nor by another account's cancellation", async () => {
    const { service, key, route } = await fundedRoute();
    await route(mcpPost(key, cancel(3)));
    const ahead = await route(
      mcpPost(key, toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/' } }, 3)),
    );
    expect(String(ahead.body)).not.toContain('isError');
    expect(await service.credits.balance('acct')).toBe(9);

    const { key: otherKey } = await service.addKey('acct-2', Date.now());
    await service.credits.set('acct-2', 10);
    const running = route(
      mcpPost(
        otherKey,
        toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/slow' } }, 4),
      ),
    );
    await vi.waitFor(() => expect(service.renderer.captures).toHaveLength(2));
    await route(mcpPost(key, cancel(4)));
    service.renderer.finishSlow();
    expect(String((await running).body)).not.toContain('isError');
    expect(await service.credits.balance('acct-2')).toBe(9);
  });

  it('is answered, and charged, when its mark cannot be read (the table out of reach)', async () => {
    const { service, key } = await fundedRoute();
    const unreadable = {
      mark: async () => undefined,
      latest: async () => {
        throw new Error('table out of reach');
      },
    };
    const route = mcpRoute({ ...service, cancelledCalls: unreadable });
    const answer = await route(
      mcpPost(key, toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/' } }, 9)),
    );
    expect(String(answer.body)).not.toContain('isError');
    expect(await service.credits.balance('acct')).toBe(9);
  });
});

describe('a refused call', () => {
  /** Red team (round 27): an agent has no headers, and the text said only "Rate limit exceeded" or "Insufficient credits". */
  it('tells the agent what it costs against the balance, and when to try again', async () => {
    const service = memoryScreenshotService({ now: () => Date.now(), rateLimit: 1 });
    const { key } = await service.addKey('acct', Date.now());
    const route = mcpRoute(service);
    const textOf = async (name: string) => {
      const answer = JSON.parse(
        String((await route(mcpPost(key, toolCall({ name, arguments: { url: 'https://a.test/' } })))).body),
      );
      expect(answer.result.isError).toBe(true);
      return answer.result.content[0].text as string;
    };
    await service.credits.set('acct', 1);
    expect(await textOf('get_page_pdf')).toBe(
      'Insufficient credits (this call costs 2 credits, the balance is 1)',
    );
    expect(await textOf('take_screenshot')).toMatch(/^Rate limit exceeded \(try again in \d+ s\)$/);
    // One credit is one credit (red team, round 28).
    const broke = memoryScreenshotService({ now: () => Date.now() });
    const other = await broke.addKey('broke', Date.now());
    const answer = JSON.parse(
      String(
        (
          await mcpRoute(broke)(
            mcpPost(other.key, toolCall({ name: 'take_screenshot', arguments: { url: 'https://a.test/' } })),
          )
        ).body,
      ),
    );
    expect(answer.result.content[0].text).toBe(
      'Insufficient credits (this call costs 1 credit, the balance is 0)',
    );
  });
});
