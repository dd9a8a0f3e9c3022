import { FullBatchFailureError } from '@aws-lambda-powertools/batch';
import { describe, expect, it } from 'vitest';
import { CaptureFailedError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { logged } from '../helpers/logs';

/**
 * Every string the logger writes has its URLs cut to scheme and host (docs/security.md). A URL in a text ends at white
 * space, `"`, `<` or `>`, which the API's URL parser accepts in a path or query. Red team: such a `url` was carried as
 * sent (spec.url, CaptureFailedError.url), so a log line quoting it kept what follows those characters, a query's
 * token, in clear; one real path: the local queue's 'Local worker failed' line. The request's URL is now escaped as the
 * parser writes it whenever it holds one of them.
 */

const RAW = [
  ['a space', 'https://shop.example/private path?token=tok-4711'],
  ['a double quote', 'https://shop.example/a"b?token=tok-4711'],
  ['an angle bracket', 'https://shop.example/<a>?token=tok-4711'],
  ['a space in the query', 'https://shop.example/search?q=a b&token=tok-4711'],
  ['an ideographic space', 'https://shop.example/a\u3000b?token=tok-4711'],
  ['a NUL', 'https://shop.example/a\u0000b?token=tok-4711'],
  ['an escape', 'https://shop.example/a\u001b[31mb?token=tok-4711'],
  ['a C1 control', 'https://shop.example/a\u0085b?token=tok-4711'],
] as const;

const accepted = (url: string) => screenshotRequest.parse({ url }).url ?? '';

describe('a capture URL with characters that end a URL in a text', () => {
  for (const [name, url] of RAW) {
    it(`(${name}) is accepted, and quoted in a log line keeps its query token out`, async () => {
      const parsed = accepted(url);
      // The same address Chromium loads.
      expect(parsed).toBe(new URL(url).href);
      const output = await logged(async () => {
        logger.error(`Navigation to ${parsed} failed`, { error: new Error(`boom while reading ${parsed}`) });
      });
      expect(output).toContain('https://shop.example');
      expect(output).not.toContain('tok-4711');
    });
  }

  it('in a job failure the local queue logs keeps its query token out', async () => {
    const output = await logged(async () => {
      // local/localQueue.ts logs exactly this when the worker's batch of one failed (runJob rethrows for a retry).
      const failed = new FullBatchFailureError([
        new CaptureFailedError(accepted(RAW[0][1]), 'The renderer did not answer in time'),
      ]);
      logger.error('Local worker failed', { error: failed as Error });
    });
    expect(output).toContain('Local worker failed');
    expect(output).not.toContain('tok-4711');
  });

  it('is kept, as a webhookUrl too, as the address it reaches (red team, round 30: a job kept a NUL as sent)', () => {
    const body = screenshotRequest.parse({
      url: 'https://shop.example/a\u0000b',
      async: true,
      webhookUrl: 'https://hooks.example/ok\u0000x\u001by',
    });
    expect(body.url).toBe('https://shop.example/a%00b');
    expect(body.webhookUrl).toBe('https://hooks.example/ok%00x%1By');
  });

  it('is refused when escaped it passes 2048 characters, which a queued job would fail on when it runs', () => {
    // Review (session 31): accepted at 415 characters, kept at 2,415, refused by the worker's own parse.
    for (const url of [`https://a.test/${'\u0085'.repeat(400)}`, `https://a.test/${'\u0000'.repeat(700)}x`]) {
      const parsed = screenshotRequest.safeParse({ url });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]).toMatchObject({ path: ['url'], code: 'too_big' });
    }
    const kept = accepted(`https://a.test/${'\u0000'.repeat(600)}x`);
    expect(screenshotRequest.parse({ url: kept }).url).toBe(kept);
  });

  it('stays as sent when it holds none of them (its cache key unchanged)', () => {
    for (const url of ['https://Example.com', 'https://example.com/a?b=c%20d#e', 'http://example.com:8080/x'])
      expect(accepted(url)).toBe(url);
  });
});
