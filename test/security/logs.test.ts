import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { hostsOnly, logger } from '../../shared/logger';
import { logged } from '../helpers/logs';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * The logs name hosts, never whole capture URLs: credentials in `user:password@`, paths and query tokens stay out,
 * whoever logs them (our code, an error's message or stack). Read from the real Powertools logger's output.
 */

let site: PageServer;
let harness: ScreenshotHarness;
let apiKey: string;
const SECRETS = ['alice', 'hunter2', 'tok-4711', 'private-path'];

beforeAll(async () => {
  site = await startPageServer({ '/private-path': solidPage('#0f0') });
  // The capture's log lines are written by the renderer process: it logs at INFO too.
  harness = await startScreenshotHarness({
    ALLOW_PRIVATE_HOSTS: site.hostPort,
    POWERTOOLS_LOG_LEVEL: 'INFO',
  });
  ({ apiKey } = await harness.newAccount());
});
afterAll(async () => {
  await harness?.close();
  await site?.close();
});
afterEach(() => vi.restoreAllMocks());

describe('the logs of a capture whose js throws', () => {
  /**
   * Red team (round 23): the error's text was logged, and it is the page's: a script quoting `location.pathname +
   * location.search` or `document.cookie`, or a `history.pushState` error quoting an `html` document's `data:` URL,
   * put the path, the query tokens, the customer's cookies or the whole document in the log. Only its kind is kept.
   */
  it('name the host and the kind of error, but hold no credential, path or token of the URL', async () => {
    // (A capture URL with user-info is refused: its credentials are tested in the lines below.)
    const url = `http://${site.hostPort}/private-path?token=tok-4711`;
    let status = 0;
    const output = await logged(async () => {
      const answer = await harness.shoot(apiKey, {
        url,
        width: 320,
        height: 320,
        js: `throw new TypeError('boom while reading ' + location.pathname + location.search + ' ${url}')`,
      });
      status = answer.status;
    }, 'Injected script failed');
    expect(status).toBe(200);
    const line = output.split('\n').find((text) => text.includes('Injected script failed'));
    expect(line).toBeDefined();
    const entry = JSON.parse(line ?? '{}');
    expect(entry.host).toBe(site.hostPort);
    expect(entry.scriptError).toBe('TypeError');
    for (const secret of SECRETS) expect(output).not.toContain(secret);
  });

  it('holds nothing of an html document, whose address is its whole text', async () => {
    const html = '<h1>invoice-4711 for alice</h1>';
    const output = await logged(async () => {
      const answer = await harness.shoot(apiKey, {
        html,
        width: 320,
        height: 320,
        js: "history.pushState({}, '', '/elsewhere')",
      });
      expect(answer.status).toBe(200);
    }, 'Injected script failed');
    expect(output).toContain('Injected script failed');
    expect(output).not.toContain(Buffer.from(html).toString('base64').slice(0, 24));
    expect(output).not.toContain('invoice-4711');
  });
});

describe('every log line', () => {
  it('cuts URLs in messages, fields and error stacks down to their host', async () => {
    const url = `https://alice:hunter2@shop.example:8443/private-path?token=tok-4711#frag`;
    const output = await logged(async () => {
      logger.error(`Navigation to ${url} failed`, {
        detail: { nested: [url] },
        error: new Error(`at ${url}`),
      });
    });
    expect(output).toContain('https://shop.example:8443');
    for (const secret of SECRETS) expect(output).not.toContain(secret);
  });

  it('leaves text without URLs as it is, and names unparsable ones only as [url]', () => {
    expect(hostsOnly('Capture slot not released: timeout')).toBe('Capture slot not released: timeout');
    expect(hostsOnly('see http://[::1 and http://a.example/x?y=1')).toBe('see [url] and http://a.example');
  });

  it('cuts a URL glued to a word before it, and every data: URL (red team, round 23)', () => {
    expect(hostsOnly('id_http://a.example/private-path?token=tok-4711')).toBe('id_http://a.example');
    expect(hostsOnly("at 'data:text/html;base64,PGgxPmFsaWNlPC9oMT4=' and")).toBe("at 'data:[…]' and");
  });
});
