import { describe, expect, it } from 'vitest';
import { RateLimitedError, ValidationError } from '../../shared/errors';
import { memoryScreenshotService, signedLinkInput, signedQuery } from '../helpers/memoryScreenshot';

/**
 * Red team (round 23): docs/api.md 15.3 puts a link's validation before its own budget, and counts only links
 * answered by a capture. An invalid link was counted all the same, and once the budget was spent it was refused 429
 * instead of 400. Now it is refused 400 and spends nothing.
 */
describe('a signed link whose query is invalid', () => {
  it('is refused 400 without spending the key’s link budget, spent or not', async () => {
    const now = Date.now();
    const service = memoryScreenshotService({ now: () => now, rateLimit: 2 });
    const key = await service.addKey('acct-links', now);
    await service.credits.set('acct-links', 10);
    const visit = (options: Record<string, string>) =>
      service.capture(signedLinkInput(signedQuery(key, options), now + 60_000));

    for (const width of ['1', '2', '3']) {
      const refused = await visit({ url: 'https://a.test/', width });
      expect(!refused.ok && refused.error).toBeInstanceOf(ValidationError);
    }
    // The budget of 2 is whole: two captures, then 429.
    expect((await visit({ url: 'https://a.test/one' })).ok).toBe(true);
    expect((await visit({ url: 'https://a.test/two' })).ok).toBe(true);
    const over = await visit({ url: 'https://a.test/three' });
    expect(!over.ok && over.error).toBeInstanceOf(RateLimitedError);
    // And with the budget spent, an invalid link is still told why.
    const invalid = await visit({ url: 'https://a.test/', width: '4' });
    expect(!invalid.ok && invalid.error).toBeInstanceOf(ValidationError);
  });
});
