import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { ARTICLE_HEADING } from '../helpers/articlePages';
import { articleService } from '../helpers/articleService';

/**
 * Review (session 31): `npm run mcp` kept each call's params by its JSON-RPC id until the call's handler took them.
 * A call its SDK refused before the handler (one carrying `task`, which the bridge declares no support for) left them
 * there, and the next call with that id (JSON-RPC lets a client reuse an id once answered) ran, and was charged for,
 * the refused call's tool and arguments. Raw stdio: the SDK's client numbers its own ids.
 */

const local = articleService();

/** `npm run mcp` as a raw JSON-RPC line stream: `ask` sends a request and waits for the answer with its id. */
function rawBridge(apiKey: string) {
  const bridge = spawn('npm', ['run', '--silent', 'mcp'], {
    env: { ...process.env, SCREENSHOT_API_URL: local.service.url, SCREENSHOT_API_KEY: apiKey },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const answers: Record<string, unknown>[] = [];
  const waiting: (() => void)[] = [];
  createInterface({ input: bridge.stdout }).on('line', (line) => {
    answers.push(JSON.parse(line) as Record<string, unknown>);
    for (const wake of waiting.splice(0)) wake();
  });
  const send = (message: object) => bridge.stdin.write(`${JSON.stringify(message)}\n`);
  return {
    send,
    async ask(message: { id: number }): Promise<Record<string, unknown>> {
      const seen = answers.length;
      send({ jsonrpc: '2.0', ...message });
      for (;;) {
        const answer = answers.slice(seen).find((one) => one.id === message.id);
        if (answer) return answer;
        await new Promise<void>((wake) => waiting.push(wake));
      }
    },
    close: () => bridge.kill(),
  };
}

describe('npm run mcp, a call with the id of an earlier call', () => {
  it('runs its own tool and arguments', { timeout: 60_000 }, async () => {
    const { apiKey } = await local.service.newAccount();
    const bridge = rawBridge(apiKey);
    try {
      await bridge.ask({
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      } as never);
      bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const url = `${local.site.origin}/article`;
      await bridge.ask({
        id: 7,
        method: 'tools/call',
        params: { name: 'take_screenshot', arguments: { url, width: 320, height: 240 }, task: { ttl: 1000 } },
      } as never);
      const second = await bridge.ask({
        id: 7,
        method: 'tools/call',
        params: { name: 'get_page_markdown', arguments: { url } },
      } as never);
      const content = (second.result as { content?: { type: string; text?: string }[] } | undefined)?.content;
      expect(content?.[0]?.type).toBe('text');
      expect(content?.[0]?.text).toMatch(new RegExp(`^# ${ARTICLE_HEADING}`, 'm'));
    } finally {
      bridge.close();
    }
  });
});
